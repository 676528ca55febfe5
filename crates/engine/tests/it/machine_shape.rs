//! The monitor's first scan of a developer's `/tmp` (two cargo target dirs, a test workspace of
//! nested big dirs, a chain of dirs deeper than the fd budget) ends, its progress moves while a
//! root is scanned, and its totals equal `du`. On such a `/tmp` the first scan used to never end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use cachewatch::dto::MonitorState;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::{Catalogue, Root, RootKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_scan_of_a_developers_tmp_ends_and_equals_du() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let made = cachewatch_testkit::hostile::developer_tmp(&tmp, 7);
    let mut o = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, &tmp).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    o.debounce = Duration::from_millis(50);
    let m = monitor::spawn(o).unwrap();
    let mut rx = m.subscribe();
    let scanned = tokio::time::timeout(
        Duration::from_secs(300),
        rx.wait_for(|s| s.state != MonitorState::Scanning),
    )
    .await
    .expect("the first scan did not end within 300 s")
    .unwrap()
    .clone();
    m.shutdown().await;
    let root = &scanned.roots[0];
    assert_eq!(
        root.allocated_bytes,
        cachewatch_testkit::du::allocated(&[&tmp])
    );
    assert_eq!(
        root.apparent_bytes,
        cachewatch_testkit::du::apparent(&[&tmp])
    );
    // Every entry below the root was listed and counted in the progress (links are entries too).
    let entries = made.files + made.dirs + made.symlinks + made.hard_links;
    assert_eq!(scanned.scan_progress.entries_done, entries);
}
