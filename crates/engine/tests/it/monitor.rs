//! The monitor's commands and its history link, on real trees: reclaim through plan ids, the
//! reclaimable figures at a threshold, pause, growth and "grew while not running" across a restart
//! with a manual clock, alerts stored and broadcast, a corrupt history database, a locked one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::alerts::AlertsConfig;
use cachewatch::clock::ManualClock;
use cachewatch::monitor::{self, MonitorError, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::{MonitorState, Snapshot};
use cachewatch::{Catalogue, Root, RootKind};

const GPU: &str = "metal-gpuarchiver";
const DAY: Duration = Duration::from_secs(24 * 3600);

fn du_total(paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

fn producer(s: &Snapshot, id: &str) -> (u64, u64) {
    s.producers
        .iter()
        .find(|p| p.id == id)
        .map_or((0, 0), |p| (p.items, p.allocated_bytes))
}

/// `n` archive dirs with one file each, in an app's `com.apple.gpuarchiver` (inside the app's own
/// cache dir, so the producer's figures are the archives alone: a bare top-level
/// `com.apple.gpuarchiver` would be one more item, the structure dir); with `age`, every entry's
/// mtime is set that far back.
fn make_archives(root: &Path, n: usize, tag: &str, age: Option<Duration>) -> Vec<PathBuf> {
    let parent = root.join("org.julialang.julia/com.apple.gpuarchiver");
    std::fs::create_dir_all(&parent).unwrap();
    (0..n)
        .map(|i| {
            let d = parent.join(format!("gpuarchiver-{tag}{i:04}"));
            std::fs::create_dir(&d).unwrap();
            let f = d.join("PersistentState");
            std::fs::write(&f, vec![3u8; 5000 + i * 100]).unwrap();
            if let Some(age) = age {
                let t = SystemTime::now() - age;
                File::options()
                    .write(true)
                    .open(&f)
                    .unwrap()
                    .set_modified(t)
                    .unwrap();
                File::open(&d).unwrap().set_modified(t).unwrap();
            }
            d
        })
        .collect()
}

fn options(root: &Path) -> MonitorOptions {
    let root = Root::new(RootKind::Cache, root).unwrap();
    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.debounce = Duration::from_millis(50);
    opts
}

async fn ready(m: &MonitorHandle) {
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_through_the_monitor_deletes_only_old_items_and_updates_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let old = make_archives(dir.path(), 12, "old", Some(2 * DAY));
    let young = make_archives(dir.path(), 5, "new", None);
    let data = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    opts.db_path = Some(data.path().join("cachewatch.db"));
    let m = monitor::spawn(opts).unwrap();
    ready(&m).await;

    m.set_threshold(DAY).await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.threshold_secs, DAY.as_secs());
    let p = s.producers.iter().find(|p| p.id == GPU).unwrap();
    assert_eq!((p.items, p.reclaimable_items), (17, 12));
    assert_eq!(p.reclaimable_bytes, du_total(&old));

    let plan = m.plan_reclaim(vec![GPU.into()], DAY).await.unwrap();
    assert_eq!(plan.planned_items, 12);
    assert_eq!(plan.kept_items, 5, "the young ones are kept");
    let unknown = m.execute_reclaim("no-such-plan".into()).await;
    assert!(
        matches!(unknown, Err(MonitorError::UnknownPlan { .. })),
        "{unknown:?}"
    );
    let bad = m.plan_reclaim(vec!["no-such-producer".into()], DAY).await;
    assert!(
        matches!(bad, Err(MonitorError::UnknownProducer { .. })),
        "{bad:?}"
    );

    let report = m.execute_reclaim(plan.id.clone()).await.unwrap();
    assert_eq!(report.deleted_items, 12);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(old.iter().all(|d| !d.exists()));
    assert!(young.iter().all(|d| d.exists()));
    // The snapshot published by execute already has the deletions.
    assert_eq!(producer(&m.snapshot(), GPU), (5, du_total(&young)));
    // A plan is used once.
    let again = m.execute_reclaim(plan.id).await;
    assert!(
        matches!(again, Err(MonitorError::UnknownPlan { .. })),
        "{again:?}"
    );
    m.shutdown().await;
    // Every deletion has its audit row, with its outcome filled in.
    let h = cachewatch::history::History::open(&data.path().join("cachewatch.db")).unwrap();
    let rows = h.reclaims(std::time::UNIX_EPOCH).unwrap();
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r.outcome == "deleted"), "{rows:?}");
}

