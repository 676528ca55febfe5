//! A group of unattributed entries across a monitor restart, with real processes: a renamed copy
//! of `sh` (`leakwriter`) launched a dozen times leaves two `wrk_<pid>_<n>_<ts>` dirs a launch
//! and exits. The history database keeps the group's samples and its writer: after a restart
//! (with no `leakwriter` running, so nothing but the database can name it) the group is still
//! named after it with when it was last seen alive and is a confirmed leak; members added while
//! the monitor was down count as growth (from the stored samples) and the
//! `unknown-producer-growth` alert names the writer; `/metrics` labels the group with it. The rule
//! the window makes from the group keeps `owner.pid_in_name` and its `pid` capture across the
//! restart: the database keeps which digit run of the names is the pid.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use cachewatch::alerts::AlertsConfig;
use cachewatch::dto::EvidenceKindDto;
use cachewatch::dto::{MonitorState, UnattributedGroupDto};
use cachewatch::history::{key_from_hex, History, StoredWriter};
use cachewatch::metrics::{self, AlertCounts};
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::provenance::EvidenceKind;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::du;
use cachewatch_testkit::leakwriter::{self, launch, unix_now, Launch, WRITER};

const WITHIN: Duration = Duration::from_secs(90);
/// Members added while the monitor is down.
const ADDED: u64 = 20;

fn group(s: &Snapshot) -> Option<&UnattributedGroupDto> {
    s.unattributed_groups
        .iter()
        .find(|g| g.shape.starts_with("wrk_"))
}

/// The `wrk_` members, by hand.
fn members(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("wrk_"))
        })
        .collect();
    out.sort();
    out
}

