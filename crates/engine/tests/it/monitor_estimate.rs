//! The threshold control asked for a full plan at every move (700k items walked and
//! sent each time). The monitor keeps per producer an age histogram of what a reclaim could take
//! but for age; `estimate_reclaim` reads it without walking the items. With a fixed clock and
//! items at known ages, its figures at several thresholds equal a hand count (du of the items
//! old enough) and what a real plan takes, and stay right as the clock moves on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::dto::MonitorState;
use cachewatch::monitor::{self, MonitorError, MonitorHandle, MonitorOptions};
use cachewatch_core::clock::ManualClock;
use cachewatch_core::{Catalogue, Root, RootKind};

const GPU: &str = "metal-gpuarchiver";
const MIN: u64 = 60;
const HOUR: u64 = 3600;
const DAY: u64 = 86_400;

fn du_total(paths: &[&PathBuf]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

/// One archive dir per age in `ages_secs`, its file and itself modified that long before `now`.
fn make_archives(root: &Path, ages_secs: &[u64], now: SystemTime) -> Vec<(PathBuf, u64)> {
    let parent = root.join("org.julialang.julia/com.apple.gpuarchiver");
    std::fs::create_dir_all(&parent).unwrap();
    ages_secs
        .iter()
        .enumerate()
        .map(|(i, &age)| {
            let d = parent.join(format!("gpuarchiver-{i:04}"));
            std::fs::create_dir(&d).unwrap();
            let f = d.join("PersistentState");
            std::fs::write(&f, vec![3u8; 5000 + i * 4096]).unwrap();
            let t = now - Duration::from_secs(age);
            File::options()
                .write(true)
                .open(&f)
                .unwrap()
                .set_modified(t)
                .unwrap();
            File::open(&d).unwrap().set_modified(t).unwrap();
            (d, age)
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

/// Checks the estimate at `threshold` against a hand count of `items` (age in seconds at the
/// clock's time) and against a real plan.
async fn check(m: &MonitorHandle, items: &[(PathBuf, u64)], threshold: u64, floor: u64) {
    let old: Vec<&PathBuf> = items
        .iter()
        .filter(|(_, age)| *age >= threshold.max(floor))
        .map(|(p, _)| p)
        .collect();
    let est = m
        .estimate_reclaim(Vec::new(), Duration::from_secs(threshold))
        .await
        .unwrap();
    assert_eq!(est.threshold_secs, threshold);
    assert_eq!(
        est.items,
        old.len() as u64,
        "items at {threshold} s: {est:?}"
    );
    assert_eq!(
        est.allocated_bytes,
        du_total(&old),
        "bytes at {threshold} s"
    );
    let plan = m
        .plan_reclaim(vec![GPU.into()], Duration::from_secs(threshold))
        .await
        .unwrap();
    assert_eq!(
        (est.items, est.allocated_bytes, est.freeable_bytes),
        (
            plan.planned_items,
            plan.planned_bytes,
            plan.planned_freeable_bytes
        ),
        "the estimate at {threshold} s is what a plan takes"
    );
    let per: u64 = est.producers.iter().map(|p| p.items).sum();
    assert_eq!(per, est.items);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threshold_estimate_equals_a_hand_count_and_a_real_plan() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let t0 = SystemTime::now();
    // Ages away from every threshold below by more than a bucket (a minute under a day old, an
    // hour under 30 days); 2 min is under the rule's 300 s floor.
    let ages = [
        2 * MIN,
        10 * MIN,
        10 * MIN,
        2 * HOUR,
        2 * HOUR,
        2 * HOUR,
        2 * DAY,
        2 * DAY,
        2 * DAY,
        2 * DAY,
        10 * DAY,
        10 * DAY,
        40 * DAY,
    ];
    let mut items = make_archives(&root, &ages, t0);
    let catalogue = Arc::new(Catalogue::builtin());
    let floor = catalogue.rule(GPU).unwrap().min_age_secs;
    assert_eq!(floor, 5 * MIN, "the ages above are chosen for this floor");
    let clock = Arc::new(ManualClock::new(t0));
    let mut opts = MonitorOptions::new(vec![Root::new(RootKind::Cache, &root).unwrap()], catalogue);
    opts.debounce = Duration::from_millis(50);
    opts.threshold = Duration::from_secs(HOUR);
    opts.clock = clock.clone();
    let m = monitor::spawn(opts).unwrap();
    ready(&m).await;
    for threshold in [0, 30 * MIN, HOUR, DAY, 5 * DAY, 30 * DAY, 60 * DAY] {
        check(&m, &items, threshold, floor).await;
    }
    // A day later, before any refresh of the figures: the buckets are absolute times, so what
    // was in them is aged right (thresholds that leave out the item that was under its floor,
    // which is in no histogram until the refresh its crossing makes due).
    clock.advance(Duration::from_secs(DAY));
    for (_, age) in &mut items {
        *age += DAY;
    }
    for threshold in [2 * DAY, 5 * DAY, 30 * DAY] {
        check(&m, &items, threshold, floor).await;
    }
    // The refresh due at its crossing (the monitor's tick) takes it in.
    let mut rx = m.subscribe();
    let every = items.len() as u64;
    let refreshed = rx.wait_for(|s| {
        s.producers
            .iter()
            .any(|p| p.id == GPU && p.reclaimable_items == every)
    });
    tokio::time::timeout(Duration::from_secs(60), refreshed)
        .await
        .expect("the figures are refreshed once an item crosses its floor")
        .unwrap();
    for threshold in [0, HOUR, DAY, 2 * DAY, 5 * DAY, 30 * DAY] {
        check(&m, &items, threshold, floor).await;
    }
    let bad = m
        .estimate_reclaim(vec!["no-such-producer".into()], Duration::ZERO)
        .await;
    assert!(
        matches!(bad, Err(MonitorError::UnknownProducer { .. })),
        "{bad:?}"
    );
    m.shutdown().await;
}
