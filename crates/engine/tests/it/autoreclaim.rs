//! Auto-reclaim rules in the monitor, on real trees with a manual clock: each trigger fires when
//! (and only when) it should, live owners, open files and young items are kept with their reasons,
//! a rule that frees nothing says why once, and without a history database nothing is deleted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::autoreclaim::{AutoRule, AutoRun};
use cachewatch::clock::ManualClock;
use cachewatch::history::History;
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::MonitorState;
use cachewatch::{Catalogue, Root, RootKind};

const RULES: &str = cachewatch_testkit::rules::MY_APP_TEMP;
const ID: &str = cachewatch_testkit::rules::MY_APP_TEMP_ID;
const DEAD: u32 = cachewatch_testkit::rules::DEAD_PID;
const HOUR: Duration = Duration::from_secs(3600);

fn rule() -> AutoRule {
    AutoRule {
        name: "scratch".into(),
        producers: vec![ID.into()],
        older_than: HOUR,
        every: None,
        when_items_over: None,
        when_bytes_over: None,
        when_free_below: None,
    }
}

/// `my-app-<pid>` with one 5000-byte file; with `old`, every mtime two days back.
fn item(root: &Path, pid: u32, old: bool) -> PathBuf {
    let d = root.join(format!("my-app-{pid}"));
    std::fs::create_dir(&d).unwrap();
    cachewatch_testkit::tree::write_file(&d.join("data"), 5000);
    if old {
        cachewatch_testkit::tree::set_tree_mtime(&d, cachewatch_testkit::tree::days_ago(2));
    }
    d
}

struct Setup {
    root: tempfile::TempDir,
    data: tempfile::TempDir,
    clock: Arc<ManualClock>,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            clock: Arc::new(ManualClock::new(SystemTime::now())),
        }
    }

    fn db(&self) -> PathBuf {
        self.data.path().join("cachewatch.db")
    }

    async fn start(&self, rules: Vec<AutoRule>, history: bool) -> MonitorHandle {
        let cat = Catalogue::with_extra(RULES, Path::new("config.toml")).unwrap();
        let root = Root::new(RootKind::Temp, self.root.path()).unwrap();
        let mut opts = MonitorOptions::new(vec![root], Arc::new(cat));
        opts.debounce = Duration::from_millis(50);
        opts.clock = self.clock.clone();
        opts.auto_reclaim = rules;
        if history {
            opts.db_path = Some(self.db());
        }
        let m = monitor::spawn(opts).unwrap();
        m.subscribe()
            .wait_for(|s| s.state != MonitorState::Scanning)
            .await
            .unwrap();
        m.flush().await.unwrap();
        m
    }

    /// The audit rows with outcome `deleted`, by path.
    fn audited_deletions(&self) -> Vec<PathBuf> {
        let h = History::open_read_only(&self.db()).unwrap();
        let rows = h.reclaims(SystemTime::UNIX_EPOCH).unwrap();
        rows.into_iter()
            .filter(|r| r.outcome == "deleted")
            .map(|r| r.path)
            .collect()
    }
}

