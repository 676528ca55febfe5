//! A leak kept down by a rule, on a real tree and the real clock: a thread adds a
//! `gpuarchiver-*` dir every 100 ms for 10 s while the monitor runs a rule `older_than = "2s"`,
//! `every = "1s"` (the producer's floor lowered to 1 s by a test catalogue). And the batched,
//! audited execute the drains use: rows per batch, stopped between batches.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cachewatch::api::reclaim::{run_batches, AuditNotWritten, AuditedReport, BatchProgress};
use cachewatch::autoreclaim::AutoRule;
use cachewatch::history::History;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch::process::{ProcessProbe, SystemProbe};
use cachewatch::reclaim::{ExecuteOptions, Executor, PlannedItem, Policy, ReclaimPlan};
use cachewatch::snapshot::MonitorState;
use cachewatch::{Catalogue, Root, RootKind};

const LEAK: &str = r#"
[[producer]]
id = "test-gpuarchiver"
name = "Test archive dirs"
root = "temp"
item = "gpuarchiver-*"
kind = "leak"
reclaim = "auto"
min_age_secs = 1
evidence = ["https://example.invalid/leak"]
examples = ["gpuarchiver-0001"]
counter_examples = ["other"]
"#;
const ID: &str = "test-gpuarchiver";
/// Dirs added: one per [`STEP`] for 10 s (the issue's 30 s shortened to keep CI time down).
const DIRS: usize = 100;
const STEP: Duration = Duration::from_millis(100);
const THRESHOLD: Duration = Duration::from_secs(2);
/// The bound on the producer's dirs at any moment when the rule runs every second: 10 dirs/s ×
/// (2 s threshold + 1 s interval + up to 1 s of run latency and whole-second ages) + slack.
const BOUND: usize = 45;

