//! Freeable bytes of code-sign clones on a real reflink file system: an XFS image (`reflink=1`)
//! on a loop device, an "installed app" and clones of it made with `cp --reflink=always`, as
//! Chromium's `clonefile()` makes them on APFS. The scanner's figures are checked against `du`,
//! against `xfs_io`'s own FIEMAP listing, and against hand counts of what is shared.
//!
//! Needs root, `losetup`, `mount` and `mkfs.xfs`/`xfs_io` (Debian: `xfsprogs`); skipped with a
//! printed reason where any is missing.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cachewatch_core::inventory::Item;
use cachewatch_core::scan::scan_root;
use cachewatch_core::{Catalogue, Root, RootKind};

const MIB: u64 = 1 << 20;
/// Size of the app's framework binary (Chrome 150's is 489,946,480 B; scaled down).
const FRAMEWORK_BYTES: u64 = 8 * MIB;

/// A mounted XFS image; unmounted and detached on drop.
struct Xfs {
    _dir: tempfile::TempDir,
    mnt: PathBuf,
    dev: String,
}

impl Drop for Xfs {
    fn drop(&mut self) {
        let _umount = Command::new("umount").arg(&self.mnt).status();
        let _detach = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

fn run(cmd: &mut Command) -> Result<String, String> {
    match cmd.output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_owned()),
        Ok(o) => Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("{cmd:?}: {e}")),
    }
}

/// Makes and mounts a 320 MiB XFS with reflink; `Err(reason)` when this machine cannot.
fn mount_xfs() -> Result<Xfs, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: loop devices and mount need root".to_owned());
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let img = dir.path().join("xfs.img");
    fs::File::create(&img)
        .and_then(|f| f.set_len(320 * MIB))
        .map_err(|e| e.to_string())?;
    run(Command::new("mkfs.xfs")
        .args(["-q", "-m", "reflink=1"])
        .arg(&img))
    .map_err(|e| format!("mkfs.xfs (apt-get install xfsprogs): {e}"))?;
    let dev = run(Command::new("losetup").args(["-f", "--show"]).arg(&img))?;
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).map_err(|e| e.to_string())?;
    let xfs = Xfs {
        _dir: dir,
        mnt: mnt.clone(),
        dev: dev.clone(),
    };
    run(Command::new("mount").arg(&dev).arg(&mnt))?;
    run(Command::new("xfs_io")
        .args(["-r", "-c", "fiemap -v"])
        .arg(&img))
    .map_err(|e| format!("xfs_io: {e}"))?;
    Ok(xfs)
}

fn write(p: &Path, len: u64, seed: u8) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let data: Vec<u8> = (0..len)
        .map(|i| seed.wrapping_add((i / 4096) as u8 ^ i as u8))
        .collect();
    fs::write(p, data).unwrap();
}

/// `du -s -x -B1 PATH`.
fn du(path: &Path) -> u64 {
    cachewatch_testkit::du::allocated(&[path])
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            out.extend(files_under(&e.path()));
        } else if t.is_file() {
            out.push(e.path());
        }
    }
    out
}

/// Bytes of `file`'s extents flagged shared (0x2000) in `xfs_io -c "fiemap -v"`, whose TOTAL
/// column counts 512-byte blocks.
fn xfs_io_shared_bytes(file: &Path) -> u64 {
    let out = run(Command::new("xfs_io")
        .args(["-r", "-c", "fiemap -v"])
        .arg(file))
    .unwrap();
    out.lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let flags = u64::from_str_radix(cols.last()?.strip_prefix("0x")?, 16).ok()?;
            let total: u64 = cols.get(cols.len().checked_sub(2)?)?.parse().ok()?;
            (flags & 0x2000 != 0).then_some(total * 512)
        })
        .sum()
}

/// Allocated bytes of the regular files under `dir` (`st_blocks * 512`).
fn file_blocks(dir: &Path) -> u64 {
    files_under(dir)
        .iter()
        .map(|f| fs::symlink_metadata(f).unwrap().blocks() * 512)
        .sum()
}

