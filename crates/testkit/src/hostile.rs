//! Trees of hostile shapes for the walk: dirs of more than one listing batch (1,025 to 2,500
//! entries) nested inside each other at random depths, flat giants, chains of nested dirs deeper
//! than any fd budget (some ending in a big dir), hard links and symlinks. Random but reproducible:
//! the same seed builds the same tree, so a failing walk names the seed that rebuilds it.
//!
//! Also [`cargo_target`]: the dir counts and fan-outs of a real cargo `target/` dir (what a
//! developer's `/tmp` holds), for the "shape of this machine" tests.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A small, fast, reproducible random source (SplitMix64): tests need the same tree for a seed,
/// not good randomness.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A source seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// `n` characters drawn from `alphabet`.
    pub fn from(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[(self.next_u64() % alphabet.len() as u64) as usize] as char)
            .collect()
    }

    /// `n` mkdtemp-like characters (mixed case and digits), as in `tmpXq3ZkP9a`.
    pub fn alnum(&mut self, n: usize) -> String {
        self.from(
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            n,
        )
    }

    /// `n` lowercase hex digits.
    pub fn hex(&mut self, n: usize) -> String {
        self.from(b"0123456789abcdef", n)
    }

    /// A random UUID in its 8-4-4-4-12 lowercase form.
    pub fn uuid(&mut self) -> String {
        format!(
            "{}-{}-{}-{}-{}",
            self.hex(8),
            self.hex(4),
            self.hex(4),
            self.hex(4),
            self.hex(12)
        )
    }
}

/// What a hostile tree holds besides its random big dirs.
#[derive(Debug, Clone, Copy)]
pub struct Hostile {
    /// Entries of the flat giant dir (0: none).
    pub giant: usize,
    /// Levels of the deepest chain of nested dirs (0: none).
    pub chain: usize,
    /// Top-level dirs holding nested big dirs.
    pub tops: usize,
    /// How deep big dirs nest inside each other at most.
    pub depth: usize,
}

impl Default for Hostile {
    /// Two tops of nested big dirs up to 3 deep, a chain of 1,100 dirs (deeper than the largest
    /// fd budget, 1,024), no giant.
    fn default() -> Hostile {
        Hostile {
            giant: 0,
            chain: 1100,
            tops: 2,
            depth: 3,
        }
    }
}

/// What [`build`] made: counts by hand, to check a walk's counts against.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Made {
    /// Regular files made (a hard link to one counts as a second name, not a file).
    pub files: u64,
    /// Dirs made, below the root.
    pub dirs: u64,
    /// Symlinks made.
    pub symlinks: u64,
    /// Hard links made to files already counted.
    pub hard_links: u64,
}

/// Builds a hostile tree in `root` (which must exist) from `seed`. Files are small (0 to 3 KiB),
/// so the tree's size is in its entries, not its bytes.
///
/// # Panics
/// A dir, file or link cannot be made.
pub fn build(root: &Path, seed: u64, shape: Hostile) -> Made {
    let mut b = Builder {
        rng: Rng::new(seed),
        made: Made::default(),
        files: Vec::new(),
    };
    for t in 0..shape.tops {
        let top = root.join(format!("top{t}"));
        b.big(&top, 1, shape.depth);
    }
    if shape.giant > 0 {
        let giant = root.join("giant");
        b.dir(&giant);
        for i in 0..shape.giant {
            b.file(&giant.join(format!("g{i}")), i % 64 != 0);
        }
    }
    if shape.chain > 0 {
        // The deep chain, then shorter ones inside a big dir and at the bottom of the deep one, so
        // a big dir is met while the chain above it holds the fd budget.
        let end = b.chain(&root.join("chain"), shape.chain);
        b.big(&end.join("bottom"), shape.depth, shape.depth);
        let depth = shape.depth.max(1);
        let inner = root.join("top0").join("sub0");
        if inner.is_dir() {
            let end = b.chain(&inner.join("chain"), shape.chain / 4);
            b.big(&end.join("bottom"), depth, depth);
        }
    }
    b.links(root);
    b.made
}

struct Builder {
    rng: Rng,
    made: Made,
    /// Some files made, for hard links.
    files: Vec<PathBuf>,
}

impl Builder {
    fn dir(&mut self, d: &Path) {
        fs::create_dir_all(d).expect("create dir");
        self.made.dirs += 1;
    }

    fn file(&mut self, f: &Path, empty: bool) {
        let len = if empty {
            0
        } else {
            self.rng.range(0, 3072) as usize
        };
        if len == 0 {
            fs::File::create(f).expect("create file");
        } else {
            crate::tree::write_file(f, len);
        }
        self.made.files += 1;
        if self.files.len() < 64 && self.rng.chance(2) {
            self.files.push(f.to_path_buf());
        }
    }

    /// A dir of 1,025 to 2,500 entries at `level`: mostly files, some small subdirs, and (above
    /// `depth`) 1 or 2 big subdirs.
    fn big(&mut self, d: &Path, level: usize, depth: usize) {
        self.dir(d);
        let n = self.rng.range(1025, 2500) as usize;
        let bigs = if level < depth {
            self.rng.range(1, 2) as usize
        } else {
            0
        };
        for i in 0..n.saturating_sub(bigs) {
            if self.rng.chance(3) {
                let sub = d.join(format!("s{i}"));
                self.dir(&sub);
                for j in 0..self.rng.range(0, 3) {
                    self.file(&sub.join(format!("f{j}")), false);
                }
            } else {
                let empty = self.rng.chance(60);
                self.file(&d.join(format!("f{i}")), empty);
            }
        }
        for j in 0..bigs {
            self.big(&d.join(format!("sub{j}")), level + 1, depth);
        }
    }

