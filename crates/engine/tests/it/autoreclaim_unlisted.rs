//! A monitor drain that deletes more than `LISTED_MAX` (16,384) items lists none of their paths:
//! the monitor rescans its roots instead of re-measuring each deleted path. Its figures must still
//! reach `du` of what is left, the young items stay, and every deletion has its audit row.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cachewatch::autoreclaim::run::{run_streamed, RunContext, LISTED_MAX};
use cachewatch::autoreclaim::{AutoRule, Trigger};
use cachewatch::clock::ManualClock;
use cachewatch::history::History;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch::process::SystemProbe;
use cachewatch::scan::ScanProgress;
use cachewatch::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, tree};

const RULES: &str = cachewatch_testkit::rules::MY_APP_TEMP;
const ID: &str = cachewatch_testkit::rules::MY_APP_TEMP_ID;
const DEAD: u32 = cachewatch_testkit::rules::DEAD_PID;
const HOUR: Duration = Duration::from_secs(3600);
/// Old items to drain: past [`LISTED_MAX`].
const OLD: usize = 17_000;
const YOUNG: usize = 25;

fn catalogue() -> Catalogue {
    Catalogue::with_extra(RULES, Path::new("config.toml")).unwrap()
}

fn rule() -> AutoRule {
    AutoRule {
        name: "scratch".into(),
        producers: vec![ID.into()],
        older_than: HOUR,
        every: Some(HOUR),
        when_items_over: None,
        when_bytes_over: None,
        when_free_below: None,
    }
}

/// `OLD` empty `my-app-<dead pid>` dirs two days old and `YOUNG` new ones holding a file, each
/// list sorted.
fn tree_of(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let two_days = tree::days_ago(2);
    let mut old: Vec<PathBuf> = (0..OLD as u32)
        .map(|k| {
            let d = root.join(format!("my-app-{}", DEAD + k));
            std::fs::create_dir(&d).unwrap();
            tree::set_mtime(&d, two_days);
            d
        })
        .collect();
    let mut young: Vec<PathBuf> = (0..YOUNG as u32)
        .map(|k| {
            let d = root.join(format!("my-app-{}", DEAD + OLD as u32 + k));
            std::fs::create_dir(&d).unwrap();
            tree::write_file(&d.join("data"), 3000 + k as usize * 1000);
            d
        })
        .collect();
    old.sort();
    young.sort();
    (old, young)
}

/// The audit rows of `db`: `(path, outcome)`, sorted.
fn audit_rows(db: &Path) -> Vec<(PathBuf, String)> {
    let h = History::open_read_only(db).unwrap();
    let mut rows: Vec<(PathBuf, String)> = h
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap()
        .into_iter()
        .map(|r| (r.path, r.outcome.to_string()))
        .collect();
    rows.sort();
    rows
}

/// The monitor drains 17,000 old items (planned 512 at a time): its root's totals end at `du`
/// of what is left (reached by a rescan, the deleted paths not being listed), the young items and
/// their figures stay, and each deleted item has one `deleted` audit row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_past_the_listed_max_rescans_and_reaches_du_figures() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    let root = Root::new(RootKind::Temp, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let (old, young) = tree_of(&canonical);
    let freed = du::allocated(&old);

    let mut opts = MonitorOptions::new(vec![root], Arc::new(catalogue()));
    opts.debounce = Duration::from_millis(50);
    opts.clock = Arc::new(ManualClock::new(SystemTime::now()));
    opts.db_path = Some(db.clone());
    opts.plan_chunk = 512;
    opts.auto_reclaim = vec![rule()];
    let m = monitor::spawn(opts).unwrap();
    let s = m
        .subscribe()
        .wait_for(|s| s.auto_reclaim.rules.first().is_some_and(|r| r.runs >= 1))
        .await
        .unwrap()
        .clone();
    let run = s.auto_reclaim.rules[0].last_run.clone().unwrap();
    assert_eq!(
        (run.status.as_str(), run.planned_items, run.deleted_items),
        ("done", OLD as u64, OLD as u64)
    );
    assert_eq!(run.kept.get("too-young"), Some(&(YOUNG as u64)));
    assert_eq!((run.freed_bytes, run.errors), (freed, 0));
    // The drain's 51,000 inotify events (a delete in the root, and the delete and end of each
    // item dir's own watch) can take a debug build on a loaded box past one flush's timeout: the
    // flush is asked again until it comes back.
    let mut tries = 0;
    while let Err(e) = m.flush().await {
        tries += 1;
        assert!(tries < 15, "no flush came back: {e}");
    }
    let s = m.snapshot();
    m.shutdown().await;

    assert!(old.iter().all(|p| !p.exists()), "every old item deleted");
    assert!(young.iter().all(|p| p.exists()), "the young items stay");
    let r = &s.roots[0];
    // One rescan for the unlisted drain, maybe one more if its events overflowed the queue.
    assert!(r.rescans >= 1, "the unlisted drain rescanned the root");
    assert_eq!(
        (r.allocated_bytes, r.apparent_bytes),
        (du::allocated(&[&canonical]), du::apparent(&[&canonical]))
    );
    let p = s.producers.iter().find(|p| p.id == ID).unwrap();
    assert_eq!(
        (p.items, p.allocated_bytes),
        (YOUNG as u64, du::allocated(&young))
    );
    let want: Vec<(PathBuf, String)> = old.iter().map(|p| (p.clone(), "deleted".into())).collect();
    assert_eq!(audit_rows(&db), want, "one `deleted` row per drained item");
}

/// The run itself says its deleted paths are not listed past [`LISTED_MAX`], while still counting
/// every one of them.
#[test]
fn a_streamed_run_past_the_listed_max_lists_no_path() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    let root = Root::new(RootKind::Temp, dir.path()).unwrap();
    let (old, young) = tree_of(&root.canonical);
    let cat = catalogue();
    let probe = SystemProbe::snapshot();
    let now = SystemTime::now();
    let rule = rule();
    let plan = cachewatch::api::reclaim::plan_streamed(
        std::slice::from_ref(&root),
        &cat,
        rule.producers.clone(),
        rule.older_than,
        Vec::new(),
        &probe,
        now,
        &ScanProgress::new(),
    );
    let history = Mutex::new(History::open(&db).unwrap());
    let cancel = AtomicBool::new(false);
    let clock = SystemTime::now;
    let cx = RunContext {
        catalogue: &cat,
        protected: Vec::new(),
        history: &history,
        db_path: &db,
        probe: &probe,
        batch_size: 1000,
        cancel: &cancel,
        now: &clock,
    };
    let out = run_streamed(&rule, Trigger::Manual, plan, now, &cx, &mut |_| {});
    const { assert!(OLD > LISTED_MAX) };
    assert!(out.unlisted && out.deleted.is_empty());
    assert_eq!(out.run.deleted_items, OLD as u64);
    assert!(old.iter().all(|p| !p.exists()) && young.iter().all(|p| p.exists()));
}
