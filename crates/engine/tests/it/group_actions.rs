//! The window acts on a group of unattributed entries through the engine API: "Make a rule…"
//! previews what the rule would claim (the engine's own check: a hand count and `du` of the
//! members), writes it into the config (comments kept), and the monitor, given the new catalogue,
//! shows the group as a producer of the same items and bytes; "Ignore this shape" hides the group
//! (kept in the config across a restart, names that are not UTF-8 included) until shown again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cachewatch::api::{groups, Locations, Session};
use cachewatch::dto::MonitorState;
use cachewatch::monitor::{self, MonitorHandle};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Root, RootKind};
use cachewatch_testkit::{du, tree};

const WITHIN: Duration = Duration::from_secs(90);
const CONFIG: &str = "# my settings\n[reclaim]\nolder_than = \"3d\" # three days\n";

/// Member `i` of a group of dirs `<prefix><uuid>` holding one file of a size of its own.
fn member(root: &Path, prefix: &[u8], i: usize) -> PathBuf {
    let mut name = prefix.to_vec();
    name.extend_from_slice(format!("{i:08x}-1a2b-4c3d-8e9f-{:012x}", i * 7919).as_bytes());
    let d = root.join(OsStr::from_bytes(&name));
    tree::write_file(&d.join("lib.o"), 2000 + i * 517);
    d
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    config: PathBuf,
    data: PathBuf,
    members: Vec<PathBuf>,
}

fn setup(prefix: &[u8]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let root = base.join("tmp");
    std::fs::create_dir(&root).unwrap();
    let members = (0..24).map(|i| member(&root, prefix, i)).collect();
    for name in ["notes.txt", "report-2026-01-05.pdf", "MyProject/f"] {
        tree::write_file(&root.join(name), 300);
    }
    let config = base.join("config.toml");
    std::fs::write(&config, CONFIG).unwrap();
    Setup {
        root,
        config,
        data: base.join("data"),
        members,
        _dir: dir,
    }
}

/// A monitor started as a front end starts it: from the config file.
async fn start(s: &Setup) -> MonitorHandle {
    let session = Session::load(&Locations {
        config: Some(s.config.clone()),
        data_dir: Some(s.data.clone()),
    })
    .unwrap();
    let mut opts = session
        .monitor_options(vec![Root::new(RootKind::Temp, &s.root).unwrap()])
        .unwrap();
    opts.debounce = Duration::from_millis(50);
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m
}

