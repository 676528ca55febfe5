//! A watched root swapped for a symbolic link, or removed, under a live monitor: the snapshot,
//! `/metrics` and an alert say so, nothing is counted (or written) through the link, and a real
//! dir at the path again is rescanned, its figures equal to `du`. Driven by `flush()` (which looks
//! at the roots' paths first), not by sleeps.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cachewatch::dto::{RootStatus, WatchMode};
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, scrape, tree::make_archives};

const GPU: &str = "metal-gpuarchiver";

fn start(root: Root) -> MonitorHandle {
    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.debounce = Duration::from_millis(50);
    monitor::spawn(opts).unwrap()
}

fn producer(s: &Snapshot) -> (u64, u64) {
    s.producers
        .iter()
        .find(|p| p.id == GPU)
        .map_or((0, 0), |p| (p.items, p.allocated_bytes))
}

/// The `/metrics` page of `srv` (a blocking GET off the async threads).
async fn page(addr: std::net::SocketAddr) -> String {
    tokio::task::spawn_blocking(move || scrape::page(&addr.to_string()))
        .await
        .unwrap()
}

/// `kind="cache",path="<path>"`, as the page labels the root.
fn labels(path: &Path) -> String {
    format!("{{kind=\"cache\",path=\"{}\"}}", path.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_swapped_for_a_link_is_reported_never_followed_and_rescanned_when_back() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let path = base.join("cache");
    let first = make_archives(&path.join("org.example.app"), "a", 6, 2);
    // What the link will lead to: archives of its own, never to be counted.
    let other = base.join("other");
    make_archives(&other.join("org.example.other"), "o", 9, 1);
    let root = Root::new(RootKind::Cache, &path).unwrap();
    let m = start(root);
    let srv = cachewatch::metrics::serve("127.0.0.1:0".parse().unwrap(), m.subscribe(), m.alerts())
        .await
        .unwrap();
    let addr = srv.local_addr();
    let mut alerts = m.alerts();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].state, RootStatus::Ok);
    assert_eq!(producer(&s), (6, du::allocated(&first)));
    assert_eq!(s.roots[0].allocated_bytes, du::allocated(&[&path]));
    let body = page(addr).await;
    assert!(
        body.contains(&format!("cachewatch_root_up{} 1\n", labels(&path))),
        "{body}"
    );

    // The attack: the root dir moved away and a link to another dir put in its place.
    std::fs::rename(&path, base.join("cache.old")).unwrap();
    std::os::unix::fs::symlink(&other, &path).unwrap();
    let other_mtime = std::fs::metadata(&other).unwrap().modified().unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    let r = &s.roots[0];
    assert_eq!(r.state, RootStatus::ReplacedByLink);
    assert_eq!(r.watch_mode, WatchMode::Off);
    // The old figures are no longer served, and the link's target is not counted.
    assert_eq!((r.allocated_bytes, r.items), (0, 0));
    assert_eq!(producer(&s), (0, 0));
    assert!(
        s.errors.iter().any(|e| e.contains("symbolic link")),
        "{:?}",
        s.errors
    );
    let alert = tokio::time::timeout(Duration::from_secs(10), alerts.recv())
        .await
        .expect("a root-gone alert")
        .unwrap();
    assert_eq!(alert.rule, "root-gone");
    assert!(
        alert.message.contains(&*path.to_string_lossy()),
        "{}",
        alert.message
    );
    assert!(alert.message.contains("symbolic link"), "{}", alert.message);
    let body = page(addr).await;
    assert!(
        body.contains(&format!("cachewatch_root_up{} 0\n", labels(&path))),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "cachewatch_root_allocated_bytes{} 0\n",
            labels(&path)
        )),
        "{body}"
    );
    assert!(
        !body.contains("cachewatch_producer_items{producer=\"metal-gpuarchiver\"} 9"),
        "{body}"
    );
    // A rescan asked for meanwhile does not go through the link either, and no flush marker
    // was written into the link's target (its mtime did not move).
    m.rescan().await.unwrap();
    m.flush().await.unwrap();
    assert_eq!(producer(&m.snapshot()), (0, 0));
    assert_eq!(m.snapshot().roots[0].state, RootStatus::ReplacedByLink);
    assert_eq!(
        std::fs::metadata(&other).unwrap().modified().unwrap(),
        other_mtime
    );

    // A real dir again (the old one put back, with more in it): rescanned, watched, equal to du.
    std::fs::remove_file(&path).unwrap();
    std::fs::rename(base.join("cache.old"), &path).unwrap();
    let second = make_archives(&path.join("org.example.app"), "b", 4, 1);
    m.flush().await.unwrap();
    let s = m.snapshot();
    let all: Vec<PathBuf> = first.iter().chain(&second).cloned().collect();
    assert_eq!(s.roots[0].state, RootStatus::Ok);
    assert_eq!(s.roots[0].watch_mode, WatchMode::Events);
    assert_eq!(producer(&s), (10, du::allocated(&all)));
    assert_eq!(s.roots[0].allocated_bytes, du::allocated(&[&path]));
    let body = page(addr).await;
    assert!(
        body.contains(&format!("cachewatch_root_up{} 1\n", labels(&path))),
        "{body}"
    );
    // Events flow from the dir that came back.
    let third = make_archives(&path.join("org.example.app"), "c", 3, 1);
    m.flush().await.unwrap();
    let all: Vec<PathBuf> = all.into_iter().chain(third).collect();
    assert_eq!(producer(&m.snapshot()), (13, du::allocated(&all)));
    assert_eq!(
        m.snapshot().roots[0].allocated_bytes,
        du::allocated(&[&path])
    );
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_root_is_missing_and_a_dir_swapped_for_another_is_rescanned() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let path = base.join("cache");
    let first = make_archives(&path.join("org.example.app"), "a", 5, 1);
    let m = start(Root::new(RootKind::Cache, &path).unwrap());
    let mut alerts = m.alerts();
    m.flush().await.unwrap();
    assert_eq!(producer(&m.snapshot()), (5, du::allocated(&first)));

    // Another dir moved in at the same path: the watches were on the old one; the new one is
    // watched and its figures are the new dir's.
    let staged = base.join("staged");
    let swapped = make_archives(&staged.join("org.example.app"), "s", 2, 1);
    std::fs::rename(&path, base.join("cache.old")).unwrap();
    std::fs::rename(&staged, &path).unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].state, RootStatus::Ok);
    let swapped: Vec<PathBuf> = swapped
        .iter()
        .map(|d| path.join(d.strip_prefix(&staged).unwrap()))
        .collect();
    assert_eq!(producer(&s), (2, du::allocated(&swapped)));
    assert_eq!(s.roots[0].allocated_bytes, du::allocated(&[&path]));
    // And its events come through.
    let more = make_archives(&path.join("org.example.app"), "m", 3, 1);
    m.flush().await.unwrap();
    let all: Vec<PathBuf> = swapped.into_iter().chain(more).collect();
    assert_eq!(producer(&m.snapshot()), (5, du::allocated(&all)));

    std::fs::remove_dir_all(&path).unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].state, RootStatus::Missing);
    assert_eq!(producer(&s), (0, 0));
    let alert = tokio::time::timeout(Duration::from_secs(10), alerts.recv())
        .await
        .expect("a root-gone alert")
        .unwrap();
    assert_eq!(alert.rule, "root-gone");
    assert!(alert.message.contains("removed"), "{}", alert.message);
    // The snapshot serializes the state as a word.
    let json = serde_json::to_value(&*s).unwrap();
    assert_eq!(json["roots"][0]["state"], "missing");
    m.shutdown().await;
}