/// The bound when the runs came at most `gap_secs` apart (whole seconds): 10 dirs/s × (2 s
/// threshold + the gap + 1 s of whole-second ages) + slack, never below [`BOUND`]. On a busy
/// machine the 1 s rule may run every 2 or 3 s; each run must still delete everything old.
fn bound_for(gap_secs: u64) -> usize {
    let per_sec = (Duration::from_secs(1).as_millis() / STEP.as_millis()) as usize;
    BOUND.max(per_sec * (THRESHOLD.as_secs() + gap_secs + 1) as usize + 5)
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

fn leak_dirs(root: &Path) -> usize {
    std::fs::read_dir(root)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("gpuarchiver-"))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_keeps_a_leak_down_deleting_only_old_dirs_each_with_its_audit_row() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    let cat = Catalogue::with_extra(LEAK, Path::new("config.toml")).unwrap();
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, root.path()).unwrap()],
        Arc::new(cat),
    );
    opts.debounce = Duration::from_millis(50);
    opts.db_path = Some(db.clone());
    opts.auto_reclaim = vec![AutoRule {
        name: "leak".into(),
        producers: vec![ID.into()],
        older_than: THRESHOLD,
        every: Some(Duration::from_secs(1)),
        when_items_over: None,
        when_bytes_over: None,
        when_free_below: None,
    }];
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();

    // The largest item count any snapshot showed.
    let max_snap = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (max_snap, stop, mut rx) = (max_snap.clone(), stop.clone(), m.subscribe());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) && rx.changed().await.is_ok() {
                let n = rx
                    .borrow_and_update()
                    .producers
                    .iter()
                    .find(|p| p.id == ID)
                    .map_or(0, |p| p.items);
                max_snap.fetch_max(n, Ordering::Relaxed);
            }
        })
    };
    let dir = root.path().to_path_buf();
    let leak_start = SystemTime::now();
    let leak = std::thread::spawn(move || {
        let mut created: BTreeMap<PathBuf, SystemTime> = BTreeMap::new();
        let mut max_disk = 0;
        for k in 0..DIRS {
            let d = dir.join(format!("gpuarchiver-{k:04}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("PersistentState"), [7u8; 4096]).unwrap();
            created.insert(d, SystemTime::now());
            max_disk = max_disk.max(leak_dirs(&dir));
            std::thread::sleep(STEP);
        }
        (created, max_disk)
    });
    let (created, max_disk) = tokio::task::spawn_blocking(move || leak.join().unwrap())
        .await
        .unwrap();
    let leak_end = SystemTime::now();
    // Pausing stops the rules; the check waits for a drain still running. Only then is nothing
    // deleted any more: `end` is that moment (a run that started while the pause was on its way,
    // on a loaded machine, may still delete what was old enough then).
    m.set_paused(true).await.unwrap();
    let _ = m.check_auto_reclaim().await.unwrap();
    let end = SystemTime::now();
    stop.store(true, Ordering::Relaxed);
    let runs = m.snapshot().auto_reclaim.rules[0].runs;
    m.shutdown().await;
    watcher.abort();

    let gone: BTreeSet<&PathBuf> = created.keys().filter(|p| !p.exists()).collect();
    let rows = History::open_read_only(&db)
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    let deleted_rows: Vec<_> = rows.iter().filter(|r| r.outcome == "deleted").collect();
    // The longest time the leak went without a run finishing, whole seconds.
    let (from, to) = (unix_secs(leak_start), unix_secs(leak_end) + 1);
    let mut marks: Vec<u64> = History::open_read_only(&db)
        .unwrap()
        .auto_runs(SystemTime::UNIX_EPOCH)
        .unwrap()
        .iter()
        .map(|r| r.finished_unix_secs.clamp(from, to))
        .chain([from, to])
        .collect();
    marks.sort_unstable();
    let gap = marks.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let bound = bound_for(gap);
    let audited: BTreeSet<&PathBuf> = deleted_rows.iter().map(|r| &r.path).collect();
    eprintln!(
        "leak simulation: {} dirs in {:?}; max on disk {max_disk}, max in a snapshot {}; \
         {} deleted, {} audit rows (deleted), {} audit rows in all, {runs} runs, at most {gap} s \
         apart",
        DIRS,
        STEP * DIRS as u32,
        max_snap.load(Ordering::Relaxed),
        gone.len(),
        deleted_rows.len(),
        rows.len(),
    );
    assert!(
        max_disk <= bound,
        "the leak reached {max_disk} dirs, over {bound} for runs at most {gap} s apart"
    );
    assert!(gone.len() >= 50, "only {} deleted", gone.len());
    // One to one: every deleted dir has exactly one `deleted` row, and every such row a dir gone.
    assert_eq!(deleted_rows.len(), audited.len(), "a path audited twice");
    assert_eq!(audited, gone);
    for r in &deleted_rows {
        // Audit rows keep whole seconds: the row's time may read up to 1 s early.
        let born = created[&r.path];
        assert!(
            r.time + Duration::from_secs(1) >= born + THRESHOLD,
            "{:?} deleted younger than {THRESHOLD:?}",
            r.path
        );
    }
    for (p, born) in &created {
        if end.duration_since(*born).unwrap_or_default() < THRESHOLD {
            assert!(
                p.exists(),
                "{p:?} was younger than the threshold and is gone"
            );
        }
    }
}

#[test]
fn batched_execute_writes_each_batch_rows_first_and_stops_between_batches() {
    let cache = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    let dirs = cachewatch_testkit::tree::make_archives(cache.path(), "b", 1200, 1);
    cachewatch_testkit::tree::set_tree_mtime(cache.path(), cachewatch_testkit::tree::days_ago(2));
    let cat = Catalogue::builtin();
    let roots = vec![Root::new(RootKind::Cache, cache.path()).unwrap()];
    let history = Mutex::new(History::open(&db).unwrap());
    let probe = SystemProbe::snapshot();
    let mut seen: Vec<BatchProgress> = Vec::new();
    let run = |stop_after_first: bool, seen: &mut Vec<BatchProgress>| {
        let now = SystemTime::now();
        let inv = cachewatch::scan::scan(&roots, &cat, now);
        let plan = held_plan(&inv, &cat, &probe, now);
        let mut on_batch = |p: &BatchProgress| {
            seen.push(*p);
            if stop_after_first {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        execute_audited_batches(&plan, &cat, &probe, &history, &db, now, 500, &mut on_batch)
            .unwrap()
    };
    let first = run(true, &mut seen);
    assert_eq!(first.report.deleted.len(), 500);
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].items_done, seen[0].items_total), (500, 1200));
    assert_eq!(seen[0].deleted_items, 500);
    let left = dirs.iter().filter(|d| d.exists()).count();
    assert_eq!(left, 700, "the items after the stop are untouched");
    let rows = history
        .lock()
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    assert_eq!(rows.len(), 500, "no row for an item never reached");
    assert!(rows
        .iter()
        .all(|r| r.outcome == "deleted" && !r.path.exists()));

    seen.clear();
    let second = run(false, &mut seen);
    assert_eq!(second.report.deleted.len(), 700);
    let done: Vec<u64> = seen.iter().map(|p| p.items_done).collect();
    assert_eq!(done, vec![500, 700]);
    assert!(dirs.iter().all(|d| !d.exists()));
    let rows = history
        .lock()
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    let paths: BTreeSet<&PathBuf> = rows.iter().map(|r| &r.path).collect();
    assert_eq!(rows.len(), 1200);
    assert_eq!(paths, dirs.iter().collect());
}

