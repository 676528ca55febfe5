//! What grouping unattributed entries by template costs a scan (prints figures; not a test). Run
//! with `cargo bench -p cachewatch-core --bench grouping_scale` (env `GROUPING_ENTRIES=100000`,
//! `GROUPING_RUNS=3`, `GROUPING_DIR=/path` to build the tree elsewhere than the temp dir).
//!
//! Builds a real root of ENTRIES unattributed top-level entries: ten leak templates of the shapes
//! real leaks draw (pids of 2-6 digits, thread indexes, counters, hex, UUIDs, ISO and epoch
//! times, mkdtemp runs), nine tenths of the entries, and a tenth of ordinary names (words,
//! dates, versioned and numbered files). Then scans it twice per run with the streaming scan: once
//! handing every item to a [`Tally`] (per-producer totals and the shape groups, as `scan` does),
//! once handing it to a counter only. The difference is what grouping costs. Prints the best wall
//! time of each, the heap at its peak above the tree's own (a counting allocator), and the groups
//! found.
//!
//! Then the same entries one level down, all inside one top-level dir `out/`: a scan with a
//! tally, with and without grouping the children of unattributed top-level dirs
//! ([`scan_root_each_found`]), the difference being what grouping one level down costs.
//!
//! `GROUPING_ONE=setup|without|with|nested` with `GROUPING_TREE=/dir` runs one scan of that tree
//! (built there on the first call) and exits: for counting instructions under
//! `valgrind --tool=callgrind`, where the wall clock of a shared machine says little.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use cachewatch_core::roots::RootKind;
use cachewatch_core::scan::{scan_root_each, scan_root_each_found, ScanProgress, Tally};
use cachewatch_core::{Catalogue, Root};
use cachewatch_testkit::heap;

#[global_allocator]
static A: heap::Counting = heap::Counting;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small xorshift: the same tree on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn run(&mut self, set: &[u8], len: usize) -> String {
        (0..len)
            .map(|_| set[self.below(set.len() as u64) as usize] as char)
            .collect()
    }
}

const HEX: &[u8] = b"0123456789abcdef";
const AN: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const WORDS: &[&str] = &[
    "notes",
    "build",
    "report",
    "photos",
    "backup",
    "draft",
    "invoice",
    "music",
    "archive",
    "sync",
    "thumbnails",
    "session",
    "budget",
    "slides",
    "export",
    "preview",
];

/// One name of leak template `t` (0..10) and whether it is a dir.
fn leak_name(t: usize, r: &mut Rng) -> (String, bool) {
    // A pid of 2 to 6 digits.
    let low = 10u64.pow(1 + r.below(5) as u32);
    let pid = low + r.below(9 * low);
    let epoch = 1_760_000_000 + r.below(40_000_000);
    match t {
        0 => (
            format!(
                "engine_{pid}_{}_{}.bundle",
                r.below(4),
                r.next() % 10u64.pow(12)
            ),
            true,
        ),
        1 => (format!("gpuarchiver-{}", r.run(AN, 6)), true),
        2 => (format!("lsp-{}-{}", r.run(HEX, 6), r.below(100)), true),
        3 => (
            format!(
                "{}-{}-{}-{}-{}",
                r.run(HEX, 8),
                r.run(HEX, 4),
                r.run(HEX, 4),
                r.run(HEX, 4),
                r.run(HEX, 12)
            )
            .to_uppercase(),
            true,
        ),
        4 => (format!("run-{epoch}{:03}.log", r.below(1000)), false),
        5 => (
            format!(
                "trace-2026-{:02}-{:02}T{:02}-{:02}-{:02}",
                1 + r.below(12),
                1 + r.below(28),
                r.below(24),
                r.below(60),
                r.below(60)
            ),
            true,
        ),
        6 => (format!("tmp{}", r.run(AN, 8)), true),
        7 => (format!("worker_{pid}_{}", r.below(16)), true),
        8 => (format!("chunk-{}.bin", r.run(HEX, 16)), false),
        _ => (
            format!("unpack_{pid}_{epoch}{:06}", r.below(1_000_000)),
            true,
        ),
    }
}

/// One ordinary name, as a home's caches hold them.
fn ordinary_name(i: usize, r: &mut Rng) -> (String, bool) {
    let w = WORDS[r.below(WORDS.len() as u64) as usize];
    match i % 4 {
        0 => (format!("{w}-{i}"), true),
        1 => (
            format!("{w} 2026-{:02}-{:02}.pdf", 1 + r.below(12), 1 + r.below(28)),
            false,
        ),
        2 => (
            format!(
                "{w}-v{}.{}.{}.tar.gz-{i}",
                r.below(9),
                r.below(30),
                r.below(9)
            ),
            false,
        ),
        _ => (format!("IMG_{i:05}.JPG"), false),
    }
}

