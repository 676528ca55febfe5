//! What a stream of new unattributed entries costs in samples of the process table: 1,000 new
//! members written over about ten seconds (six times the rate of 1,000 a minute) into a running
//! monitor get at most one sample a second, counted by the monitor
//! ([`MonitorOptions::process_samples`]), not timed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cachewatch::dto::MonitorState;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::leakwriter::unix_now;

const MEMBERS: u32 = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_new_members_cost_at_most_one_process_table_sample_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, &root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.debounce = Duration::from_millis(50);
    let samples = opts.process_samples.clone();
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    // An empty root at rest: nothing to sample for.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(samples.load(Ordering::Relaxed), 0, "sampled at rest");

    let started = Instant::now();
    for n in 0..MEMBERS {
        let name = format!("brs_{}_{}.dat", 4_200_000 + n * 3, unix_now());
        std::fs::write(root.join(name), "x").unwrap();
        // 100 a second.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    m.flush().await.unwrap();
    let s = m.snapshot();
    let items: u64 = s
        .unattributed_groups
        .iter()
        .filter(|g| g.shape.starts_with("brs_"))
        .map(|g| g.items)
        .sum();
    assert_eq!(
        items,
        u64::from(MEMBERS),
        "every member reached the monitor"
    );
    // The burst's last look a second after its end, then nothing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let taken = samples.load(Ordering::Relaxed);
    let elapsed = started.elapsed();
    assert!(taken >= 1, "the new members were never sampled for");
    assert!(
        taken <= elapsed.as_secs() + 1,
        "{taken} samples of the process table in {elapsed:?}"
    );
    println!("{taken} process table samples for {MEMBERS} new members in {elapsed:?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        samples.load(Ordering::Relaxed),
        taken,
        "sampled again at rest"
    );
    m.shutdown().await;
}
