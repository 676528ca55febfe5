//! The watcher under a live monitor, on real trees: every figure is compared with `du` run on the
//! same tree after `flush()` (no sleeps).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cachewatch::dto::WatchMode;
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Catalogue, Root, RootKind};

const GPU: &str = "metal-gpuarchiver";

/// `an_event_queue_overflow_rescans_the_root` lowers the system-wide inotify queue limit for a
/// moment: a watcher another test starts then gets the tiny queue and overflows. That test takes
/// this lock for writing, every other test of this file for reading, so none starts meanwhile.
static QUEUE_LIMIT: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// `du -B1 -s -c -x` of `paths`: the allocated bytes of all of them together.
fn du_total(paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

fn du(path: &Path) -> u64 {
    du_total(&[path.to_path_buf()])
}

fn start(root: Root) -> MonitorHandle {
    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.debounce = Duration::from_millis(50);
    monitor::spawn(opts).unwrap()
}

fn producer(s: &Snapshot, id: &str) -> (u64, u64) {
    s.producers
        .iter()
        .find(|p| p.id == id)
        .map_or((0, 0), |p| (p.items, p.allocated_bytes))
}

/// Makes `n` `gpuarchiver-*` dirs under `<root>/org.julialang.julia/com.apple.gpuarchiver/`, each
/// with a file of a size that varies with the index; returns their paths. (Inside an app's cache
/// dir, so the producer's figures are the archives alone: a bare top-level `com.apple.gpuarchiver`
/// is one more item of the producer, the structure dir.)
fn make_archives(root: &Path, n: usize, tag: &str) -> Vec<PathBuf> {
    make_archives_in(
        &root.join("org.julialang.julia/com.apple.gpuarchiver"),
        n,
        tag,
    )
}

/// [`make_archives`] directly in `parent` (a `com.apple.gpuarchiver` dir).
fn make_archives_in(parent: &Path, n: usize, tag: &str) -> Vec<PathBuf> {
    std::fs::create_dir_all(parent).unwrap();
    (0..n)
        .map(|i| {
            let d = parent.join(format!("gpuarchiver-{tag}{i:05}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("PersistentState"), vec![7u8; 100 + (i % 37) * 300]).unwrap();
            d
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_archives_reach_du_figures_then_drop_to_zero() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let m = start(root);
    m.flush().await.unwrap();
    assert_eq!(producer(&m.snapshot(), GPU), (0, 0));

    let dirs = make_archives(&canonical, 1000, "a");
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU), (1000, du_total(&dirs)));
    assert_eq!(
        s.roots[0].allocated_bytes,
        du(&canonical),
        "root {:?}, unattributed {:?}",
        s.roots[0],
        s.unattributed
    );
    assert_eq!(s.roots[0].watch_mode, WatchMode::Events);
    assert_eq!(s.roots[0].rescans, 0, "events alone kept it current");

    for d in &dirs {
        std::fs::remove_dir_all(d).unwrap();
    }
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU), (0, 0));
    assert_eq!(s.roots[0].allocated_bytes, du(&canonical));
    m.shutdown().await;
}

/// A structure dir below an app's dir, there but empty at the first scan (its own entry counted in
/// the app dir's measure, with no baseline of its own: no item below it), grows by 1000 archives
/// before its first re-stat (a single re-measure, at the flush: the debounce is long). Its growth
/// was lost (the baseline was taken at that re-stat); the app dir is now measured again with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_structure_dir_grown_before_its_first_restat_keeps_its_growth() {
    use std::os::unix::fs::MetadataExt;
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let parent = canonical.join("org.julialang.julia/com.apple.gpuarchiver");
    std::fs::create_dir_all(&parent).unwrap();
    let small = std::fs::symlink_metadata(&parent).unwrap().blocks();
    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.debounce = Duration::from_secs(600);
    let m = monitor::spawn(opts).unwrap();
    m.flush().await.unwrap();
    assert_eq!(m.snapshot().roots[0].allocated_bytes, du(&canonical));

    let dirs = make_archives_in(&parent, 1000, "g");
    let grown = std::fs::symlink_metadata(&parent).unwrap().blocks();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU), (1000, du_total(&dirs)));
    assert_eq!(
        s.roots[0].allocated_bytes,
        du(&canonical),
        "the structure dir went from {small} to {grown} blocks"
    );
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_renamed_into_an_item_counts_and_out_of_it_stops_counting() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("root")).unwrap();
    let root = Root::new(RootKind::Cache, dir.path().join("root")).unwrap();
    let canonical = root.canonical.clone();
    let item = make_archives(&canonical, 1, "r").remove(0);
    let m = start(root);
    m.flush().await.unwrap();
    let before = producer(&m.snapshot(), GPU);
    assert_eq!(before, (1, du(&item)));

    // Written outside the root, then moved in: only the rename is seen inside.
    let outside = dir.path().join("big.bin");
    std::fs::write(&outside, vec![1u8; 300_000]).unwrap();
    std::fs::rename(&outside, item.join("big.bin")).unwrap();
    m.flush().await.unwrap();
    let after = producer(&m.snapshot(), GPU);
    assert_eq!(after, (1, du(&item)));
    assert!(after.1 >= before.1 + 300_000, "{before:?} -> {after:?}");
    assert_eq!(m.snapshot().roots[0].allocated_bytes, du(&canonical));

    std::fs::rename(item.join("big.bin"), &outside).unwrap();
    m.flush().await.unwrap();
    assert_eq!(producer(&m.snapshot(), GPU), (1, du(&item)));
    assert_eq!(m.snapshot().roots[0].allocated_bytes, du(&canonical));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dir_tree_moved_in_is_searched_for_items() {
    let _serial = QUEUE_LIMIT.read().await;
    // `<bundle>/com.apple.gpuarchiver/gpuarchiver-*` built outside and moved in as one rename:
    // only the bundle dir's event arrives; its claimed items must still be found.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("root")).unwrap();
    let root = Root::new(RootKind::Cache, dir.path().join("root")).unwrap();
    let canonical = root.canonical.clone();
    let m = start(root);
    m.flush().await.unwrap();
    let staging = dir.path().join("com.example.App");
    let dirs = make_archives_in(&staging.join("com.apple.gpuarchiver"), 25, "m");
    std::fs::rename(&staging, canonical.join("com.example.App")).unwrap();
    m.flush().await.unwrap();
    let moved: Vec<PathBuf> = dirs
        .iter()
        .map(|d| canonical.join(d.strip_prefix(dir.path()).unwrap()))
        .collect();
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU), (25, du_total(&moved)));
    assert_eq!(s.roots[0].allocated_bytes, du(&canonical));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_removed_and_created_again_is_watched_again() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache");
    std::fs::create_dir(&path).unwrap();
    let root = Root::new(RootKind::Cache, &path).unwrap();
    make_archives(&path, 10, "x");
    let m = start(root);
    m.flush().await.unwrap();
    assert_eq!(producer(&m.snapshot(), GPU).0, 10);

    std::fs::remove_dir_all(&path).unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU), (0, 0));
    assert_eq!(s.roots[0].allocated_bytes, 0);
    assert_eq!(s.roots[0].watch_mode, WatchMode::Off);
    assert!(
        s.errors.iter().any(|e| e.contains("removed")),
        "{:?}",
        s.errors
    );

    std::fs::create_dir(&path).unwrap();
    let dirs = make_archives(&path, 7, "y");
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].watch_mode, WatchMode::Events);
    assert_eq!(producer(&s, GPU), (7, du_total(&dirs)));

    // And events flow again from the new dir.
    let more = make_archives(&path, 3, "z");
    m.flush().await.unwrap();
    let all: Vec<PathBuf> = dirs.into_iter().chain(more).collect();
    assert_eq!(producer(&m.snapshot(), GPU), (10, du_total(&all)));
    assert_eq!(m.snapshot().roots[0].allocated_bytes, du(&path));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_given_through_a_symlink_is_watched_by_its_canonical_path() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let root = Root::new(RootKind::Cache, &link).unwrap();
    let m = start(root);
    m.flush().await.unwrap();
    // Written through the link spelling; events arrive with the canonical path.
    let dirs = make_archives(&link, 40, "s");
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU), (40, du_total(&dirs)));
    assert_eq!(s.roots[0].path, link.to_string_lossy());
    let top = &s.producers.iter().find(|p| p.id == GPU).unwrap().top_items[0];
    assert!(
        top.path
            .starts_with(&*std::fs::canonicalize(&real).unwrap().to_string_lossy()),
        "{}",
        top.path
    );
    m.shutdown().await;
}