fn build(dir: &Path, entries: usize) -> usize {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let leaks = entries * 9 / 10;
    let mut made = 0;
    for i in 0..entries {
        let (name, is_dir) = if i < leaks {
            leak_name(i % 10, &mut r)
        } else {
            ordinary_name(i, &mut r)
        };
        let p = dir.join(&name);
        let ok = if is_dir {
            std::fs::create_dir(&p).is_ok()
        } else {
            std::fs::write(&p, b"x").is_ok()
        };
        made += usize::from(ok);
    }
    made
}

/// One scan; `group` hands the items to a tally. Returns wall time, peak heap above the start,
/// items seen and groups found (the largest printed when `show`).
fn scan(
    root: &Root,
    catalogue: &Catalogue,
    group: bool,
    show: bool,
) -> (Duration, isize, u64, usize) {
    let base = heap::mark();
    let progress = ScanProgress::new();
    let started = Instant::now();
    let mut seen = 0u64;
    let mut tally = Tally::new(10);
    scan_root_each(root, catalogue, &progress, |item| {
        seen += 1;
        if group {
            tally.add(root, &item);
        }
    });
    let mut groups = if group {
        tally.unattributed_groups()
    } else {
        Vec::new()
    };
    let wall = started.elapsed();
    let peak = heap::peak() - base;
    if show {
        groups.sort_by_key(|g| std::cmp::Reverse(g.group.items));
        for g in groups.iter().take(14) {
            println!("  {:>6}  {}", g.group.items, g.group.shape);
        }
    }
    let groups = groups.len();
    (wall, peak, seen, groups)
}

/// One scan of a root whose entries lie in `out/`, with a tally; `nested`: grouping the
/// children of unattributed top-level dirs too. Wall time, peak heap above the start, and the
/// label and size of the largest group found.
fn scan_nested(root: &Root, catalogue: &Catalogue, nested: bool) -> (Duration, isize, String) {
    let base = heap::mark();
    let progress = ScanProgress::new();
    let started = Instant::now();
    let mut tally = Tally::new(10);
    if nested {
        scan_root_each_found(root, catalogue, &progress, |f| tally.add_found(root, &f));
    } else {
        scan_root_each(root, catalogue, &progress, |item| tally.add(root, &item));
    }
    let groups = tally.unattributed_groups();
    let wall = started.elapsed();
    let peak = heap::peak() - base;
    let largest = groups.iter().max_by_key(|g| g.group.items).map_or_else(
        || "none".to_owned(),
        |g| format!("{} x {}", g.group.shown(), g.group.items),
    );
    (wall, peak, largest)
}

/// One scan in this process, for an instruction count (`valgrind --tool=callgrind`): `mode` is
/// `setup` (the tree and the catalogue, no scan), `without` (a scan handing items to a counter),
/// `with` (a scan handing them to a tally, as `scan` does) or `nested` (the tally and the
/// groups one and two levels down). The tree is `GROUPING_TREE` (built there when empty), so
/// the building is not counted: run once per mode and subtract `setup`.
fn one(mode: &str, entries: usize) {
    let dir = std::path::PathBuf::from(
        std::env::var_os("GROUPING_TREE").expect("GROUPING_TREE: the tree's dir"),
    );
    std::fs::create_dir_all(&dir).expect("the tree's dir");
    if std::fs::read_dir(&dir)
        .expect("the tree's dir")
        .next()
        .is_none()
    {
        println!(
            "built {} entries in {}",
            build(&dir, entries),
            dir.display()
        );
        return;
    }
    let root = Root::new(RootKind::Temp, &dir).expect("the tree is a root");
    let catalogue = Catalogue::builtin();
    let progress = ScanProgress::new();
    let started = Instant::now();
    let mut tally = Tally::new(10);
    let mut seen = 0u64;
    match mode {
        "setup" => {}
        "without" => {
            scan_root_each(&root, &catalogue, &progress, |_| seen += 1);
        }
        "with" => {
            scan_root_each(&root, &catalogue, &progress, |item| {
                seen += 1;
                tally.add(&root, &item);
            });
        }
        "nested" => {
            scan_root_each_found(&root, &catalogue, &progress, |f| {
                seen += 1;
                tally.add_found(&root, &f);
            });
        }
        other => panic!("GROUPING_ONE={other:?}: say setup, without, with or nested"),
    }
    let groups = tally.unattributed_groups();
    println!(
        "{mode}: {seen} items, {} groups, {:?}",
        groups.len(),
        started.elapsed()
    );
}