/// The monitor (which the app uses) wrote its audit rows after the reclaim, so an app that died
/// mid-reclaim left deletions with no row. Without a history database to write them to first, it
/// now refuses to delete at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_without_history_deletes_nothing_because_it_cannot_audit_first() {
    let dir = tempfile::tempdir().unwrap();
    let old = make_archives(dir.path(), 3, "old", Some(2 * DAY));
    let m = monitor::spawn(options(dir.path())).unwrap();
    ready(&m).await;
    let plan = m.plan_reclaim(vec![GPU.into()], DAY).await.unwrap();
    assert_eq!(plan.planned_items, 3);
    let res = m.execute_reclaim(plan.id).await;
    assert!(matches!(res, Err(MonitorError::NoAudit { .. })), "{res:?}");
    assert!(old.iter().all(|d| d.exists()));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_monitor_holds_its_figures_and_catches_up_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let m = monitor::spawn(options(dir.path())).unwrap();
    ready(&m).await;
    m.set_paused(true).await.unwrap();
    let dirs = make_archives(dir.path(), 9, "p", None);
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.state, MonitorState::Paused);
    assert_eq!(producer(&s, GPU), (0, 0));
    m.set_paused(false).await.unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.state, MonitorState::Watching);
    assert_eq!(producer(&s, GPU), (9, du_total(&dirs)));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn growth_while_not_running_is_reported_and_alerts_fire_once_stored() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    let db = dir.path().join("data/cachewatch.db");
    let first = make_archives(&root, 10, "a", None);
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let clock = Arc::new(ManualClock::new(t0));
    let opts = |clock: Arc<ManualClock>| {
        let mut o = options(&root);
        o.db_path = Some(db.clone());
        o.clock = clock;
        o.sample_interval = Duration::from_secs(3600 * 24 * 365);
        o.alerts = AlertsConfig {
            producer_growth_items: 10,
            producer_growth_bytes: 0,
            free_disk_min_bytes: 0,
            disk_full_eta_min_hours: 0,
            ..AlertsConfig::default()
        };
        o
    };

    let m = monitor::spawn(opts(clock.clone())).unwrap();
    ready(&m).await;
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU), (10, du_total(&first)));
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(
        s.alerts.is_empty(),
        "one sample, no growth yet: {:?}",
        s.alerts
    );
    m.shutdown().await;

    // While it is not running: 20 more, an hour later.
    let added = make_archives(&root, 20, "b", None);
    clock.advance(Duration::from_secs(3600));
    let m = monitor::spawn(opts(clock.clone())).unwrap();
    ready(&m).await;
    let s = m.snapshot();
    let line = s
        .errors
        .iter()
        .find(|e| e.contains("grew while not running"))
        .unwrap_or_else(|| panic!("{:?}", s.errors));
    assert!(
        line.contains(&format!("{GPU} +")) && line.contains("(+20 items)"),
        "{line}"
    );
    let p = s.producers.iter().find(|p| p.id == GPU).unwrap();
    assert_eq!(p.growth_bytes_per_hour, Some(du_total(&added) as i64));
    assert_eq!(p.growth_items_per_day, Some(20 * 24));
    assert_eq!(p.history.len(), 2, "{:?}", p.history);
    assert_eq!(
        p.history[1],
        (1_900_003_600, du_total(&first) + du_total(&added))
    );
    let a = s
        .alerts
        .iter()
        .find(|a| a.rule == "producer-growth")
        .unwrap();
    assert_eq!(a.producer.as_deref(), Some(GPU));
    assert!(a.id > 0, "stored in the history: {a:?}");
    m.shutdown().await;

    // A third start within the cooldown does not fire it again.
    clock.advance(Duration::from_secs(60));
    let m = monitor::spawn(opts(clock.clone())).unwrap();
    let mut alerts = m.alerts();
    ready(&m).await;
    assert_eq!(
        m.snapshot()
            .alerts
            .iter()
            .filter(|a| a.rule == "producer-growth")
            .count(),
        1
    );
    assert!(alerts.try_recv().is_err(), "nothing new fired");
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_history_database_is_reported_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    let dirs = make_archives(&root, 4, "c", None);
    let db = dir.path().join("cachewatch.db");
    let garbage = b"this is not a sqlite database, just bytes\n".repeat(200);
    std::fs::write(&db, &garbage).unwrap();
    let mut o = options(&root);
    o.db_path = Some(db.clone());
    let m = monitor::spawn(o).unwrap();
    ready(&m).await;
    let s = m.snapshot();
    let e = s
        .errors
        .iter()
        .find(|e| e.contains("history unavailable"))
        .unwrap_or_else(|| panic!("{:?}", s.errors));
    assert!(e.contains(&*db.to_string_lossy()), "{e}");
    assert_eq!(producer(&s, GPU), (4, du_total(&dirs)));
    m.shutdown().await;
    assert_eq!(std::fs::read(&db).unwrap(), garbage);
}