/// The drain of a backlog runs beside the monitor task: a file event during the drain reaches the
/// snapshot while the drain is still going. The test holds the history database's write lock
/// after the first batch, so the drain waits at its next batch's audit rows (up to the history's
/// 1.5 s busy timeout, then it stops with that error) while the event is flushed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_during_a_drain_reaches_the_snapshot_before_the_drain_ends() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    let old = cachewatch_testkit::tree::days_ago(2);
    let backlog: Vec<PathBuf> = (0..3000)
        .map(|i| {
            let d = root.path().join(format!("gpuarchiver-b{i:05}"));
            std::fs::create_dir(&d).unwrap();
            cachewatch_testkit::tree::set_mtime(&d, old);
            d
        })
        .collect();
    let cat = Catalogue::with_extra(LEAK, Path::new("config.toml")).unwrap();
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, root.path()).unwrap()],
        Arc::new(cat),
    );
    opts.debounce = Duration::from_millis(50);
    opts.db_path = Some(db.clone());
    opts.auto_reclaim = vec![AutoRule {
        name: "backlog".into(),
        producers: vec![ID.into()],
        older_than: Duration::from_secs(3600),
        every: Some(Duration::from_secs(3600)),
        when_items_over: None,
        when_bytes_over: None,
        when_free_below: None,
    }];
    let m = monitor::spawn(opts).unwrap();
    // The first run starts after the first scan; its first batch publishes the progress.
    let first = m
        .subscribe()
        .wait_for(|s| {
            s.auto_reclaim
                .progress
                .as_ref()
                .is_some_and(|p| p.items_done > 0)
        })
        .await
        .unwrap()
        .auto_reclaim
        .progress
        .clone()
        .unwrap();
    assert_eq!((first.rule.as_str(), first.items_total), ("backlog", 3000));
    // The lock is let go at the latest after 8 s, well inside the ~16 s the drain retries a
    // batch's outcomes for: on a loaded machine the flush may take longer than that, and the
    // outcomes must still be written (the check of "during" is then skipped, see below).
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (locked_tx, locked_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let db = db.clone();
        std::thread::spawn(move || {
            let lock = rusqlite::Connection::open(&db).unwrap();
            lock.busy_timeout(Duration::from_secs(30)).unwrap();
            lock.execute_batch("BEGIN IMMEDIATE").unwrap();
            locked_tx.send(()).unwrap();
            let held_to_the_end = released.recv_timeout(Duration::from_secs(8)).is_ok();
            lock.execute_batch("COMMIT").unwrap();
            held_to_the_end
        })
    };
    locked_rx.recv().unwrap();
    let fresh = root.path().join("fresh-file");
    std::fs::write(&fresh, [1u8; 8192]).unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    let shown = s
        .unattributed
        .iter()
        .any(|u| Path::new(&u.path).file_name() == fresh.file_name());
    let _ = release.send(());
    let held_to_the_end = holder.join().unwrap();
    let during = s.auto_reclaim.progress.is_some() && held_to_the_end;
    assert!(shown, "the new file is not in the snapshot");
    if !during {
        eprintln!("the drain ended, or the lock was let go, before the flush answered: not a check of 'during'");
    }
    let run = m
        .subscribe()
        .wait_for(|s| s.auto_reclaim.rules[0].runs == 1)
        .await
        .unwrap()
        .auto_reclaim
        .rules[0]
        .last_run
        .clone()
        .unwrap();
    m.shutdown().await;
    let gone: BTreeSet<&PathBuf> = backlog.iter().filter(|p| !p.exists()).collect();
    let rows = History::open_read_only(&db)
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    let audited: BTreeSet<&PathBuf> = rows
        .iter()
        .filter(|r| r.outcome == "deleted")
        .map(|r| &r.path)
        .collect();
    eprintln!(
        "backlog: {} of 3000 deleted in the run ({} audit rows), progress seen during: {during}",
        gone.len(),
        rows.len()
    );
    assert_eq!(run.deleted_items as usize, gone.len());
    assert_eq!(audited, gone);
    assert!(fresh.exists());
}

