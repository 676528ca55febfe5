//! The fd-relative walk's own edges: a dir replaced by a symlink between its `lstat` and its
//! open, and trees deeper than the fd budget. Sizes are checked against `du`.

use std::ffi::OsStr;
use std::fs;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::{At, Open, Walker};
use crate::inventory::Item;
use crate::platform;
use crate::roots::RootKind;
use crate::scan::{Claim, Classify, ScanProgress};

/// No rules: every top-level entry is an unattributed item.
struct NoRules;

impl Classify for NoRules {
    fn max_depth(&self, _kind: RootKind) -> usize {
        0
    }

    fn classify(&self, _kind: RootKind, _rel: &Path) -> Option<Claim> {
        None
    }

    fn item_of(&self, _kind: RootKind, _rel: &Path) -> Option<(PathBuf, Claim)> {
        None
    }
}

fn dev_of(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::dev(&fs::symlink_metadata(p).unwrap())
}

/// The walk is told to list the dir `d` (as after listing its parent and `lstat`ing `d` as a dir),
/// but `d` has become a symlink to a full dir meanwhile: the symlink is not followed, `d` counts
/// as vanished, nothing of the target is measured, and no issue is reported.
#[test]
fn a_dir_replaced_by_a_symlink_before_its_open_is_not_followed() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let target = root.join("target");
    cachewatch_testkit::tree::write_file(&target.join("big"), 100_000);
    std::os::unix::fs::symlink(&target, root.join("d")).unwrap();
    let sink = |_: Item| {};
    let progress = ScanProgress::new();
    let walker = Walker::new(
        RootKind::Cache,
        &NoRules,
        dev_of(&root),
        u64::MAX,
        &sink,
        &progress,
        None,
    );
    let root_fd = platform::open_dir_path(&root).unwrap();
    let at_root = At::start(&root);
    let at = At::child(&at_root, OsStr::new("d"));
    let inside = walker.children(Open::At(root_fd.as_fd(), c"d"), &at, None, 1);
    assert_eq!((inside.files, inside.allocated_bytes), (0, 0));
    assert_eq!(walker.vanished.load(Ordering::Relaxed), 1);
    // By path too (a parent closed to save fds): `O_NOFOLLOW` on the last component.
    let inside = walker.contents(&root.join("d"), None, 1);
    assert_eq!((inside.files, inside.allocated_bytes), (0, 0));
    assert_eq!(walker.vanished.load(Ordering::Relaxed), 2);
    let (_, issues) = walker.into_found();
    assert!(issues.is_empty(), "{issues:?}");
}

/// A chain of dirs deeper than the fd budget (each with a file), walked from one top-level item:
/// past the budget dirs are closed before their subdir is walked and it is opened by path; the
/// item measures what `du` says and no fd is left held.
#[test]
fn a_tree_deeper_than_the_fd_budget_measures_like_du() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let budget = super::FdBudget::new();
    let levels = budget.max() + 40;
    let mut p = root.join("top");
    for i in 0..levels {
        p.push("d");
        if i % 50 == 0 {
            cachewatch_testkit::tree::write_file(&p.join("f"), 5000 + i);
        }
    }
    fs::create_dir_all(&p).unwrap();
    let (top, _) = walk_one_top(&root);
    assert_eq!(top.measure.dirs, levels as u64 + 1);
}

/// A dir of more batches than are walked at once while it is listed (subdirs with files, a
/// nested subdir, plain files, and one subdir itself big enough to be listed in batches): the
/// item measures what `du` says, counts every file and dir made, every entry is counted as
/// scanned, and no fd is left held.
#[test]
fn a_dir_of_many_batches_walked_while_listed_measures_like_du() {
    use super::{BATCHES_IN_FLIGHT, BATCH_ENTRIES, SERIAL_ENTRIES};
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let many = root.join("top/many");
    let n = SERIAL_ENTRIES + BATCH_ENTRIES * (BATCHES_IN_FLIGHT + 2) + 17;
    let (mut files, mut dirs) = (0u64, 2u64);
    for i in 0..n {
        if i % 3 == 0 {
            cachewatch_testkit::tree::write_file(&many.join(format!("f-{i:05}")), i * 7 % 9000);
            files += 1;
        } else {
            let d = many.join(format!("d-{i:05}"));
            cachewatch_testkit::tree::write_file(&d.join("a"), i * 13 % 20_000);
            files += 1;
            dirs += 1;
            if i % 11 == 0 {
                cachewatch_testkit::tree::write_file(&d.join("sub/b"), 4097 + i);
                files += 1;
                dirs += 1;
            }
        }
    }
    // One subdir big enough to be listed in batches itself.
    let inner = many.join("d-00001");
    for i in 0..(SERIAL_ENTRIES + 2 * BATCH_ENTRIES + 5) {
        fs::create_dir(inner.join(format!("e-{i:05}"))).unwrap();
        dirs += 1;
    }
    let entries_made = files + dirs; // every entry below the root, `top` included
    let (top, entries) = walk_one_top(&root);
    assert_eq!((top.measure.files, top.measure.dirs), (files, dirs));
    assert_eq!(entries, entries_made);
}

