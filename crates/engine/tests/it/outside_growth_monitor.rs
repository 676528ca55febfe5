//! The monitor records its roots' volume free space with every history sample and publishes the
//! growth outside the roots in the snapshot, on a real tree and a real history DB.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::dto::MonitorState;
use cachewatch::history::{History, Series};
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::clock::ManualClock;
use cachewatch_core::{Catalogue, Root, RootKind};

/// `df`'s available bytes of the volume holding `path` (`df -B1 --output=avail`).
fn df_avail(path: &std::path::Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_sample_records_the_volume_free_space_and_the_snapshot_compares_it_with_the_roots() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a"), vec![7u8; 64 << 10]).unwrap();
    let db = dir.path().join("data/cachewatch.db");
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let clock = Arc::new(ManualClock::new(t0));
    let r = Root::new(RootKind::Cache, &root).unwrap();
    let mut o = MonitorOptions::new(vec![r], Arc::new(Catalogue::builtin()));
    o.debounce = Duration::from_millis(50);
    o.db_path = Some(db.clone());
    o.clock = clock.clone();
    o.sample_interval = Duration::from_secs(600);
    let m = monitor::spawn(o).unwrap();
    let mut rx = m.subscribe();
    rx.wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();
    let df_at_first_sample = df_avail(&root);

    // The next sample, with no change in the root.
    clock.advance(Duration::from_secs(601));
    let snap = tokio::time::timeout(
        Duration::from_secs(30),
        rx.wait_for(|s| !s.unexplained_growth.is_empty()),
    )
    .await
    .expect("a second sample within 30 s (the tick is 5 s)")
    .unwrap()
    .clone();
    m.shutdown().await;

    let mount = snap.roots[0].mount.clone().expect("the root's volume");
    let h = History::open_read_only(&db).unwrap();
    let free = h
        .points(
            &Series::VolumeFree {
                mount: mount.clone().into(),
            },
            t0,
            t0 + Duration::from_secs(601),
        )
        .unwrap();
    let times: Vec<SystemTime> = free.iter().map(|p| p.0).collect();
    assert_eq!(times, [t0, t0 + Duration::from_secs(601)]);
    // Free space moves with other writers on this machine: close to df's, not equal.
    assert!(
        free[0].1.abs_diff(df_at_first_sample) < 1 << 30,
        "recorded {} vs df {df_at_first_sample}",
        free[0].1
    );
    let u = &snap.unexplained_growth[0];
    assert_eq!(u.mount, mount);
    assert_eq!(u.roots_growth_bytes, 0, "the root did not change");
    assert_eq!(u.free_fall_bytes, free[0].1 as i64 - free[1].1 as i64);
    assert_eq!(u.unexplained_bytes, u.free_fall_bytes);
    assert_eq!(
        (u.from_unix_secs, u.to_unix_secs),
        (1_900_000_000, 1_900_000_601)
    );
}