async fn wait_for(m: &MonitorHandle, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Arc<Snapshot> {
    let mut rx = m.subscribe();
    let res = tokio::time::timeout(WITHIN, rx.wait_for(|s| ok(s))).await;
    match res {
        Ok(Ok(s)) => s.clone(),
        _ => panic!(
            "{what}: not in the snapshot: {:?}",
            m.snapshot().unattributed_groups
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_made_a_rule_is_previewed_by_the_engines_check_and_becomes_a_producer() {
    let s = setup(b"swc-");
    let m = start(&s).await;
    let snap = wait_for(&m, "the group", |s| s.unattributed_groups.len() == 1).await;
    let g = &snap.unattributed_groups[0];
    assert_eq!(g.shape, "swc-<uuid>/");
    assert_eq!(g.label, g.shape);

    let p = groups::preview_group_rule(&m, Some(&s.config), &g.root, &g.label)
        .await
        .unwrap();
    assert_eq!(p.refused, None);
    assert_eq!(p.members, 24);
    assert_eq!(p.claimed, 24, "the engine's check counts every member");
    assert_eq!(p.allocated_bytes, du::allocated(&s.members));
    assert_eq!(p.apparent_bytes, du::apparent(&s.members));
    assert!(p.wrongly_claimed.is_empty() && p.missed.is_empty(), "{p:?}");
    let rule = p.rule.clone().unwrap();
    assert_eq!(rule.id, "local-swc");
    assert!(rule.toml.contains("id = \"local-swc\""), "{}", rule.toml);
    // A preview writes nothing.
    assert_eq!(std::fs::read_to_string(&s.config).unwrap(), CONFIG);

    // The window's "Copy report": the monitor's own figures of the group, drafted.
    let r = cachewatch::api::report::group_report(&m, &g.root, &g.label)
        .await
        .unwrap();
    assert_eq!(r.template, "swc-<uuid>/");
    assert_eq!(r.items, 24);
    assert_eq!(r.allocated_bytes, du::allocated(&s.members));
    assert_eq!(r.apparent_bytes, du::apparent(&s.members));
    assert!(r.markdown.contains("swc-<uuid>/"), "{}", r.markdown);
    let gone = cachewatch::api::report::group_report(&m, &g.root, "nothing-<uuid>/")
        .await
        .unwrap_err();
    assert!(gone.to_string().contains("nothing-<uuid>/"), "{gone}");

    // A regex that is not the group's rule any more: refused, nothing written.
    let stale = groups::add_group_rule(&m, Some(&s.config), &g.root, &g.label, &rule.id, "^swc-$")
        .await
        .unwrap_err();
    assert!(
        stale.to_string().contains("changed since its preview"),
        "{stale}"
    );
    assert_eq!(std::fs::read_to_string(&s.config).unwrap(), CONFIG);

    let added = groups::add_group_rule(
        &m,
        Some(&s.config),
        &g.root,
        &g.label,
        &rule.id,
        &rule.regex,
    )
    .await
    .unwrap();
    assert_eq!(added.id, "local-swc");
    assert_eq!(added.claimed, 24);
    let text = std::fs::read_to_string(&s.config).unwrap();
    assert!(text.starts_with(CONFIG), "comments kept: {text}");
    assert!(text.contains("[[producer]]"), "{text}");

    let snap = wait_for(&m, "the producer", |s| {
        s.producers
            .iter()
            .any(|p| p.id == "local-swc" && p.items == 24)
    })
    .await;
    let prod = snap.producers.iter().find(|p| p.id == "local-swc").unwrap();
    assert_eq!(prod.allocated_bytes, du::allocated(&s.members));
    assert_eq!(prod.apparent_bytes, du::apparent(&s.members));
    assert!(
        snap.unattributed_groups.is_empty(),
        "{:?}",
        snap.unattributed_groups
    );

    // The group is gone: a second rule for it has nothing to act on.
    let again = groups::preview_group_rule(&m, Some(&s.config), &g.root, &g.label)
        .await
        .unwrap_err();
    assert!(again.to_string().contains("no group"), "{again}");
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignored_shape_stays_hidden_across_a_restart_until_shown_again() {
    // Names that are not UTF-8: no rule can be made, but the shape can be ignored, and its label
    // names those bytes (never a U+FFFD rendering).
    let s = setup(b"swc\xff-");
    let m = start(&s).await;
    let snap = wait_for(&m, "the group", |s| s.unattributed_groups.len() == 1).await;
    let g = snap.unattributed_groups[0].clone();
    assert_eq!(g.label, "swc\\xff-<uuid>/");
    assert_eq!(g.items, 24);

    let p = groups::preview_group_rule(&m, Some(&s.config), &g.root, &g.label)
        .await
        .unwrap();
    assert!(p.rule.is_none());
    assert!(p.refused.unwrap().contains("not UTF-8"));

    let list = groups::ignore_shape(&m, Some(&s.config), &g.label, true)
        .await
        .unwrap();
    assert_eq!(list, vec![g.label.clone()]);
    let snap = m.snapshot();
    assert!(snap.unattributed_groups.is_empty());
    assert_eq!(snap.hidden_groups, 1);
    assert_eq!(snap.ignored_shapes, vec![g.label.clone()]);
    let text = std::fs::read_to_string(&s.config).unwrap();
    assert!(text.starts_with(CONFIG), "comments kept: {text}");
    m.shutdown().await;

    // Restarted from the config: still hidden.
    let m = start(&s).await;
    let snap = wait_for(&m, "the hidden group", |s| s.hidden_groups == 1).await;
    assert!(snap.unattributed_groups.is_empty());
    assert_eq!(snap.ignored_shapes, vec![g.label.clone()]);

    // A group that looks like it in text but holds other bytes is not hidden by it.
    let other = groups::ignore_shape(&m, Some(&s.config), "swc\u{fffd}-<uuid>/", false)
        .await
        .unwrap_err();
    assert!(other.to_string().contains("is not ignored"), "{other}");

    let list = groups::ignore_shape(&m, Some(&s.config), &g.label, false)
        .await
        .unwrap();
    assert!(list.is_empty());
    let snap = m.snapshot();
    assert_eq!(snap.hidden_groups, 0);
    assert_eq!(snap.unattributed_groups.len(), 1);
    assert_eq!(snap.unattributed_groups[0].items, 24);
    assert_eq!(
        snap.unattributed_groups[0].allocated_bytes,
        du::allocated(&s.members)
    );
    assert!(std::fs::read_to_string(&s.config)
        .unwrap()
        .starts_with(CONFIG));
    m.shutdown().await;
}