/// Regression: alerts were evaluated only after file events, so a burst that ended before the next
/// history sample never alerted. The sample tick must evaluate them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_that_ended_alerts_at_the_next_sample_without_further_events() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let clock = Arc::new(ManualClock::new(t0));
    let mut o = options(&root);
    o.db_path = Some(dir.path().join("data/cachewatch.db"));
    o.clock = clock.clone();
    o.sample_interval = Duration::from_secs(600);
    o.alerts = AlertsConfig {
        producer_growth_items: 10,
        producer_growth_bytes: 0,
        free_disk_min_bytes: 0,
        disk_full_eta_min_hours: 0,
        ..AlertsConfig::default()
    };
    // Two items before the start, so the producer's series has a first sample (a series first seen
    // after the window start is measured from its first sample: see `history::Growth`).
    make_archives(&root, 2, "pre", None);
    let m = monitor::spawn(o).unwrap();
    let mut alerts = m.alerts();
    ready(&m).await;

    // The burst: 15 items, then quiet. Too few for a "large change" sample, so no growth is in the
    // history yet and nothing fires.
    make_archives(&root, 15, "burst", None);
    m.flush().await.unwrap();
    assert_eq!(producer(&m.snapshot(), GPU).0, 17);
    assert!(alerts.try_recv().is_err(), "no sample since the burst yet");

    // The sample interval passes with no file event at all: the next tick samples and alerts.
    clock.advance(Duration::from_secs(601));
    let alert = tokio::time::timeout(Duration::from_secs(30), alerts.recv())
        .await
        .expect("an alert within 30 s (the tick is 5 s)")
        .unwrap();
    assert_eq!(alert.rule, "producer-growth");
    assert_eq!(alert.producer.as_deref(), Some(GPU));
    assert!(alert.message.contains("15 items"), "{}", alert.message);
    m.shutdown().await;
}

/// A `sleep 600` child killed on drop.
struct Sleeper(std::process::Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// A KataGo bundle dir named with `pid` and `ts` (epoch secs), holding `len` bytes, every mtime two
/// days back.
/// A Nuitka onefile dir `onefile_<pid>_<ts>_<n>`: its name carries the owner pid and its birth
/// (epoch seconds), the two the owner check reads.
fn make_onefile(root: &Path, pid: u32, n: u32, ts: u64, len: usize) -> PathBuf {
    let d = root.join(format!("onefile_{pid}_{ts}_{n}"));
    std::fs::create_dir(&d).unwrap();
    let f = d.join("python3.dll");
    std::fs::write(&f, vec![5u8; len]).unwrap();
    let t = SystemTime::now() - 2 * DAY;
    for p in [&f, &d] {
        File::open(p).unwrap().set_modified(t).unwrap();
    }
    d
}

/// The monitor's orphan figure had its own owner check, without the plan's 2 s
/// start-time slack (an owner whose whole-second start reads 1 s after the bundle's birth was an
/// orphan to the figure and an owner to the plan) and without `pid_in_name`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_orphan_figure_equals_what_a_plan_at_threshold_zero_deletes() {
    use cachewatch::process::{ProcessProbe, SystemProbe};
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let owner = Sleeper(Command::new("sleep").arg("600").spawn().unwrap());
    let pid = owner.0.id();
    let started = SystemProbe::snapshot().process(pid).unwrap().start_time;
    let start_secs = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let dead: Vec<u32> = (0..3)
        .map(|_| {
            let mut c = Command::new("true").spawn().unwrap();
            let pid = c.id();
            c.wait().unwrap();
            pid
        })
        .collect();
    let orphans: Vec<PathBuf> = vec![
        make_onefile(&root, dead[0], 0, start_secs - 7200, 40_000),
        make_onefile(&root, dead[1], 1, start_secs - 7200, 30_000),
        make_onefile(&root, dead[2], 0, start_secs - 60, 20_000),
        // Born an hour before its pid's process started: reused.
        make_onefile(&root, pid, 2, start_secs - 3600, 10_000),
    ];
    // Born 1 s before the owner's whole-second start: within the slack, so owned.
    let within_slack = make_onefile(&root, pid, 0, start_secs - 1, 50_000);
    let owned = make_onefile(&root, pid, 1, start_secs, 60_000);

    let temp = Root::new(RootKind::Temp, &root).unwrap();
    let mut opts = MonitorOptions::new(vec![temp], Arc::new(Catalogue::builtin()));
    opts.debounce = Duration::from_millis(50);
    let m = monitor::spawn(opts).unwrap();
    ready(&m).await;
    m.set_threshold(Duration::ZERO).await.unwrap();
    let s = m.snapshot();
    let p = s
        .producers
        .iter()
        .find(|p| p.id == "nuitka-onefile")
        .unwrap();
    let plan = m
        .plan_reclaim(vec!["nuitka-onefile".into()], Duration::ZERO)
        .await
        .unwrap();
    let mut planned: Vec<PathBuf> = plan.largest.iter().map(|i| i.path.clone()).collect();
    planned.sort();
    let mut want = orphans.clone();
    want.sort();
    assert_eq!(planned, want);
    assert_eq!(plan.planned_bytes, du_total(&orphans));
    assert_eq!(p.orphan_bytes, plan.planned_bytes);
    assert_eq!(p.reclaimable_bytes, plan.planned_bytes);
    assert_eq!(
        p.allocated_bytes,
        du_total(&[&orphans[..], &[within_slack, owned]].concat())
    );
    drop(owner);
    m.shutdown().await;
}

