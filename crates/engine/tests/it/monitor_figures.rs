//! The reclaim figures follow the clock and the process table, not only file events.
//! Items that cross the threshold as time passes, and an owner that exits, change the snapshot's
//! reclaimable figures at the monitor's next tick, with no file event and no rescan.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::dto::{MonitorState, ProducerDto};
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::clock::ManualClock;
use cachewatch_core::{Catalogue, Root, RootKind};

const GPU: &str = "metal-gpuarchiver";
/// The monitor ticks every 5 s; a figure due at a tick must be there well within this.
const WITHIN: Duration = Duration::from_secs(60);

fn producer<'a>(s: &'a Snapshot, id: &str) -> &'a ProducerDto {
    s.producers.iter().find(|p| p.id == id).unwrap()
}

/// `n` archive dirs with one file each, every mtime `age` ago.
fn make_archives(root: &Path, n: usize, age: Duration) -> Vec<PathBuf> {
    let parent = root.join("org.julialang.julia/com.apple.gpuarchiver");
    std::fs::create_dir_all(&parent).unwrap();
    let t = SystemTime::now() - age;
    (0..n)
        .map(|i| {
            let d = parent.join(format!("gpuarchiver-{i:04}"));
            std::fs::create_dir(&d).unwrap();
            let f = d.join("PersistentState");
            std::fs::write(&f, vec![3u8; 5000]).unwrap();
            for p in [&f, &d] {
                File::open(p).unwrap().set_modified(t).unwrap();
            }
            d
        })
        .collect()
}

async fn ready(m: &MonitorHandle) {
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();
}

async fn wait_for(m: &MonitorHandle, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Arc<Snapshot> {
    let mut rx = m.subscribe();
    let res = tokio::time::timeout(WITHIN, rx.wait_for(|s| ok(s))).await;
    match res {
        Ok(Ok(s)) => s.clone(),
        _ => panic!("{what}: not in the snapshot: {:?}", m.snapshot().producers),
    }
}

/// Regression: with dirs already past the threshold by the clock and no file change, the preview
/// said "Nothing to reclaim" until "Rescan now".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_crossing_the_threshold_by_the_clock_become_reclaimable_without_a_file_event() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    make_archives(&root, 7, Duration::from_secs(4 * 60));
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Cache, &root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.debounce = Duration::from_millis(50);
    opts.threshold = Duration::from_secs(5 * 60);
    opts.clock = clock.clone();
    let m = monitor::spawn(opts).unwrap();
    ready(&m).await;
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU).items, 7);
    // The scan's progress counts the entries it listed: every entry below the root (`find`).
    let find = std::process::Command::new("find")
        .arg(&root)
        .args(["-mindepth", "1", "-printf", "x"])
        .output()
        .unwrap();
    assert_eq!(s.scan_progress.entries_done, find.stdout.len() as u64);
    assert!(s.scan_progress.entries_done >= 7);
    assert_eq!(
        producer(&s, GPU).reclaimable_items,
        0,
        "4 min old, 5 min needed"
    );

    clock.advance(Duration::from_secs(2 * 60));
    let s = wait_for(&m, "7 items past the threshold", |s| {
        producer(s, GPU).reclaimable_items == 7
    })
    .await;
    assert_eq!(
        producer(&s, GPU).reclaimable_bytes,
        producer(&s, GPU).allocated_bytes
    );
    // The preview (a plan) says the same as the snapshot.
    let plan = m
        .plan_reclaim(vec![GPU.into()], Duration::from_secs(5 * 60))
        .await
        .unwrap();
    assert_eq!(plan.planned_items, 7);
    assert_eq!(plan.planned_bytes, producer(&s, GPU).reclaimable_bytes);
    m.shutdown().await;
}

/// A `sleep 600` child killed on drop.
struct Sleeper(std::process::Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// Regression: the owner guard was read only when files changed, so an owner that exited (or
/// started) did not change the preview.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_that_exits_makes_its_items_reclaimable_without_a_file_event() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut owner = Sleeper(Command::new("sleep").arg("600").spawn().unwrap());
    let pid = owner.0.id();
    let ts = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let d = root.join(format!("model_{pid}_0_{ts}.mlmodelc"));
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("coremldata.bin"), vec![5u8; 30_000]).unwrap();
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, &root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.debounce = Duration::from_millis(50);
    opts.threshold = Duration::ZERO;
    let m = monitor::spawn(opts).unwrap();
    ready(&m).await;
    let s = m.snapshot();
    assert_eq!(producer(&s, "katago-coreml").items, 1);
    assert_eq!(
        producer(&s, "katago-coreml").reclaimable_items,
        0,
        "its owner runs"
    );

    owner.0.kill().unwrap();
    owner.0.wait().unwrap();
    let s = wait_for(&m, "the orphan reclaimable", |s| {
        producer(s, "katago-coreml").reclaimable_items == 1
    })
    .await;
    let p = producer(&s, "katago-coreml");
    assert_eq!(p.reclaimable_bytes, p.allocated_bytes);
    assert_eq!(p.orphan_bytes, p.allocated_bytes);
    m.shutdown().await;
}