fn main() {
    let entries = env("GROUPING_ENTRIES", 100_000);
    if let Ok(mode) = std::env::var("GROUPING_ONE") {
        one(&mode, entries);
        return;
    }
    let runs = env("GROUPING_RUNS", 3).max(1);
    let parent = std::env::var_os("GROUPING_DIR").map_or_else(std::env::temp_dir, Into::into);
    let tree = tempfile::Builder::new()
        .prefix("grouping-scale-")
        .tempdir_in(parent)
        .expect("a temp dir for the tree");
    let made = build(tree.path(), entries);
    let root = Root::new(RootKind::Temp, tree.path()).expect("the tree is a root");
    let catalogue = Catalogue::builtin();
    let mut best = [(Duration::MAX, 0isize); 2];
    let mut found = (0u64, 0usize);
    for run in 0..runs {
        // Alternate the order, so a warmer cache does not favour one side.
        let order = if run % 2 == 0 {
            [(1, true), (0, false)]
        } else {
            [(0, false), (1, true)]
        };
        for (k, group) in order {
            let (wall, peak, seen, groups) = scan(&root, &catalogue, group, group && run == 0);
            best[k].0 = best[k].0.min(wall);
            best[k].1 = best[k].1.max(peak);
            if group {
                found = (seen, groups);
            }
        }
    }
    // The grouping alone, on the items a scan hands over, with no file system below it.
    let mut items = Vec::new();
    scan_root_each(&root, &catalogue, &ScanProgress::new(), |item| {
        items.push(item)
    });
    let mut alone = Duration::MAX;
    for _ in 0..runs {
        let started = Instant::now();
        let mut tally = Tally::new(10);
        for item in &items {
            tally.add(&root, item);
        }
        std::hint::black_box(tally.unattributed_groups());
        alone = alone.min(started.elapsed());
    }
    let mib = heap::mib;
    let (plain, grouped) = (best[0], best[1]);
    println!(
        "{made} entries ({} items seen), {} groups; best of {runs} runs",
        found.0, found.1
    );
    println!(
        "scan without grouping {:?}, peak heap {:.2} MiB",
        plain.0,
        mib(plain.1)
    );
    println!(
        "scan with grouping    {:?}, peak heap {:.2} MiB",
        grouped.0,
        mib(grouped.1)
    );
    println!(
        "grouping adds {:+.1}% wall time and {:+.2} MiB peak heap",
        (grouped.0.as_secs_f64() / plain.0.as_secs_f64() - 1.0) * 100.0,
        mib(grouped.1 - plain.1)
    );
    println!(
        "grouping alone (the {} items handed to a tally, no I/O): {alone:?}, {:.0} ns per item",
        items.len(),
        alone.as_nanos() as f64 / items.len().max(1) as f64
    );

    // One level down: the same entries inside `out/`.
    let tree = tempfile::Builder::new()
        .prefix("grouping-nested-")
        .tempdir_in(std::env::var_os("GROUPING_DIR").map_or_else(std::env::temp_dir, Into::into))
        .expect("a temp dir for the tree");
    let out = tree.path().join("out");
    std::fs::create_dir(&out).expect("out/");
    let made = build(&out, entries);
    let root = Root::new(RootKind::Temp, tree.path()).expect("the tree is a root");
    let mut best = [
        (Duration::MAX, 0isize, String::new()),
        (Duration::MAX, 0, String::new()),
    ];
    for run in 0..runs {
        let order = if run % 2 == 0 { [1, 0] } else { [0, 1] };
        for k in order {
            let (wall, peak, largest) = scan_nested(&root, &catalogue, k == 1);
            best[k].0 = best[k].0.min(wall);
            best[k].1 = best[k].1.max(peak);
            best[k].2 = largest;
        }
    }
    println!("one level down: {made} entries in out/; best of {runs} runs");
    for (k, what) in [
        (0, "without nested grouping"),
        (1, "with nested grouping   "),
    ] {
        println!(
            "scan {what} {:?}, peak heap {:.2} MiB, largest group {}",
            best[k].0,
            mib(best[k].1),
            best[k].2
        );
    }
    println!(
        "nested grouping adds {:+.1}% wall time and {:+.2} MiB peak heap",
        (best[1].0.as_secs_f64() / best[0].0.as_secs_f64() - 1.0) * 100.0,
        mib(best[1].1 - best[0].1)
    );
}