/// Through the watcher: a bare `com.apple.gpuarchiver` created while the monitor runs is
/// attributed to its rule (the structure dir), as the first scan attributes it, never unattributed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_gpuarchiver_dir_created_while_watching_is_attributed() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let m = monitor::spawn(options(&root)).unwrap();
    ready(&m).await;
    let parent = root.join("com.apple.gpuarchiver");
    std::fs::create_dir(&parent).unwrap();
    let archive = parent.join("gpuarchiver-w0001");
    std::fs::create_dir(&archive).unwrap();
    std::fs::write(archive.join("PersistentState"), vec![1u8; 9000]).unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert!(s.unattributed.is_empty(), "{:?}", s.unattributed);
    // One item, the archive: the dir it lives in is neither an item nor unattributed.
    assert_eq!(
        producer(&s, GPU),
        (1, du_total(std::slice::from_ref(&archive)))
    );
    let plan = m
        .plan_reclaim(vec![GPU.into()], Duration::ZERO)
        .await
        .unwrap();
    assert!(plan.largest.iter().all(|i| i.path != parent));
    m.shutdown().await;
}

/// Regression: a history database locked by another process (say a `cachewatch reclaim` writing its
/// audit rows) switched the monitor to "running without history" for good, so it took no more
/// samples and refused every later reclaim for want of audit rows. A lock passes: the monitor skips
/// history meanwhile and uses it again once the lock is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_history_database_is_used_again_once_the_lock_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    let old = make_archives(&root, 3, "old", Some(2 * DAY));
    let db = dir.path().join("data/cachewatch.db");
    drop(cachewatch::history::History::open(&db).unwrap());
    let other = rusqlite::Connection::open(&db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();

    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let clock = Arc::new(ManualClock::new(t0));
    let mut o = options(&root);
    o.db_path = Some(db.clone());
    o.clock = clock.clone();
    o.sample_interval = Duration::from_secs(600);
    o.alerts = AlertsConfig {
        free_disk_min_bytes: 0,
        disk_full_eta_min_hours: 0,
        ..AlertsConfig::default()
    };
    let m = monitor::spawn(o).unwrap();
    ready(&m).await;
    let s = m.snapshot();
    assert!(
        s.errors
            .iter()
            .any(|e| e.contains("locked by another process")),
        "{:?}",
        s.errors
    );
    assert!(
        !s.errors.iter().any(|e| e.contains("running without it")),
        "{:?}",
        s.errors
    );

    other.execute_batch("COMMIT").unwrap();
    drop(other);
    clock.advance(Duration::from_secs(601));
    // The next tick (every 5 s) samples again, and the lock's line goes.
    let mut snaps = m.subscribe();
    tokio::time::timeout(
        Duration::from_secs(30),
        snaps.wait_for(|s| {
            s.errors.is_empty()
                && s.producers
                    .iter()
                    .any(|p| p.id == GPU && !p.history.is_empty())
        }),
    )
    .await
    .expect("a sample within 30 s of the lock's release")
    .unwrap();

    let plan = m.plan_reclaim(vec![GPU.into()], DAY).await.unwrap();
    let report = m.execute_reclaim(plan.id).await.unwrap();
    assert_eq!(report.deleted_items, 3, "audited and deleted: {report:?}");
    assert!(old.iter().all(|d| !d.exists()));
    m.shutdown().await;
}