/// Waits (on the snapshot channel, no timer) until rule 0 has run `n` times; returns its last run.
async fn runs(m: &MonitorHandle, n: u64) -> AutoRun {
    let s = m
        .subscribe()
        .wait_for(|s| s.auto_reclaim.rules.first().is_some_and(|r| r.runs >= n))
        .await
        .unwrap()
        .clone();
    assert_eq!(
        s.auto_reclaim.rules[0].runs, n,
        "one run more than expected"
    );
    s.auto_reclaim.rules[0].last_run.clone().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interval_runs_at_start_then_once_every_period_of_the_injected_clock() {
    let s = Setup::new();
    let first = item(s.root.path(), DEAD, true);
    let every = Duration::from_secs(600);
    let m = s
        .start(
            vec![AutoRule {
                every: Some(every),
                ..rule()
            }],
            true,
        )
        .await;
    let run = runs(&m, 1).await;
    assert_eq!((run.trigger.as_str(), run.deleted_items), ("interval", 1));
    assert!(!first.exists());

    let second = item(s.root.path(), DEAD + 1, true);
    m.flush().await.unwrap();
    s.clock.advance(every - Duration::from_secs(1));
    assert_eq!(m.check_auto_reclaim().await.unwrap(), None, "not due yet");
    assert!(second.exists());
    s.clock.advance(Duration::from_secs(1));
    // The check or the monitor's own tick starts it; the snapshot says when it ended.
    let _ = m.check_auto_reclaim().await.unwrap();
    let run = runs(&m, 2).await;
    assert_eq!((run.trigger.as_str(), run.deleted_items), ("interval", 1));
    assert!(!second.exists());
    assert_eq!(s.audited_deletions(), vec![first, second]);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item_and_byte_thresholds_fire_when_crossed_not_before() {
    for by_bytes in [false, true] {
        let s = Setup::new();
        let mut items: Vec<PathBuf> = (0..3)
            .map(|k| item(s.root.path(), DEAD + k, true))
            .collect();
        // Independent figures: the hand count of the items and `du` of them.
        let r = if by_bytes {
            let du = cachewatch_testkit::du::allocated(&items);
            AutoRule {
                when_bytes_over: Some(du),
                ..rule()
            }
        } else {
            AutoRule {
                when_items_over: Some(3),
                ..rule()
            }
        };
        let m = s.start(vec![r], true).await;
        assert_eq!(
            m.check_auto_reclaim().await.unwrap(),
            None,
            "at the limit, not over"
        );
        assert!(items.iter().all(|p| p.exists()));
        items.push(item(s.root.path(), DEAD + 3, true));
        let du = cachewatch_testkit::du::allocated(&items);
        m.flush().await.unwrap();
        let _ = m.check_auto_reclaim().await.unwrap();
        let run = runs(&m, 1).await;
        let want = if by_bytes { "bytes" } else { "items" };
        assert_eq!((run.trigger.as_str(), run.deleted_items), (want, 4));
        assert_eq!(run.freed_bytes, du, "freed = du of the items");
        assert_eq!(run.by_producer[ID].bytes, du);
        assert!(items.iter().all(|p| !p.exists()));
        let mut audited = s.audited_deletions();
        audited.sort();
        assert_eq!(audited, items);
        m.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_space_trigger_fires_below_the_volume_free_bytes_only() {
    let s = Setup::new();
    let old = item(s.root.path(), DEAD, true);
    // 1 byte: never below it. 1 EiB: always (no test volume is that large).
    let never = AutoRule {
        name: "never".into(),
        when_free_below: Some(1),
        ..rule()
    };
    let m = s.start(vec![never], true).await;
    assert_eq!(m.check_auto_reclaim().await.unwrap(), None);
    assert!(old.exists());
    m.shutdown().await;
    let always = AutoRule {
        when_free_below: Some(1 << 60),
        ..rule()
    };
    let m = s.start(vec![always], true).await;
    let _ = m.check_auto_reclaim().await.unwrap();
    let run = runs(&m, 1).await;
    assert_eq!((run.trigger.as_str(), run.deleted_items), ("free-space", 1));
    assert!(!old.exists());
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_owner_open_file_and_young_item_are_kept_with_reasons_and_said_once() {
    let s = Setup::new();
    let orphan = item(s.root.path(), DEAD, true);
    let owned = item(s.root.path(), std::process::id(), true);
    let young = item(s.root.path(), DEAD + 1, false);
    let open = item(s.root.path(), DEAD + 2, true);
    let _held = std::fs::File::open(open.join("data")).unwrap();
    let every = Duration::from_secs(600);
    let m = s
        .start(
            vec![AutoRule {
                every: Some(every),
                ..rule()
            }],
            true,
        )
        .await;
    let run = runs(&m, 1).await;
    assert_eq!(run.deleted_items, 1);
    let want: BTreeMap<String, u64> = [("in-use", 1), ("owner-alive", 1), ("too-young", 1)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    assert_eq!(run.kept, want);
    assert!(!orphan.exists() && owned.exists() && young.exists() && open.exists());
    assert_eq!(s.audited_deletions(), vec![orphan]);

    // Two more runs that keep everything: the reasons are said once.
    for n in [2, 3] {
        s.clock.advance(every);
        let _ = m.check_auto_reclaim().await.unwrap();
        let run = runs(&m, n).await;
        assert_eq!((run.deleted_items, run.kept.clone()), (0, want.clone()));
    }
    let snap = m.snapshot();
    let said: Vec<&String> = snap
        .errors
        .iter()
        .filter(|e| e.contains("freed nothing"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", snap.errors);
    assert!(
        said[0].contains("owner alive 1") && said[0].contains("in use 1"),
        "{}",
        said[0]
    );
    assert_eq!(
        snap.auto_reclaim.rules[0].note.as_deref(),
        Some(said[0].as_str())
    );
    assert_eq!(s.audited_deletions().len(), 1);
    let runs_stored = History::open_read_only(&s.db())
        .unwrap()
        .auto_runs(SystemTime::UNIX_EPOCH)
        .unwrap();
    assert_eq!(runs_stored.len(), 3);
    assert_eq!(runs_stored[0].kept, want);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_history_database_no_rule_deletes() {
    let s = Setup::new();
    let old = item(s.root.path(), DEAD, true);
    let m = s
        .start(
            vec![AutoRule {
                every: Some(HOUR),
                ..rule()
            }],
            false,
        )
        .await;
    assert_eq!(m.check_auto_reclaim().await.unwrap(), None);
    assert!(old.exists());
    let snap = m.snapshot();
    assert!(
        snap.errors
            .iter()
            .any(|e| e.starts_with("auto-reclaim rules not run: no history database")),
        "{:?}",
        snap.errors
    );
    assert_eq!(snap.auto_reclaim.rules[0].runs, 0);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_monitor_runs_no_rule() {
    let s = Setup::new();
    let old = item(s.root.path(), DEAD, true);
    let m = s
        .start(
            vec![AutoRule {
                when_items_over: Some(0),
                ..rule()
            }],
            true,
        )
        .await;
    let _ = runs(&m, 1).await;
    assert!(!old.exists());
    m.set_paused(true).await.unwrap();
    let again = item(s.root.path(), DEAD + 1, true);
    s.clock.advance(HOUR);
    assert_eq!(m.check_auto_reclaim().await.unwrap(), None);
    assert!(again.exists());
    m.set_paused(false).await.unwrap();
    let _ = m.check_auto_reclaim().await.unwrap();
    let _ = runs(&m, 2).await;
    assert!(!again.exists());
    m.shutdown().await;
}

/// A drain plans from the monitor's compact state in chunks (set to 64 items here, so
/// 325 claimed items span six chunks) and executes the spooled plan. Every old orphan goes, each
/// with its audit row; the young and the owned ones stay, counted by reason; the run's figures
/// are the hand count and `du` of what it deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_planned_over_several_chunks_deletes_every_old_item_and_counts_the_kept() {
    let s = Setup::new();
    let mut old: Vec<PathBuf> = (0..300)
        .map(|k| item(s.root.path(), DEAD + k, true))
        .collect();
    let young: Vec<PathBuf> = (300..320)
        .map(|k| item(s.root.path(), DEAD + k, false))
        .collect();
    // One live owner: its pid names one dir (the rest of the owned dirs would collide).
    let owned = item(s.root.path(), std::process::id(), true);
    old.sort();
    let du = cachewatch_testkit::du::allocated(&old);
    let cat = Catalogue::with_extra(RULES, Path::new("config.toml")).unwrap();
    let root = Root::new(RootKind::Temp, s.root.path()).unwrap();
    let mut opts = MonitorOptions::new(vec![root], Arc::new(cat));
    opts.debounce = Duration::from_millis(50);
    opts.clock = s.clock.clone();
    opts.db_path = Some(s.db());
    opts.plan_chunk = 64;
    opts.auto_reclaim = vec![AutoRule {
        every: Some(HOUR),
        ..rule()
    }];
    let m = monitor::spawn(opts).unwrap();
    let run = runs(&m, 1).await;
    m.shutdown().await;

    let gone: Vec<&PathBuf> = old.iter().filter(|p| !p.exists()).collect();
    assert_eq!(gone.len(), old.len(), "every old orphan deleted");
    assert!(young.iter().all(|p| p.exists()) && owned.exists());
    assert_eq!(
        (run.status.as_str(), run.planned_items, run.deleted_items),
        ("done", old.len() as u64, old.len() as u64)
    );
    let want: BTreeMap<String, u64> = [("owner-alive", 1), ("too-young", young.len() as u64)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    assert_eq!(run.kept, want);
    assert_eq!(run.freed_bytes, du, "freed = du of the deleted items");
    assert_eq!(
        (run.by_producer[ID].items, run.by_producer[ID].bytes),
        (old.len() as u64, du)
    );
    assert_eq!((run.errors, run.first_error), (0, None));
    let mut audited = s.audited_deletions();
    audited.sort();
    assert_eq!(audited, old, "one `deleted` audit row per deleted item");
    let rows = History::open_read_only(&s.db())
        .unwrap()
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap();
    assert_eq!(rows.len(), old.len(), "no row for an item not planned");
}

/// Regression: 200 rules at `every = "1s"`: only the first two ever ran, each run
/// taking long enough for rule 0 to be due again. Rules due at the same time take turns: with the
/// clock a second on after every run (rule 0 always due again), every rule runs, and no rule runs
/// twice before every other has run once. (24 rules: each run reads the process table twice,
/// most of a second on a busy machine.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_due_at_the_same_time_take_turns() {
    const N: usize = 24;
    let s = Setup::new();
    let rules: Vec<AutoRule> = (0..N)
        .map(|i| AutoRule {
            name: format!("r{i:03}"),
            every: Some(Duration::from_secs(1)),
            ..rule()
        })
        .collect();
    let m = s.start(rules, true).await;
    // At most twice as many checks as rules: before, rule 0 was due again at every one.
    for _ in 0..2 * N {
        if m.snapshot().auto_reclaim.rules.iter().all(|r| r.runs > 0) {
            break;
        }
        // Waits for the run it starts (or the one in progress) to end.
        m.check_auto_reclaim().await.unwrap();
        s.clock.advance(Duration::from_secs(1));
    }
    let snap = m.snapshot();
    let runs: Vec<u64> = snap.auto_reclaim.rules.iter().map(|r| r.runs).collect();
    let never: Vec<&str> = snap
        .auto_reclaim
        .rules
        .iter()
        .filter(|r| r.runs == 0)
        .map(|r| r.rule.as_str())
        .collect();
    assert!(never.is_empty(), "rules that never ran: {never:?}");
    let (lo, hi) = (runs.iter().min().unwrap(), runs.iter().max().unwrap());
    assert!(hi - lo <= 1, "runs per rule from {lo} to {hi}: {runs:?}");
    m.shutdown().await;
}