/// The hang of the first scan of a real `/tmp`: a big dir (more than one batch) met while the fd
/// budget is spent (there, by a chain of nested dirs elsewhere in the tree) lost its listing and
/// the walk spun on it forever, listing nothing more. Walked with no fd to spare, and with one
/// or two, under 1, 2 and 8 threads, each walk under a watchdog: it ends, and the item is `du`
/// of it, with every file and dir counted.
#[test]
fn a_big_dir_met_when_the_fd_budget_is_spent_is_listed_to_its_end() {
    use super::{BATCH_ENTRIES, SERIAL_ENTRIES};
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let big = root.join("top/big");
    let (mut files, mut dirs) = (0u64, 2u64);
    for i in 0..(SERIAL_ENTRIES + 3 * BATCH_ENTRIES + 9) {
        if i % 5 == 0 {
            let d = big.join(format!("d{i}"));
            cachewatch_testkit::tree::write_file(&d.join("x"), i % 7000);
            (files, dirs) = (files + 1, dirs + 1);
        } else {
            cachewatch_testkit::tree::write_file(&big.join(format!("f{i}")), i % 5000);
            files += 1;
        }
    }
    // A big dir inside the big dir, to be met from one of its batches.
    let inner = big.join("d5");
    for i in 0..(BATCH_ENTRIES + 100) {
        fs::create_dir(inner.join(format!("e{i}"))).unwrap();
        dirs += 1;
    }
    for threads in [1, 2, 8] {
        for fds in [0, 1, 2] {
            let what = format!("{threads} threads, {fds} fds to spare");
            let root = root.clone();
            let top = watchdog(&what, move || {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .stack_size(16 << 20)
                    .build()
                    .unwrap();
                pool.install(|| walk_one_top_with(&root, Some(fds)).0)
            });
            assert_eq!(
                (top.measure.files, top.measure.dirs),
                (files, dirs),
                "{what}"
            );
        }
    }
}

/// Runs `f` on a thread of its own and waits for it at most two minutes: a walk that does not
/// end fails the test, naming `what`, instead of hanging the run.
pub(crate) fn watchdog<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(v) => v,
        Err(e) => panic!("the walk ({what}) did not end within 120 s: {e}"),
    }
}

/// Walks `root`, which holds one dir `top` (an item: no rules), and checks what every walk must
/// give: no loose bytes, no fd left held, no issue, `top` measured as `du` measures it. The item
/// and the entries counted as scanned.
fn walk_one_top(root: &Path) -> (Item, u64) {
    walk_one_top_with(root, None)
}

/// [`walk_one_top`] with a budget of `fds` fds when given.
fn walk_one_top_with(root: &Path, fds: Option<usize>) -> (Item, u64) {
    let items = Mutex::new(Vec::new());
    let sink = |i: Item| items.lock().unwrap().push(i);
    let progress = ScanProgress::new();
    let walker = Walker::new(
        RootKind::Cache,
        &NoRules,
        dev_of(root),
        u64::MAX,
        &sink,
        &progress,
        None,
    );
    let walker = match fds {
        Some(n) => walker.with_fd_budget(n),
        None => walker,
    };
    let loose = crate::scan::in_pool(|| walker.contents(root, None, 0));
    assert_eq!(loose.allocated_bytes, 0);
    assert_eq!(walker.fds.held(), 0);
    let (_, issues) = walker.into_found();
    assert!(issues.is_empty(), "{issues:?}");
    let mut items = items.into_inner().unwrap();
    assert_eq!(items.len(), 1);
    let top = items.remove(0);
    assert_eq!(top.path, root.join("top"));
    assert_eq!(
        top.measure.allocated_bytes,
        cachewatch_testkit::du::allocated(&[&top.path])
    );
    assert_eq!(
        top.measure.apparent_bytes,
        cachewatch_testkit::du::apparent(&[&top.path])
    );
    (top, progress.entries())
}

/// A regular file listed with its private bytes (macOS bulk listing) takes them as its freeable
/// bytes without asking by path: the path handed over is never read (it does not exist, so a call
/// by path would fail and leave the file's allocated bytes). A file listed without them is asked
/// by path, and a small file (under `private_from`) is not asked at all.
#[test]
fn listed_private_bytes_are_the_freeable_bytes_without_a_call_per_file() {
    let sink = |_: Item| {};
    let progress = ScanProgress::new();
    let walker = Walker::new(RootKind::Cache, &NoRules, 1, 4096, &sink, &progress, None);
    let st = platform::ScanStat {
        dev: 1,
        ino: 7,
        nlink: 1,
        blocks: 64, // 32 KiB allocated
        size: 32 * 1024,
        kind: platform::ScanKind::File,
        mtime: None,
        born: None,
        private_bytes: Some(12 * 1024),
    };
    let mut asked = 0;
    let acc = walker.own(&st, || {
        asked += 1;
        PathBuf::from("/nonexistent/cachewatch-listed")
    });
    assert_eq!(
        (acc.allocated_bytes, acc.freeable_bytes, asked),
        (32 * 1024, 12 * 1024, 0)
    );
    // Listed without them: asked by path (here the call fails: freeable stays allocated).
    let unlisted = platform::ScanStat {
        ino: 8,
        private_bytes: None,
        ..st
    };
    let acc = walker.own(&unlisted, || {
        asked += 1;
        PathBuf::from("/nonexistent/cachewatch-unlisted")
    });
    assert_eq!((acc.freeable_bytes, asked), (32 * 1024, 1));
}