/// A database locked when the monitor starts (another process holds it exclusively) is opened
/// again once the lock is gone, instead of leaving the monitor without history until a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_database_locked_at_start_is_opened_once_the_lock_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    let old = make_archives(&root, 2, "old", Some(2 * DAY));
    let db = dir.path().join("data/cachewatch.db");
    drop(cachewatch::history::History::open(&db).unwrap());
    let other = rusqlite::Connection::open(&db).unwrap();
    other
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
        .unwrap();

    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let clock = Arc::new(ManualClock::new(t0));
    let mut o = options(&root);
    o.db_path = Some(db.clone());
    o.clock = clock.clone();
    o.alerts = AlertsConfig {
        free_disk_min_bytes: 0,
        disk_full_eta_min_hours: 0,
        ..AlertsConfig::default()
    };
    let m = monitor::spawn(o).unwrap();
    ready(&m).await;
    let s = m.snapshot();
    assert!(
        s.errors
            .iter()
            .any(|e| e.contains("locked by another process")),
        "{:?}",
        s.errors
    );
    assert!(
        !s.errors.iter().any(|e| e.contains("running without it")),
        "{:?}",
        s.errors
    );
    // Meanwhile nothing is deleted: the audit rows cannot be written first, and the error says why.
    let plan = m.plan_reclaim(vec![GPU.into()], DAY).await.unwrap();
    let res = m.execute_reclaim(plan.id).await;
    match &res {
        Err(e @ MonitorError::NoAudit { .. }) => assert!(e.to_string().contains("locked"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(old.iter().all(|d| d.exists()));

    other.execute_batch("COMMIT").unwrap();
    drop(other);
    clock.advance(Duration::from_secs(61));
    let mut snaps = m.subscribe();
    tokio::time::timeout(
        Duration::from_secs(30),
        snaps.wait_for(|s| {
            s.errors.is_empty()
                && s.producers
                    .iter()
                    .any(|p| p.id == GPU && !p.history.is_empty())
        }),
    )
    .await
    .expect("opened and sampled within 30 s of the lock's release")
    .unwrap();
    let plan = m.plan_reclaim(vec![GPU.into()], DAY).await.unwrap();
    let report = m.execute_reclaim(plan.id).await.unwrap();
    assert_eq!(report.deleted_items, 2, "{report:?}");
    m.shutdown().await;
}

/// The flush marker's name in a root is guessable (`.cachewatch-flush-<pid>-<n>`), and a root is
/// often a shared temp dir: it was created with `File::create`, which followed a link planted at
/// that name and truncated its target. Now it is created exclusively; the target stays whole and
/// the flush still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_planted_at_the_flush_markers_name_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    for n in 0..=4 {
        let name = format!(
            "{}{}-{n}",
            cachewatch::watch::map::FLUSH_MARKER_PREFIX,
            std::process::id()
        );
        std::os::unix::fs::symlink(&victim, root.join(name)).unwrap();
    }
    let m = monitor::spawn(options(&root)).unwrap();
    ready(&m).await;
    m.flush().await.unwrap();
    m.flush().await.unwrap();
    m.shutdown().await;
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        5,
        "the links are left"
    );
}

