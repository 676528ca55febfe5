//! Nested roots (a temp root inside a cache root) counted their bytes twice in the totals. Each
//! root's own figure stays `du -s` of it; the totals over all roots (the snapshot's, the history's
//! `total` series) are `du -s` of the outer root, which holds the inner one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::dto::MonitorState;
use cachewatch::history::{History, Series};
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::clock::ManualClock;
use cachewatch_core::{Catalogue, Root, RootKind};

/// `du -B1 -s -x PATH` (allocated bytes).
fn du(path: &Path) -> u64 {
    cachewatch_testkit::du::allocated(&[path])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_inside_another_counts_once_in_the_totals() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().join("cache");
    let inner = outer.join("tmp");
    std::fs::create_dir_all(inner.join("sub")).unwrap();
    std::fs::write(outer.join("a.bin"), vec![1u8; 300_000]).unwrap();
    std::fs::write(inner.join("b.bin"), vec![2u8; 700_000]).unwrap();
    std::fs::write(inner.join("sub/c.bin"), vec![3u8; 90_000]).unwrap();
    let roots = vec![
        Root::new(RootKind::Cache, &outer).unwrap(),
        Root::new(RootKind::Temp, &inner).unwrap(),
    ];
    assert_eq!(
        cachewatch_core::roots::counted_in_totals(&roots),
        [true, false],
        "the inner root is in the outer one's scan"
    );
    let db = dir.path().join("data/cachewatch.db");
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let mut o = MonitorOptions::new(roots, Arc::new(Catalogue::builtin()));
    o.debounce = Duration::from_millis(50);
    o.db_path = Some(db.clone());
    o.clock = Arc::new(ManualClock::new(t0));
    let m = monitor::spawn(o).unwrap();
    let snap = m
        .subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap()
        .clone();
    m.flush().await.unwrap();
    m.shutdown().await;

    let (du_outer, du_inner) = (du(&outer), du(&inner));
    assert!(
        du_inner > 700_000 && du_outer > du_inner,
        "{du_outer} {du_inner}"
    );
    let by_kind = |k: &str| {
        snap.roots
            .iter()
            .find(|r| r.kind.as_str() == k)
            .unwrap()
            .allocated_bytes
    };
    assert_eq!(by_kind("cache"), du_outer);
    assert_eq!(by_kind("temp"), du_inner);
    assert_eq!(
        snap.total_allocated_bytes,
        du_outer,
        "not {}",
        du_outer + du_inner
    );

    let h = History::open_read_only(&db).unwrap();
    let total = h.points(&Series::Total, t0, t0).unwrap();
    assert_eq!(total, [(t0, du_outer)]);
}

#[test]
fn sibling_roots_and_a_root_given_alone_all_count() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("ab"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let roots = [
        Root::new(RootKind::Temp, &a).unwrap(),
        Root::new(RootKind::Cache, &b).unwrap(),
    ];
    // `ab` is not inside `a` (components, not string prefixes).
    assert_eq!(
        cachewatch_core::roots::counted_in_totals(&roots),
        [true, true]
    );
}

/// Regression: an item under a root nested in another (`cache=C`, `cache=C/com.foo`) was an item
/// of both roots, so the producer's figures counted it twice. The monitor attributes it in the
/// innermost root only, after its first scan and after events inside the inner root; each root's
/// figure stays `du -s` of it, and the inner root is not an unattributed entry of the outer one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_under_a_nested_root_counts_once_in_the_producer_figures() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().join("cache");
    let inner = outer.join("com.foo");
    let archive = |parent: &Path, name: &str, len: usize| {
        let d = parent.join("com.apple.gpuarchiver").join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("PersistentState"), vec![7u8; len]).unwrap();
        d
    };
    let mut archives = vec![
        archive(&outer, "gpuarchiver-out", 12_000),
        archive(&inner, "gpuarchiver-in1", 30_000),
    ];
    let roots = vec![
        Root::new(RootKind::Cache, &outer).unwrap(),
        Root::new(RootKind::Cache, &inner).unwrap(),
    ];
    let mut o = MonitorOptions::new(roots, Arc::new(Catalogue::builtin()));
    o.debounce = Duration::from_millis(50);
    let m = monitor::spawn(o).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();
    let check = |when: &str, archives: &[std::path::PathBuf]| {
        let s = m.snapshot();
        let gpu = s
            .producers
            .iter()
            .find(|p| p.id == "metal-gpuarchiver")
            .unwrap();
        let du_archives: u64 = archives.iter().map(|a| du(a)).sum();
        assert_eq!(
            (gpu.items, gpu.allocated_bytes),
            (archives.len() as u64, du_archives),
            "{when}"
        );
        assert_eq!(s.roots[0].allocated_bytes, du(&outer), "{when}");
        assert_eq!(s.roots[1].allocated_bytes, du(&inner), "{when}");
        assert!(
            s.unattributed.iter().all(|u| Path::new(&u.path) != inner),
            "{when}: {:?}",
            s.unattributed
        );
    };
    check("after the first scan", &archives);

    archives.push(archive(&inner, "gpuarchiver-in2", 20_000));
    m.flush().await.unwrap();
    check(
        "after an archive was added inside the inner root",
        &archives,
    );
    m.shutdown().await;
}