/// Pausing the monitor pauses the rules: a drain stops at the end of its batch, status `paused`,
/// and the items after it are untouched and have no audit row. The history lock held by the test
/// keeps the drain at its second batch until the pause is in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_the_monitor_stops_a_drain_between_batches() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    let old = cachewatch_testkit::tree::days_ago(2);
    let backlog: Vec<PathBuf> = (0..3000)
        .map(|i| {
            let d = root.path().join(format!("gpuarchiver-p{i:05}"));
            std::fs::create_dir(&d).unwrap();
            cachewatch_testkit::tree::set_mtime(&d, old);
            d
        })
        .collect();
    let cat = Catalogue::with_extra(LEAK, Path::new("config.toml")).unwrap();
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, root.path()).unwrap()],
        Arc::new(cat),
    );
    opts.db_path = Some(db.clone());
    opts.auto_reclaim = vec![AutoRule {
        name: "backlog".into(),
        producers: vec![ID.into()],
        older_than: Duration::from_secs(3600),
        every: None,
        when_items_over: Some(100),
        when_bytes_over: None,
        when_free_below: None,
    }];
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| {
            s.auto_reclaim
                .progress
                .as_ref()
                .is_some_and(|p| p.items_done > 0)
        })
        .await
        .unwrap();
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.busy_timeout(Duration::from_secs(30)).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    // Under the lock: how many items the drain had reached (all of them: nothing left to pause).
    let reached: i64 = lock
        .query_row("SELECT COUNT(*) FROM reclaims", [], |r| r.get(0))
        .unwrap();
    m.set_paused(true).await.unwrap();
    lock.execute_batch("COMMIT").unwrap();
    let run = m
        .subscribe()
        .wait_for(|s| s.auto_reclaim.rules[0].runs == 1)
        .await
        .unwrap()
        .auto_reclaim
        .rules[0]
        .last_run
        .clone()
        .unwrap();
    m.shutdown().await;
    let gone: BTreeSet<&PathBuf> = backlog.iter().filter(|p| !p.exists()).collect();
    let rows = History::open_read_only(&db)
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    let audited: BTreeSet<&PathBuf> = rows.iter().map(|r| &r.path).collect();
    eprintln!(
        "paused drain: {} of 3000 deleted, {} rows",
        gone.len(),
        rows.len()
    );
    if reached >= 3000 {
        eprintln!("the drain ended before the lock was taken: not a check of the pause");
        return;
    }
    assert_eq!(run.status, "paused");
    assert!(gone.len() < 3000 && gone.len() % cachewatch::autoreclaim::BATCH_SIZE == 0);
    assert_eq!(run.deleted_items as usize, gone.len());
    assert_eq!(
        audited, gone,
        "rows only for the batches run, each one deleted"
    );
}