/// Regression: with the data dir on a full disk the monitor logged "running without
/// history", never opened the database again and skipped every auto-reclaim rule until it was
/// restarted: the rules went quiet exactly when the disk was low. Here a file sits where the data
/// dir should be: the database is tried again with backoff (on the manual clock), an alert and a
/// notice say it is unavailable meanwhile, nothing is deleted, and once the way is clear the
/// database opens and the rule runs, every deletion audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_history_database_is_opened_again_and_the_rules_resume() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    let old = make_archives(&root, 3, "old", Some(2 * DAY));
    let data = dir.path().join("data");
    std::fs::write(&data, b"in the way of the data dir").unwrap();
    let db = data.join("cachewatch.db");
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let clock = Arc::new(ManualClock::new(t0));
    let mut o = options(&root);
    o.db_path = Some(db.clone());
    o.clock = clock.clone();
    o.alerts = AlertsConfig {
        free_disk_min_bytes: 0,
        disk_full_eta_min_hours: 0,
        ..AlertsConfig::default()
    };
    o.auto_reclaim = vec![cachewatch::autoreclaim::AutoRule {
        name: "gpu".into(),
        producers: vec![GPU.into()],
        older_than: DAY,
        every: Some(Duration::from_secs(3600)),
        when_items_over: None,
        when_bytes_over: None,
        when_free_below: None,
    }];
    let m = monitor::spawn(o).unwrap();
    ready(&m).await;
    assert!(m.check_auto_reclaim().await.unwrap().is_none());
    let s = m.snapshot();
    assert!(
        s.errors.iter().any(|e| e.starts_with("history unavailable")
            && e.contains("opening it again in 60s")
            && e.contains(&*data.to_string_lossy())),
        "{:?}",
        s.errors
    );
    assert!(
        s.errors
            .iter()
            .any(|e| e.starts_with("auto-reclaim rules not run")),
        "{:?}",
        s.errors
    );
    assert_eq!(
        s.alerts
            .iter()
            .filter(|a| a.rule == "history-unavailable")
            .count(),
        1,
        "{:?}",
        s.alerts
    );
    assert!(old.iter().all(|d| d.exists()));

    // Still in the way at the first retry: the wait doubles, still one alert.
    clock.advance(Duration::from_secs(61));
    assert!(m.check_auto_reclaim().await.unwrap().is_none());
    let s = m.snapshot();
    assert!(
        s.errors
            .iter()
            .any(|e| e.contains("opening it again in 120s")),
        "{:?}",
        s.errors
    );
    assert!(old.iter().all(|d| d.exists()));

    std::fs::remove_file(&data).unwrap();
    clock.advance(Duration::from_secs(121));
    let run = m
        .check_auto_reclaim()
        .await
        .unwrap()
        .expect("the rule runs once the database opens");
    assert_eq!(run.deleted_items, 3, "{run:?}");
    assert!(old.iter().all(|d| !d.exists()));
    let h = cachewatch::history::History::open_read_only(&db).unwrap();
    let audited = h
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap()
        .into_iter()
        .filter(|r| r.outcome == "deleted")
        .count();
    assert_eq!(audited, 3);
    let s = m.snapshot();
    assert!(
        !s.errors
            .iter()
            .any(|e| e.contains("history unavailable")
                || e.starts_with("auto-reclaim rules not run")),
        "{:?}",
        s.errors
    );
    m.shutdown().await;
}

/// Regression: the monitor task panicked (an instant overflow) while the process and
/// `/metrics` stayed up serving its last snapshot as if it were live. Now the last snapshot says
/// the monitor stopped and why, an alert fires, commands fail, `stopped()` resolves (the `watch`
/// command exits non-zero on it) and `/metrics` says `cachewatch_monitor_up 0`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_monitor_task_is_said_stopped_not_served_as_live() {
    let dir = tempfile::tempdir().unwrap();
    make_archives(dir.path(), 2, "p", None);
    let m = monitor::spawn(options(dir.path())).unwrap();
    ready(&m).await;
    let live = m.snapshot();
    assert!(live.stopped.is_none());
    let now = cachewatch::units::unix_secs(SystemTime::now());
    assert!(
        live.live_at_unix_secs.abs_diff(now) <= 60,
        "{} vs {now}",
        live.live_at_unix_secs
    );
    let mut alerts = m.alerts();
    m.inject_panic().await;
    let why = tokio::time::timeout(Duration::from_secs(30), m.stopped())
        .await
        .expect("said stopped within 30 s");
    assert!(why.contains("injected by a test"), "{why}");
    let s = m.snapshot();
    assert_eq!(s.stopped.as_deref(), Some(why.as_str()));
    assert!(s.errors.contains(&why), "{:?}", s.errors);
    assert!(matches!(m.rescan().await, Err(MonitorError::Stopped)));
    let a = alerts.recv().await.unwrap();
    assert_eq!(a.rule, "monitor-stopped");
    let page = cachewatch::metrics::render(&s, &Default::default());
    assert!(page.contains("\ncachewatch_monitor_up 0\n"), "{page}");
}
