//! The app's preview sent every planned item over IPC (700k rows of JSON) and the
//! monitor held the whole plan. The preview is now bounded: counts and sums of the whole plan, the
//! largest items only; execute still deletes every planned item (and only those), audit rows
//! first, and its result counts them all while listing the first few.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::dto::MonitorState;
use cachewatch::dto::{PREVIEW_ITEMS, RESULT_ITEMS};
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::{Catalogue, Root, RootKind};

const GPU: &str = "metal-gpuarchiver";
const DAY: Duration = Duration::from_secs(86_400);

/// Allocated bytes of `paths` by `du`, each and in all.
fn du(paths: &[PathBuf]) -> Vec<u64> {
    cachewatch_testkit::du::each("-B1", paths)
}

/// `n` archive dirs of distinct sizes (one file of 5000 + i × 4096 bytes); with `age`, modified
/// that long ago.
fn make_archives(root: &Path, n: usize, tag: &str, age: Option<Duration>) -> Vec<PathBuf> {
    let parent = root.join("org.julialang.julia/com.apple.gpuarchiver");
    std::fs::create_dir_all(&parent).unwrap();
    (0..n)
        .map(|i| {
            let d = parent.join(format!("gpuarchiver-{tag}{i:04}"));
            std::fs::create_dir(&d).unwrap();
            let f = d.join("PersistentState");
            std::fs::write(&f, vec![3u8; 5000 + i * 4096]).unwrap();
            if let Some(age) = age {
                let t = SystemTime::now() - age;
                let file = File::options().write(true).open(&f).unwrap();
                file.set_modified(t).unwrap();
                File::open(&d).unwrap().set_modified(t).unwrap();
            }
            d
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_of_more_items_than_it_lists_counts_them_all_and_execute_deletes_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let n = PREVIEW_ITEMS + RESULT_ITEMS / 2 + 7;
    let old = make_archives(&root, n, "old", Some(2 * DAY));
    let young = make_archives(&root, 5, "new", None);
    let data = tempfile::tempdir().unwrap();
    let root_ = Root::new(RootKind::Cache, &root).unwrap();
    let mut opts = MonitorOptions::new(vec![root_], Arc::new(Catalogue::builtin()));
    opts.db_path = Some(data.path().join("cachewatch.db"));
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();

    let plan = m.plan_reclaim(vec![GPU.into()], DAY).await.unwrap();
    let sizes = du(&old);
    assert_eq!(plan.planned_items, n as u64);
    assert_eq!(plan.planned_bytes, sizes.iter().sum::<u64>());
    assert_eq!(plan.kept_items, young.len() as u64);
    assert_eq!(plan.kept.len(), 1);
    assert_eq!(
        (plan.kept[0].reason.as_str(), plan.kept[0].items),
        ("too-young", young.len() as u64)
    );
    assert_eq!(plan.producers.len(), 1);
    assert_eq!(plan.producers[0].items, n as u64);
    // The largest PREVIEW_ITEMS, largest first: the last ones made, by du.
    assert_eq!(plan.largest.len(), PREVIEW_ITEMS);
    let mut by_size: Vec<(u64, &PathBuf)> = sizes.iter().copied().zip(&old).collect();
    by_size.sort_by_key(|b| std::cmp::Reverse(b.0));
    let want: Vec<&PathBuf> = by_size
        .iter()
        .take(PREVIEW_ITEMS)
        .map(|(_, p)| *p)
        .collect();
    let got: Vec<&PathBuf> = plan.largest.iter().map(|i| &i.path).collect();
    assert_eq!(got, want);
    let json = serde_json::to_vec(&plan).unwrap().len();
    println!("preview of {n} items: {json} bytes of JSON");

    let result = m.execute_reclaim(plan.id.clone()).await.unwrap();
    assert_eq!(result.deleted_items, n as u64);
    assert_eq!(result.deleted.len(), RESULT_ITEMS);
    assert_eq!(result.freed_bytes, plan.planned_bytes);
    assert_eq!((result.error_count, result.kept_items), (0, 0));
    assert!(old.iter().all(|d| !d.exists()));
    assert!(young.iter().all(|d| d.exists()));
    m.shutdown().await;
    let h = cachewatch::history::History::open(&data.path().join("cachewatch.db")).unwrap();
    let rows = h.reclaims(std::time::UNIX_EPOCH).unwrap();
    assert_eq!(rows.len(), n, "an audit row per deletion");
    assert!(rows.iter().all(|r| r.outcome == "deleted"), "{rows:?}");
}