/// Takes the history database's write lock (from another connection, held `hold`) the first time
/// it is asked for open files once `taken` is cleared: in execute, when it re-checks an item, after
/// the batch's `attempt` rows and before its outcomes.
struct LocksHistoryMidBatch {
    inner: SystemProbe,
    db: PathBuf,
    hold: Duration,
    taken: AtomicBool,
    holder: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl cachewatch::process::ProcessProbe for LocksHistoryMidBatch {
    fn process(&self, pid: u32) -> Option<cachewatch::process::ProcessInfo> {
        self.inner.process(pid)
    }
    fn is_running(&self, name: &str) -> bool {
        self.inner.is_running(name)
    }
    fn open_file_under(&self, dir: &Path) -> Option<cachewatch::process::OpenFile> {
        if !self.taken.swap(true, Ordering::SeqCst) {
            let (tx, rx) = std::sync::mpsc::channel();
            let (db, hold) = (self.db.clone(), self.hold);
            let h = std::thread::spawn(move || {
                let c = rusqlite::Connection::open(&db).unwrap();
                c.execute_batch("BEGIN IMMEDIATE").unwrap();
                tx.send(()).unwrap();
                std::thread::sleep(hold);
                c.execute_batch("COMMIT").unwrap();
            });
            rx.recv().unwrap();
            *self.holder.lock().unwrap() = Some(h);
        }
        self.inner.open_file_under(dir)
    }
}

/// Regression: another writer holding the history database past its 1.5 s busy timeout while a
/// batch was deleted left that batch's rows `attempt` (read as `interrupted`) though every item
/// was gone (CI: 512 of 3,000 drained dirs without a `deleted` row). The outcomes are tried again.
#[test]
fn outcomes_are_written_when_another_writer_holds_the_history_past_its_busy_timeout() {
    let cache = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    let dirs = cachewatch_testkit::tree::make_archives(cache.path(), "b", 40, 1);
    cachewatch_testkit::tree::set_tree_mtime(cache.path(), cachewatch_testkit::tree::days_ago(2));
    let cat = Catalogue::builtin();
    let roots = vec![Root::new(RootKind::Cache, cache.path()).unwrap()];
    let history = Mutex::new(History::open(&db).unwrap());
    let probe = LocksHistoryMidBatch {
        inner: SystemProbe::snapshot(),
        db: db.clone(),
        hold: Duration::from_secs(4),
        // Not during the plan (it asks for open files too): armed once the plan is made.
        taken: AtomicBool::new(true),
        holder: Mutex::new(None),
    };
    let now = SystemTime::now();
    let inv = cachewatch::scan::scan(&roots, &cat, now);
    let plan = held_plan(&inv, &cat, &probe, now);
    assert_eq!(plan.items.len(), 40);
    probe.taken.store(false, Ordering::SeqCst);
    let mut on_batch = |_: &BatchProgress| ControlFlow::Continue(());
    let done = execute_audited_batches(&plan, &cat, &probe, &history, &db, now, 100, &mut on_batch)
        .unwrap();
    if let Some(h) = probe.holder.lock().unwrap().take() {
        h.join().unwrap();
    }
    assert!(
        probe.taken.load(Ordering::SeqCst),
        "the lock was taken mid-batch"
    );
    assert_eq!(done.report.deleted.len(), 40);
    assert!(done.audit_errors.is_empty(), "{:?}", done.audit_errors);
    assert!(dirs.iter().all(|d| !d.exists()));
    let rows = history
        .lock()
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    assert_eq!(rows.len(), 40);
    assert!(rows.iter().all(|r| r.outcome == "deleted"), "{rows:?}");
}

/// A plan of the `metal-gpuarchiver` items older than an hour, made from a held scan (every item in
/// memory, so the report lists each deleted item).
fn held_plan(
    inv: &cachewatch::Inventory,
    cat: &Catalogue,
    probe: &dyn ProcessProbe,
    now: SystemTime,
) -> ReclaimPlan {
    let policy = Policy {
        older_than: Duration::from_secs(3600),
        producers: vec!["metal-gpuarchiver".into()],
        protected: Vec::new(),
    };
    cachewatch::reclaim::plan(inv, cat, &policy, probe, now)
}

/// A held plan executed as the drains execute theirs ([`run_batches`]: each batch's audit rows
/// first, then its deletions, then its outcomes), its items read from memory.
#[allow(clippy::too_many_arguments)]
fn execute_audited_batches(
    plan: &ReclaimPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    history: &Mutex<History>,
    db_path: &Path,
    now: SystemTime,
    batch_size: usize,
    on_batch: &mut dyn FnMut(&BatchProgress) -> ControlFlow<()>,
) -> Result<AuditedReport, AuditNotWritten> {
    let opts = ExecuteOptions {
        batch_size: batch_size.max(1),
        ..ExecuteOptions::default()
    };
    let mut exec = match Executor::new(plan, catalogue, probe, now, opts) {
        Ok(exec) => exec,
        Err(e) => return Ok(AuditedReport::refused(e)),
    };
    let audit_errors = run_batches(
        &mut exec,
        &mut held_next,
        plan.items.len() as u64,
        history,
        db_path,
        now,
        &mut |p, _| on_batch(p),
    )?;
    Ok(AuditedReport {
        report: exec.finish(),
        audit_errors,
    })
}

/// The next batch of a held plan.
fn held_next<'a>(
    exec: &mut Executor<'a>,
) -> Option<std::io::Result<(usize, Cow<'a, [PlannedItem]>)>> {
    exec.next_batch()
        .map(|b| Ok((b.first, Cow::Borrowed(b.items))))
}