    /// A chain of `levels` nested dirs `d/d/d/...` under `start`, a file every 100 levels; its
    /// deepest dir.
    fn chain(&mut self, start: &Path, levels: usize) -> PathBuf {
        let mut p = start.to_path_buf();
        for _ in 1..levels {
            p.push("d");
        }
        fs::create_dir_all(&p).expect("create chain");
        self.made.dirs += levels as u64;
        let mut q = start.to_path_buf();
        for i in 0..levels {
            if i % 100 == 0 {
                self.file(&q.join("f"), false);
            }
            q.push("d");
        }
        p
    }

    /// Hard links to some files (from other dirs), and symlinks: to a dir, to a file, dangling,
    /// and a loop.
    fn links(&mut self, root: &Path) {
        let files = std::mem::take(&mut self.files);
        for (i, f) in files.iter().enumerate() {
            fs::hard_link(f, root.join(format!("hard{i}"))).expect("hard link");
            self.made.hard_links += 1;
        }
        let targets = [
            root.join("top0"),
            root.join("hard0"),
            root.join("nowhere"),
            root.join("loop"),
        ];
        for (i, t) in targets.iter().enumerate() {
            let name = if i == 3 {
                root.join("loop")
            } else {
                root.join(format!("link{i}"))
            };
            symlink(t, name).expect("symlink");
            self.made.symlinks += 1;
        }
    }
}

/// Builds in `dir` the shape of a cargo `target/` dir of a workspace like ours, `scale` times
/// smaller than a real one at 1: `debug/deps` (thousands of files in one dir), `debug/build`
/// (a dir per build script with `out/` trees), `debug/.fingerprint` (a dir per unit, each of a
/// few files), `debug/incremental` (a few dirs of hundreds of files each). What [`Made`] counts.
///
/// # Panics
/// A dir or file cannot be made.
pub fn cargo_target(dir: &Path, seed: u64, scale: usize) -> Made {
    let scale = scale.max(1);
    let mut b = Builder {
        rng: Rng::new(seed),
        made: Made::default(),
        files: Vec::new(),
    };
    let debug = dir.join("debug");
    b.dir(&debug);
    let deps = debug.join("deps");
    b.dir(&deps);
    for i in 0..(6000 / scale) {
        let ext = ["rlib", "rmeta", "d", "o"][i % 4];
        b.file(
            &deps.join(format!("lib{i:04}-{:016x}.{ext}", seed ^ i as u64)),
            false,
        );
    }
    let fingerprint = debug.join(".fingerprint");
    b.dir(&fingerprint);
    for i in 0..(1600 / scale) {
        let unit = fingerprint.join(format!("unit{i:04}-{:016x}", seed ^ i as u64));
        b.dir(&unit);
        for f in ["dep-lib", "lib", "lib.json", "invoked.timestamp"] {
            b.file(&unit.join(f), false);
        }
    }
    let build = debug.join("build");
    b.dir(&build);
    for i in 0..(1200 / scale) {
        let unit = build.join(format!("crate{i:04}-{:016x}", seed ^ i as u64));
        b.dir(&unit);
        b.file(&unit.join("output"), false);
        if i % 5 == 0 {
            let out = unit.join("out");
            b.dir(&out);
            for f in 0..b.rng.range(1, 40) {
                b.file(&out.join(format!("gen{f}.rs")), false);
            }
        }
    }
    let incremental = debug.join("incremental");
    b.dir(&incremental);
    for i in 0..(40 / scale).max(2) {
        let session = incremental.join(format!("crate{i}-{:x}/s-session", seed ^ i as u64));
        fs::create_dir_all(&session).expect("create incremental dir");
        b.made.dirs += 2;
        for f in 0..b.rng.range(200, 1200) {
            b.file(&session.join(format!("{f:05}.o")), false);
        }
    }
    b.made
}

/// Builds in `root` what a developer's `/tmp` holds, scaled down: two cargo target dirs (a debug
/// build and a smaller one), a test workspace of nested big dirs, and a chain of 1,100 nested dirs
/// (any local user can make one in `/tmp`). What was made, summed.
///
/// # Panics
/// A dir or file cannot be made.
pub fn developer_tmp(root: &Path, seed: u64) -> Made {
    let a = cargo_target(&root.join("cargo-a/target"), seed, 2);
    let b = cargo_target(&root.join("cargo-b/target"), seed + 1, 4);
    let ws = root.join("workspace");
    fs::create_dir_all(&ws).expect("create workspace");
    let shape = Hostile {
        giant: 0,
        chain: 1100,
        tops: 3,
        depth: 3,
    };
    let w = build(&ws, seed + 2, shape);
    Made {
        files: a.files + b.files + w.files,
        dirs: a.dirs + b.dirs + w.dirs + 5, // cargo-a, cargo-b, their target dirs, workspace
        symlinks: w.symlinks,
        hard_links: w.hard_links,
    }
}