fn clone_item<'a>(items: &'a [Item], path: &Path) -> &'a Item {
    let item = items.iter().find(|i| i.path == path).unwrap();
    assert_eq!(item.producer.as_deref(), Some("chromium-code-sign-clone"));
    item
}

/// Checks one clone item against du and xfs_io: allocated = du, freeable = du − shared extents.
fn check_clone(item: &Item, dir: &Path) -> u64 {
    let shared: u64 = files_under(dir)
        .iter()
        .map(|f| xfs_io_shared_bytes(f))
        .sum();
    assert_eq!(item.measure.allocated_bytes, du(dir), "{dir:?}");
    assert_eq!(
        item.measure.freeable_bytes,
        du(dir) - shared,
        "{dir:?}: freeable vs du minus xfs_io's shared extents"
    );
    shared
}

#[test]
fn clone_sharing_blocks_with_its_app_frees_only_its_private_bytes_and_all_after_an_update() {
    let xfs = match mount_xfs() {
        Ok(x) => x,
        Err(reason) => {
            eprintln!("skipped: no reflink file system: {reason}");
            return;
        }
    };
    let app = xfs.mnt.join("Applications/Google Chrome.app");
    let framework = "Contents/Frameworks/Google Chrome Framework.framework/Versions/150.0/Google Chrome Framework";
    write(&app.join(framework), FRAMEWORK_BYTES, 1);
    write(&app.join("Contents/MacOS/Google Chrome"), 200_000, 2);
    write(&app.join("Contents/Info.plist"), 3_000, 3);
    let x = xfs.mnt.join("X");
    let clones = x.join("com.google.Chrome.code_sign_clone");
    let fresh = clones.join("code_sign_clone.tKdILk");
    let patched = clones.join("code_sign_clone.Qw12Er");
    for c in [&fresh, &patched] {
        fs::create_dir_all(c).unwrap();
        run(Command::new("cp")
            .args(["-a", "--reflink=always"])
            .arg(&app)
            .arg(c))
        .unwrap();
    }
    // One clone gets 1 MiB of its framework rewritten (its own blocks from then on).
    let f = fs::OpenOptions::new()
        .write(true)
        .open(patched.join("Google Chrome.app").join(framework))
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &vec![0xA5; MIB as usize], 2 * MIB).unwrap();
    f.sync_all().unwrap();
    drop(f);
    // SAFETY: sync has no preconditions; it flushes delayed allocations so FIEMAP sees them.
    unsafe { libc::sync() };

    let root = Root::new(RootKind::CodeSignClones, &x).unwrap();
    assert!(cachewatch_core::platform::can_share_blocks(&root.canonical));
    let scan = scan_root(&root, &Catalogue::builtin());
    assert!(scan.issues.is_empty(), "{:?}", scan.issues);
    assert_eq!(scan.total.allocated_bytes, du(&x));

    // Fresh clone: every file block is shared with the app; only its dirs are its own.
    let item = clone_item(&scan.items, &fresh);
    let shared = check_clone(item, &fresh);
    assert_eq!(
        shared,
        file_blocks(&fresh),
        "hand count: all file blocks shared"
    );
    assert!(shared >= FRAMEWORK_BYTES);
    assert_eq!(
        item.measure.freeable_bytes,
        du(&fresh) - file_blocks(&fresh)
    );
    println!(
        "fresh clone: allocated {} B (du), freeable {} B",
        item.measure.allocated_bytes, item.measure.freeable_bytes
    );
    // Patched clone: its rewritten MiB is its own too.
    let item = clone_item(&scan.items, &patched);
    let shared = check_clone(item, &patched);
    assert_eq!(
        shared,
        file_blocks(&patched) - MIB,
        "hand count: all but 1 MiB"
    );
    println!(
        "patched clone: allocated {} B (du), freeable {} B",
        item.measure.allocated_bytes, item.measure.freeable_bytes
    );
    let totals = scan.total;
    assert!(totals.freeable_bytes < totals.allocated_bytes);

    // The app updates (its framework is replaced by a new file) and the patched clone goes:
    // the fresh clone's framework blocks are now its own, and du is right about them.
    fs::remove_dir_all(&patched).unwrap();
    fs::remove_file(app.join(framework)).unwrap();
    write(&app.join(framework), FRAMEWORK_BYTES, 9);
    // SAFETY: as above.
    unsafe { libc::sync() };
    let scan = scan_root(&root, &Catalogue::builtin());
    let item = clone_item(&scan.items, &fresh);
    let shared = check_clone(item, &fresh);
    let framework_md =
        fs::symlink_metadata(fresh.join("Google Chrome.app").join(framework)).unwrap();
    assert_eq!(
        shared,
        file_blocks(&fresh) - framework_md.blocks() * 512,
        "hand count: only the files the update left alone are still shared"
    );
    assert!(item.measure.freeable_bytes >= FRAMEWORK_BYTES);
    println!(
        "after the update: allocated {} B (du), freeable {} B",
        item.measure.allocated_bytes, item.measure.freeable_bytes
    );

    // Outside code-sign-clones roots only files of PRIVATE_BYTES_MIN_FILE or more are asked about:
    // a small clone counts as its own, a big one frees nothing while its source lives.
    let temp = xfs.mnt.join("T");
    let small = temp.join("small-clone");
    let big = temp.join("big-clone");
    fs::create_dir(&temp).unwrap();
    write(&xfs.mnt.join("small-source"), 8_192, 4);
    write(&xfs.mnt.join("big-source"), 2 * MIB, 5);
    for (src, dst) in [("small-source", &small), ("big-source", &big)] {
        run(Command::new("cp")
            .arg("--reflink=always")
            .arg(xfs.mnt.join(src))
            .arg(dst))
        .unwrap();
    }
    // SAFETY: as above.
    unsafe { libc::sync() };
    const { assert!(cachewatch_core::scan::PRIVATE_BYTES_MIN_FILE <= 2 * MIB) };
    let root = Root::new(RootKind::Temp, &temp).unwrap();
    let scan = scan_root(&root, &Catalogue::builtin());
    let small_item = scan.items.iter().find(|i| i.path == small).unwrap();
    assert_eq!(
        xfs_io_shared_bytes(&small),
        du(&small),
        "the small clone is shared"
    );
    assert_eq!(small_item.measure.freeable_bytes, du(&small));
    let big_item = scan.items.iter().find(|i| i.path == big).unwrap();
    assert_eq!(big_item.measure.allocated_bytes, 2 * MIB);
    assert_eq!(
        big_item.measure.freeable_bytes,
        du(&big) - xfs_io_shared_bytes(&big)
    );
    assert_eq!(big_item.measure.freeable_bytes, 0);
}