/// A rescan-flag event and a watch-limit error, injected through the monitor's test seam (the
/// inotify watch limit cannot be lowered for one process): the root falls back to polling, says
/// why, and a flush (or a rescan flag) re-reads it, bringing in changes no event reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_limit_falls_back_to_polling_and_a_rescan_flag_rescans() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let m = start(root);
    m.flush().await.unwrap();

    m.inject_watch_event(0, Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch)))
        .unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].watch_mode, WatchMode::Polling);
    let why = s.roots[0].watch_error.clone().unwrap();
    assert!(why.contains("max_user_watches"), "{why}");
    assert!(
        s.errors.iter().any(|e| e.contains("limit")),
        "{:?}",
        s.errors
    );
    assert_eq!(s.roots[0].rescans, 1, "the watch error rescans once");

    // No watcher now: no event reports these changes; the flush re-reads the polling root.
    let dirs = make_archives(&canonical, 30, "p");
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].rescans, 2);
    assert_eq!(producer(&s, GPU), (30, du_total(&dirs)));

    let more = make_archives(&canonical, 5, "q");
    let flagged =
        notify::Event::new(notify::EventKind::Other).set_flag(notify::event::Flag::Rescan);
    m.inject_watch_event(0, Ok(flagged)).unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(
        s.roots[0].rescans, 3,
        "the flag and the flush share one rescan"
    );
    let all: Vec<PathBuf> = dirs.iter().chain(&more).cloned().collect();
    assert_eq!(producer(&s, GPU), (35, du_total(&all)));
    assert_eq!(s.roots[0].allocated_bytes, du(&canonical));
    m.shutdown().await;
}