async fn wait_for(m: &MonitorHandle, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Arc<Snapshot> {
    let mut rx = m.subscribe();
    let res = tokio::time::timeout(WITHIN, rx.wait_for(|s| ok(s))).await;
    let out = match res {
        Ok(Ok(s)) => s.clone(),
        _ => panic!(
            "{what}: not in the snapshot: {:#?}\nalerts: {:#?}",
            m.snapshot().unattributed_groups,
            m.snapshot().alerts
        ),
    };
    out
}

async fn start(root: &Path, db: &Path) -> MonitorHandle {
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.debounce = Duration::from_millis(50);
    opts.db_path = Some(db.to_path_buf());
    opts.sample_interval = Duration::from_secs(1);
    opts.alerts = AlertsConfig {
        producer_growth_bytes: 0,
        // More than the launches' members (24) can grow by, less than what is added while the
        // monitor is down.
        producer_growth_items: 15,
        ..AlertsConfig::default()
    };
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m
}

/// The name regex of the rule the window makes from the `wrk_` group of `s` (checked against the
/// config file `config`): it claims every member and is owned by the pid in the name.
async fn pid_rule(m: &MonitorHandle, config: &Path, s: &Snapshot) -> String {
    let g = group(s).unwrap();
    let p = cachewatch::api::groups::preview_group_rule(m, Some(config), &g.root, &g.label)
        .await
        .unwrap();
    assert_eq!((p.members, p.claimed), (g.items, g.items), "{p:?}");
    let rule = p.rule.unwrap();
    assert!(rule.toml.contains("pid_in_name = true"), "{}", rule.toml);
    assert_eq!(rule.regex.matches("(?P<pid>").count(), 1, "{}", rule.regex);
    rule.regex
}

/// Reads the database (read-only, beside the monitor) until `ok` holds of what `read` returns.
async fn poll_db<T: std::fmt::Debug>(
    db: &Path,
    what: &str,
    read: impl Fn(&History) -> T,
    ok: impl Fn(&T) -> bool,
) -> T {
    let mut last = None;
    for _ in 0..180 {
        if let Ok(h) = History::open_read_only(db) {
            let got = read(&h);
            if ok(&got) {
                return got;
            }
            last = Some(got);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{what}: not in the database: {last:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_exited_is_named_after_a_restart_and_the_growth_carries_over() {
    let bin = tempfile::tempdir().unwrap();
    let exe = leakwriter::install(bin.path());
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");

    let m = start(&root, &db).await;
    let mut launches: Vec<Launch> = (0..12)
        .map(|_| {
            let l = launch(&exe, &root);
            std::thread::sleep(Duration::from_millis(300));
            l
        })
        .collect();
    // Alive long enough for a sample of the process table (at most one a second) to see them.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for l in &mut launches {
        l.finish();
    }
    // A new unattributed entry: the monitor samples the process table again and sees them gone.
    std::fs::write(root.join("after-the-launches.txt"), "x").unwrap();
    m.flush().await.unwrap();
    let s = wait_for(&m, "the 24 members named by their exited writer", |s| {
        group(s).is_some_and(|g| {
            g.items == 24
                && g.evidence
                    .iter()
                    .any(|e| e.kind == EvidenceKindDto::PidInName && e.name == WRITER && !e.alive)
        })
    })
    .await;
    let key = key_from_hex(&group(&s).unwrap().history_key).unwrap();
    let at_shutdown = members(&root);
    assert_eq!(at_shutdown.len(), 24);
    let conf = tempfile::tempdir().unwrap();
    let config = conf.path().join("config.toml");
    std::fs::write(&config, "# mine\n").unwrap();
    let before = pid_rule(&m, &config, &s).await;
    assert!(before.starts_with("^wrk_(?P<pid>[0-9]"), "{before}");

    // The database holds the writer, not alive since its last sight, and a sample of all 24.
    poll_db(
        &db,
        "the exited writer",
        |h| h.group_writers().unwrap(),
        |ws| {
            ws.iter().any(|w| {
                w.key == key
                    && w.kind == EvidenceKind::PidInName
                    && w.name == WRITER
                    && w.last_seen.is_some()
            })
        },
    )
    .await;
    let allocated_24 = du::allocated(&at_shutdown);
    poll_db(
        &db,
        "a sample of the 24 members",
        |h| h.group_series(&key, UNIX_EPOCH).unwrap(),
        |rows| rows.iter().any(|(_, b, i)| *i == 24 && *b == allocated_24),
    )
    .await;
    m.shutdown().await;
    drop(launches);
    let h = History::open_read_only(&db).unwrap();
    let before_restart = h.group_series(&key, UNIX_EPOCH).unwrap();
    let writer: StoredWriter = h
        .group_writers()
        .unwrap()
        .into_iter()
        .find(|w| w.key == key && w.kind == EvidenceKind::PidInName)
        .unwrap();
    drop(h);
    assert_eq!(
        writer.exe.as_deref().map(Path::to_path_buf),
        Some(std::fs::canonicalize(&exe).unwrap())
    );
    let last_seen = writer.last_seen.unwrap();
    // The pid is the names' first digit run.
    assert_eq!(writer.pid_run, Some(0), "{writer:?}");

    // While the monitor is down the group grows, by members whose numbers are no pid.
    for i in 0..ADDED {
        let d = root.join(format!(
            "wrk_{}_{}_{}",
            4_200_000 + i * 17,
            i % 2,
            unix_now()
        ));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), "leak").unwrap();
    }
    let all = members(&root);
    // Samples are kept one a minute: the restart's samples start in the next minute, so none
    // replaces the last one taken before the restart.
    tokio::time::sleep(Duration::from_secs(61 - unix_now() % 60)).await;
    assert_eq!(all.len() as u64, 24 + ADDED);
    // Another copy of a program of the same name runs (elsewhere) across the restart: it is not
    // the remembered writer, whose executable was another file.
    let other_bin = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let _bystander = launch(&leakwriter::install(other_bin.path()), elsewhere.path());

    let m = start(&root, &db).await;
    let s = wait_for(
        &m,
        "the group named by its remembered writer, a confirmed leak",
        |s| group(s).is_some_and(|g| g.items == 24 + ADDED && g.confirmed_leak),
    )
    .await;
    let g = group(&s).unwrap();
    assert_eq!(g.allocated_bytes, du::allocated(&all));
    let e = g
        .evidence
        .iter()
        .find(|e| e.kind == EvidenceKindDto::PidInName)
        .unwrap_or_else(|| panic!("no pid-in-name evidence: {:#?}", g.evidence));
    assert_eq!(e.name, WRITER);
    assert!(!e.alive, "{e:?}");
    assert_eq!(
        e.last_seen_unix_secs,
        Some(last_seen.duration_since(UNIX_EPOCH).unwrap().as_secs())
    );
    assert_eq!(
        e.exe.as_deref().map(PathBuf::from),
        Some(std::fs::canonicalize(&exe).unwrap())
    );
    // No process of the members' pids runs: only the stored digit run gives the rule its owner,
    // the pid captured from the same run as before the restart.
    let after = pid_rule(&m, &config, &s).await;
    assert!(after.starts_with("^wrk_(?P<pid>[0-9]"), "{after}");

    // The growth over the window starts at the first stored sample, taken before the restart.
    let first_items = before_restart.first().unwrap().2;
    let s = wait_for(&m, "the unknown-producer-growth alert", |s| {
        s.alerts.iter().any(|a| a.rule == "unknown-producer-growth")
    })
    .await;
    let alert = s
        .alerts
        .iter()
        .find(|a| a.rule == "unknown-producer-growth")
        .unwrap();
    let grown = 24 + ADDED - first_items;
    assert!(
        alert.message.contains(&format!(" and {grown} items in ")),
        "grew {grown} items since the first stored sample: {}",
        alert.message
    );
    assert!(
        alert
            .message
            .contains(&format!("Written by {WRITER} (exited; last seen ")),
        "{}",
        alert.message
    );
    assert!(
        alert
            .message
            .contains("Its writers have all exited: a confirmed leak of "),
        "{}",
        alert.message
    );

    // `/metrics` labels the group with its writer.
    let text = metrics::render(&s, &AlertCounts::default());
    let g = group(&s).unwrap();
    let line = text
        .lines()
        .find(|l| {
            l.starts_with("cachewatch_unattributed_group_bytes{")
                && l.contains(&format!("shape=\"{}\"", g.shape))
        })
        .unwrap_or_else(|| panic!("no group line: {text}"));
    let (labels, value) = line.rsplit_once(' ').unwrap();
    assert!(
        labels.ends_with(&format!(",writer=\"{WRITER}\"}}")),
        "{line}"
    );
    assert_eq!(value.parse::<u64>().unwrap(), g.allocated_bytes);

    // The samples before the restart are still there, and the restart added its own.
    let after = History::open_read_only(&db)
        .unwrap()
        .group_series(&key, UNIX_EPOCH)
        .unwrap();
    for row in &before_restart {
        assert!(after.contains(row), "{row:?} lost: {after:?}");
    }
    assert!(
        after.iter().any(|(_, _, i)| *i == 24 + ADDED),
        "no sample of {} members: {after:?}",
        24 + ADDED
    );
    m.shutdown().await;
}
