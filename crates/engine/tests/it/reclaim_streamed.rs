//! A plan streamed to a spool executes like a held one: each batch's rows first, a stop between
//! batches leaves the rest untouched and unrecorded, and a second run finishes the job.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use cachewatch::api::reclaim::{execute_streamed_batches, plan_streamed, BatchProgress};
use cachewatch::history::History;
use cachewatch_core::catalogue::Catalogue;
use cachewatch_core::process::SystemProbe;
use cachewatch_core::roots::{Root, RootKind};
use cachewatch_core::scan::ScanProgress;

#[test]
fn streamed_execute_writes_rows_per_batch_stops_between_batches_and_lists_each_deleted_item() {
    let cache = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    let dirs = cachewatch_testkit::tree::make_archives(cache.path(), "s", 1200, 1);
    cachewatch_testkit::tree::set_tree_mtime(cache.path(), cachewatch_testkit::tree::days_ago(2));
    let before_bytes = cachewatch_testkit::du::allocated(&dirs);
    let cat = Catalogue::builtin();
    let roots = vec![Root::new(RootKind::Cache, cache.path()).unwrap()];
    let history = Mutex::new(History::open(&db).unwrap());
    let probe = SystemProbe::snapshot();
    let run = |stop_after_first: bool, seen: &mut Vec<BatchProgress>, gone: &mut Vec<PathBuf>| {
        let now = SystemTime::now();
        let plan = plan_streamed(
            &roots,
            &cat,
            vec!["metal-gpuarchiver".into()],
            Duration::from_secs(3600),
            Vec::new(),
            &probe,
            now,
            &ScanProgress::new(),
        )
        .unwrap();
        let mut on_batch = |p: &BatchProgress, b: &cachewatch_core::reclaim::BatchOutcome| {
            seen.push(*p);
            gone.extend(b.deleted.iter().map(|d| d.path.clone()));
            if stop_after_first {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        execute_streamed_batches(&plan, &cat, &probe, &history, &db, now, 500, &mut on_batch)
            .unwrap()
    };
    let (mut seen, mut gone) = (Vec::new(), Vec::new());
    let first = run(true, &mut seen, &mut gone);
    assert!(first.report.errors.is_empty() && first.audit_errors.is_empty());
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].items_done, seen[0].items_total), (500, 1200));
    assert_eq!(seen[0].deleted_items, 500);
    assert_eq!(gone.len(), 500);
    assert!(gone.iter().all(|p| !p.exists()));
    assert_eq!(dirs.iter().filter(|d| d.exists()).count(), 700);
    let rows = history
        .lock()
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    assert_eq!(rows.len(), 500, "no row for an item never reached");
    assert!(rows
        .iter()
        .all(|r| r.outcome == "deleted" && !r.path.exists()));

    let (mut seen, mut gone2) = (Vec::new(), Vec::new());
    let second = run(false, &mut seen, &mut gone2);
    assert!(second.report.errors.is_empty());
    let done: Vec<u64> = seen.iter().map(|p| p.items_done).collect();
    assert_eq!(done, vec![500, 700]);
    assert!(dirs.iter().all(|d| !d.exists()));
    gone.extend(gone2);
    gone.sort();
    assert_eq!(gone, dirs);
    let rows = history
        .lock()
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    let paths: BTreeSet<&PathBuf> = rows.iter().map(|r| &r.path).collect();
    assert_eq!(rows.len(), 1200);
    assert_eq!(paths, dirs.iter().collect());
    // What du counted before, re-measured at delete time.
    assert_eq!(
        first.report.freed_bytes + second.report.freed_bytes,
        before_bytes
    );
}