/// Restores `max_queued_events` when dropped.
struct QueueLimit(String);

impl Drop for QueueLimit {
    fn drop(&mut self) {
        std::fs::write("/proc/sys/fs/inotify/max_queued_events", &self.0).unwrap();
    }
}

/// A real inotify queue overflow (as root, `max_queued_events` is lowered to 16 just while the
/// monitor creates its inotify instance): the watcher asks for a rescan and the figures still
/// equal `du`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_queue_overflow_rescans_the_root() {
    let _serial = QUEUE_LIMIT.write().await;
    const LIMIT: &str = "/proc/sys/fs/inotify/max_queued_events";
    let old = std::fs::read_to_string(LIMIT).unwrap();
    if std::fs::write(LIMIT, "16").is_err() {
        eprintln!(
            "skipped: cannot lower {LIMIT} (not root); the injected rescan test covers the path"
        );
        return;
    }
    let guard = QueueLimit(old);
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let m = start(root);
    let mut rx = m.subscribe();
    // The inotify instance exists once the first scan has started.
    rx.wait_for(|s| s.scan_progress.roots_done == 1)
        .await
        .unwrap();
    drop(guard);
    m.flush().await.unwrap();

    let dirs = make_archives(&canonical, 3000, "o");
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert!(
        s.roots[0].rescans >= 1,
        "3000 creations through a 16-event queue must overflow"
    );
    assert_eq!(producer(&s, GPU), (3000, du_total(&dirs)));
    assert_eq!(s.roots[0].allocated_bytes, du(&canonical));
    m.shutdown().await;
}

/// Regression: a build writing into the temp dir overflowed inotify again and again and the monitor
/// rescanned the root back to back. A second rescan request within the gap waits (and is not
/// lost: a flush runs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rescan_requests_in_a_burst_rescan_once_until_the_gap_or_a_flush() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let m = start(root);
    m.flush().await.unwrap();
    let rescans0 = m.snapshot().roots[0].rescans;
    let mut snaps = m.subscribe();
    let flagged =
        || notify::Event::new(notify::EventKind::Other).set_flag(notify::event::Flag::Rescan);
    // The monitor started less than the gap ago, so the request waits for the gap...
    m.inject_watch_event(0, Ok(flagged())).unwrap();
    let dirs = make_archives(&canonical, 3, "g");
    // ...then a flush runs it at once, with the changes it covered.
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].rescans, rescans0 + 1);
    assert_eq!(producer(&s, GPU), (3, du_total(&dirs)));
    // Another burst of requests right after: no rescan while within the gap (several debounce
    // periods pass; each published snapshot is checked).
    for _ in 0..5 {
        m.inject_watch_event(0, Ok(flagged())).unwrap();
    }
    let waited = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            snaps.changed().await.unwrap();
            if snaps.borrow().roots[0].rescans > rescans0 + 1 {
                break;
            }
        }
    })
    .await;
    assert!(waited.is_err(), "rescanned again within the gap");
    m.flush().await.unwrap();
    assert_eq!(
        m.snapshot().roots[0].rescans,
        rescans0 + 2,
        "one rescan for the burst"
    );
    m.shutdown().await;
}

/// The allocated bytes of `paths` and everything below them, counted by hand (`lstat` of each
/// entry, never following symlinks; every entry once, as du does for unshared files).
fn hand_count(paths: &[PathBuf]) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fn walk(p: &Path) -> u64 {
        let md = std::fs::symlink_metadata(p).unwrap();
        let mut n = md.blocks() * 512;
        if md.is_dir() {
            for e in std::fs::read_dir(p).unwrap() {
                n += walk(&e.unwrap().path());
            }
        }
        n
    }
    paths.iter().map(|p| walk(p)).sum()
}

/// Checks the producer's figures and the root total against du and a hand count.
fn assert_archives_and_total(m: &MonitorHandle, canonical: &Path, dirs: &[PathBuf], when: &str) {
    let s = m.snapshot();
    let bytes = du_total(dirs);
    assert_eq!(bytes, hand_count(dirs), "du and the hand count differ");
    assert_eq!(producer(&s, GPU), (dirs.len() as u64, bytes), "{when}");
    let total = du(canonical);
    assert_eq!(total, hand_count(&[canonical.to_path_buf()]));
    assert_eq!(s.roots[0].allocated_bytes, total, "{when}: root total");
}