/// `cargo test --release --test freeable_reflink -- --ignored --nocapture private_bytes_cost`
#[test]
#[ignore = "benchmark: prints figures, asserts nothing about speed"]
fn private_bytes_cost() {
    let xfs = match mount_xfs() {
        Ok(x) => x,
        Err(reason) => {
            eprintln!("skipped: no reflink file system: {reason}");
            return;
        }
    };
    let x = xfs.mnt.join("X");
    let n = 20_000u32;
    for i in 0..n {
        write(&x.join(format!("d{}/f{i}", i % 200)), 4096, i as u8);
    }
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    let root = Root::new(RootKind::CodeSignClones, &x).unwrap();
    let cat = Catalogue::builtin();
    let _warm = scan_root(&root, &cat);
    let start = std::time::Instant::now();
    let scan = scan_root(&root, &cat);
    let scan_time = start.elapsed();
    let files = files_under(&x);
    let start = std::time::Instant::now();
    for f in &files {
        cachewatch_core::platform::private_bytes(f).unwrap();
    }
    let private_time = start.elapsed();
    println!(
        "{} files on XFS: scan (with private bytes) {scan_time:?}; private_bytes alone, serially, {private_time:?} ({:.1} us/file)",
        scan.total.files,
        private_time.as_secs_f64() * 1e6 / files.len() as f64
    );
}
