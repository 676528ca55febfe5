//! A plan made while scanning (`plan_streamed`) plans exactly what the held plan does, past the
//! point where its items move to a temp file, and executing it batch by batch deletes exactly
//! those items.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{
    plan, plan_streamed, Batch, ExecuteOptions, Executor, Policy, MEMORY_RECORDS,
};
use cachewatch_core::scan::{scan, ScanProgress};
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::du;
use cachewatch_testkit::tree::{days_ago, make_archives, set_tree_mtime};

const YOUNG: usize = 37;

#[test]
fn a_streamed_plan_spilled_to_disk_equals_the_held_plan_and_executes_exactly_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let old_n = MEMORY_RECORDS + 1500;
    let old = make_archives(&cache, "o", old_n, 1);
    set_tree_mtime(&cache, days_ago(2));
    let young = make_archives(&cache, "y", YOUNG, 1);
    let roots = vec![Root::new(RootKind::Cache, &cache).unwrap()];
    let cat = Catalogue::builtin();
    let probe = SystemProbe::snapshot();
    let now = SystemTime::now();
    let policy = Policy {
        older_than: Duration::from_secs(3600),
        producers: Vec::new(),
        protected: Vec::new(),
    };

    let held = plan(&scan(&roots, &cat, now), &cat, &policy, &probe, now);
    let progress = ScanProgress::new();
    let streamed = plan_streamed(&roots, &cat, &policy, &probe, now, &progress).unwrap();
    assert_eq!(held.items.len(), old_n);
    assert!(
        !streamed.in_path_order(),
        "past {MEMORY_RECORDS} items the plan is on disk"
    );
    let mut planned: Vec<_> = streamed.planned().map(Result::unwrap).collect();
    planned.sort_by(|a, b| a.path.cmp(&b.path));
    // Every field, times to the nanosecond, survives the spool.
    assert_eq!(planned, held.items);
    let mut kept: Vec<_> = streamed.kept().map(Result::unwrap).collect();
    kept.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(kept, held.kept);
    let s = &streamed.summary;
    assert_eq!(s.planned_items, old_n as u64);
    assert_eq!(s.planned_bytes, held.planned_bytes);
    assert_eq!(s.planned_bytes, du::allocated(&old));
    assert_eq!(s.producers["metal-gpuarchiver"].items, old_n as u64);
    assert_eq!(s.kept_items, YOUNG as u64);
    let too_young = &s.kept[&("metal-gpuarchiver".to_owned(), "too-young".to_owned())];
    assert_eq!(too_young.items, YOUNG as u64);
    assert_eq!(streamed.policy, held.policy);
    assert_eq!(streamed.roots, held.roots);
    // 2 entries per item, the structure dir, less the root's own entry.
    assert_eq!(progress.entries(), 2 * (old_n + YOUNG) as u64 + 1);

    let before = du::allocated(&old);
    let mut exec = Executor::streamed(
        &streamed.policy,
        &streamed.roots,
        &streamed.item_roots,
        &cat,
        &probe,
        SystemTime::now(),
        ExecuteOptions::default(),
    )
    .unwrap();
    let mut items = streamed.planned();
    let (mut first, mut deleted, mut batches) = (0, Vec::<PathBuf>::new(), 0);
    loop {
        let batch: Vec<_> = items.by_ref().take(1024).map(Result::unwrap).collect();
        if batch.is_empty() {
            break;
        }
        let done = exec.run_batch(Batch {
            first,
            items: &batch,
        });
        assert_eq!(done.records.len(), batch.len());
        first += batch.len();
        batches += 1;
        deleted.extend(done.deleted.into_iter().map(|d| d.path));
    }
    assert_eq!(batches, old_n.div_ceil(1024));
    assert_eq!(exec.deleted_items(), old_n as u64);
    let report = exec.finish();
    assert!(report.deleted.is_empty(), "a streamed report lists no item");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.freed_bytes, before);
    deleted.sort();
    assert_eq!(deleted, old);
    assert!(old.iter().all(|d| !d.exists()));
    assert!(young.iter().all(|d| d.exists()));
}