/// As [`assert_archives_and_total`] while the top-level structure dir `structure` holds something
/// besides the archives: then it is the producer's item too (attributed, kept by reclaim, never
/// unattributed), measuring its own entry and what lies in it outside the archives.
fn assert_archives_and_structure_item(
    m: &MonitorHandle,
    canonical: &Path,
    dirs: &[PathBuf],
    structure: &Path,
    when: &str,
) {
    let s = m.snapshot();
    let bytes = du(structure);
    assert_eq!(bytes, hand_count(&[structure.to_path_buf()]));
    assert_eq!(producer(&s, GPU), (dirs.len() as u64 + 1, bytes), "{when}");
    let total = du(canonical);
    assert_eq!(s.roots[0].allocated_bytes, total, "{when}: root total");
}

/// A file created and removed directly inside a top-level `com.apple.gpuarchiver` holding only
/// archives: that dir's measure finds no item (it is structure), and the state took that for
/// "gone" and dropped every archive below it (300 archives went to 0 items, 0 bytes, the root
/// total to 16384 against du 3559424). The structure dir is created after the first scan, so its
/// own entry must also be counted in the root total when it appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_created_and_removed_in_a_top_level_structure_dir_keeps_its_archives() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let m = start(root);
    m.flush().await.unwrap();
    assert_eq!(m.snapshot().roots[0].allocated_bytes, du(&canonical));

    let parent = canonical.join("com.apple.gpuarchiver");
    let dirs = make_archives_in(&parent, 300, "s");
    m.flush().await.unwrap();
    assert_archives_and_total(
        &m,
        &canonical,
        &dirs,
        "structure dir created after the scan",
    );

    std::fs::write(parent.join("x"), vec![1u8; 50_000]).unwrap();
    m.flush().await.unwrap();
    assert_archives_and_structure_item(
        &m,
        &canonical,
        &dirs,
        &parent,
        "a file x in the structure dir",
    );
    std::fs::remove_file(parent.join("x")).unwrap();
    m.flush().await.unwrap();
    assert_archives_and_total(&m, &canonical, &dirs, "x removed again");

    // Removed as a whole: nothing of it stays counted.
    std::fs::remove_dir_all(&parent).unwrap();
    m.flush().await.unwrap();
    assert_archives_and_total(&m, &canonical, &[], "structure dir removed");
    m.shutdown().await;
}

/// The same with the structure dir and its archives there at the first scan (its own entry counted
/// in the scan's total), and an empty structure dir there at the first scan that gets a file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_created_and_removed_in_a_scanned_structure_dir_keeps_its_archives() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let parent = canonical.join("com.apple.gpuarchiver");
    let dirs = make_archives_in(&parent, 300, "t");
    let empty = canonical.join("com.example.App/com.apple.gpuarchiver");
    std::fs::create_dir_all(&empty).unwrap();
    let m = start(root);
    m.flush().await.unwrap();
    assert_archives_and_total(&m, &canonical, &dirs, "first scan");

    std::fs::write(parent.join("x"), vec![1u8; 50_000]).unwrap();
    std::fs::write(empty.join("y"), vec![1u8; 9_000]).unwrap();
    m.flush().await.unwrap();
    assert_archives_and_structure_item(&m, &canonical, &dirs, &parent, "files x and y");
    std::fs::remove_file(parent.join("x")).unwrap();
    std::fs::remove_file(empty.join("y")).unwrap();
    m.flush().await.unwrap();
    assert_archives_and_total(&m, &canonical, &dirs, "x and y removed");
    m.shutdown().await;
}

/// A top-level `com.apple.gpuarchiver` holding something unclaimed is its rule's item; 590
/// archives added in it grow its own entry (ext4: a block per ~150 names). The root total stays
/// `du`'s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_structure_dir_that_is_an_item_grows_and_the_root_stays_at_du() {
    let _serial = QUEUE_LIMIT.read().await;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let top = canonical.join("com.apple.gpuarchiver");
    std::fs::create_dir(&top).unwrap();
    std::fs::write(top.join("stray.txt"), b"unclaimed").unwrap();
    make_archives_in(&top, 10, "a");
    let m = start(root);
    m.flush().await.unwrap();
    assert_eq!(m.snapshot().roots[0].allocated_bytes, du(&canonical));
    make_archives_in(&top, 600, "b");
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(
        s.roots[0].allocated_bytes,
        du(&canonical),
        "root {:?}",
        s.roots[0]
    );
    m.shutdown().await;
}
