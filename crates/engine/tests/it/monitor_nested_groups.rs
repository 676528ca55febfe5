//! A leak one level down in the live monitor: `tool-out/<ISO time>/` x 40 reaches the snapshot as
//! one group labelled `tool-out/<shape>` (hand count, `du`'s bytes of the members, the process
//! working in a member as its writer), grows when the tool writes more runs, without a rescan,
//! and "Make a rule" on it writes a `tool-out/<glob>` rule whose producer has exactly its members.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Duration;

use cachewatch::api::groups;
use cachewatch::dto::{MonitorState, UnattributedGroupDto};
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, tree};

const WITHIN: Duration = Duration::from_secs(90);

/// The `i`-th run dir of the tool, named by an ISO time with `:` written `-`.
fn run(out: &Path, i: usize) -> PathBuf {
    let d = out.join(format!(
        "2026-{:02}-{:02}T{:02}-{:02}-{:02}",
        1 + i % 12,
        1 + i % 28,
        i % 24,
        (i * 7) % 60,
        (i * 13) % 60
    ));
    tree::write_file(&d.join("trace.zip"), 3000 + i * 1009);
    tree::write_file(&d.join("logs/out.txt"), 10 * i);
    d
}

struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn group(s: &Snapshot) -> Option<&UnattributedGroupDto> {
    s.unattributed_groups
        .iter()
        .find(|g| g.shape.starts_with("tool-out/"))
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
async fn a_group_one_level_down_is_in_the_snapshot_and_grows_without_a_rescan() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    let out = root.join("tool-out");
    let mut members: Vec<PathBuf> = (0..40).map(|i| run(&out, i)).collect();
    // Ordinary words in a sibling: no group there.
    for w in ["src", "notes", "build", "docs", "assets"] {
        tree::write_file(&root.join("proj").join(w).join("f"), 700);
    }
    tree::write_file(&root.join("notes.txt"), 300);
    let writer = Sleeper(
        Command::new("sleep")
            .arg("600")
            .current_dir(&members[3])
            .spawn()
            .unwrap(),
    );
    let pid = writer.0.id();
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, &root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.debounce = Duration::from_millis(50);
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    let s = wait_for(&m, "the group inside tool-out with its writer", |s| {
        group(s).is_some_and(|g| !g.writers.is_empty())
    })
    .await;
    assert_eq!(
        s.unattributed_groups.len(),
        1,
        "{:?}",
        s.unattributed_groups
    );
    let g = group(&s).unwrap();
    assert_eq!(
        g.shape,
        "tool-out/2026-<digits2>-<digits2>T<digits2>-<digits2>-<digits2>/"
    );
    assert_eq!(g.items, 40);
    assert_eq!(g.allocated_bytes, du::allocated(&members));
    assert_eq!(g.apparent_bytes, du::apparent(&members));
    assert_eq!(g.writers[0].pid, pid);
    assert_eq!(g.examples.len(), 3);
    // The group shows tool-out's children; tool-out itself (nothing else in it) is not listed
    // beside it as well: no byte counted twice.
    assert!(
        s.unattributed.iter().all(|u| !u.path.ends_with("tool-out")),
        "{:?}",
        s.unattributed
    );
    assert!(s.unattributed.iter().any(|u| u.path.ends_with("proj")));

    // The tool writes ten more runs: the dir is re-measured, its group follows.
    members.extend((40..50).map(|i| run(&out, i)));
    m.flush().await.unwrap();
    let s = wait_for(&m, "50 members", |s| {
        group(s).is_some_and(|g| g.items == 50)
    })
    .await;
    assert_eq!(group(&s).unwrap().allocated_bytes, du::allocated(&members));
    assert_eq!(
        s.roots[0].rescans, 0,
        "seen through a re-measure, not a rescan"
    );
    let g = group(&s).unwrap().clone();
    assert_eq!(g.label, g.shape);

    // "Make a rule" on it: the engine's check counts the 50 members, the rule's glob is inside
    // tool-out; written, the monitor shows a producer of exactly those items and bytes.
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "# mine\n").unwrap();
    let p = groups::preview_group_rule(&m, Some(&config), &g.root, &g.label)
        .await
        .unwrap();
    assert_eq!(p.refused, None, "{p:?}");
    assert_eq!(p.claimed, 50);
    assert!(p.is_exact(), "{p:?}");
    let rule = p.rule.clone().unwrap();
    assert!(rule.glob.starts_with("tool\\-out/2026"), "{}", rule.glob);
    let added = groups::add_group_rule(&m, Some(&config), &g.root, &g.label, &rule.id, &rule.regex)
        .await
        .unwrap();
    assert_eq!(added.claimed, 50);
    let s = wait_for(&m, "the producer", |s| {
        s.producers.iter().any(|p| p.id == rule.id && p.items == 50)
    })
    .await;
    let prod = s.producers.iter().find(|p| p.id == rule.id).unwrap();
    assert_eq!(prod.allocated_bytes, du::allocated(&members));
    assert!(group(&s).is_none(), "{:?}", s.unattributed_groups);
    drop(writer);
    m.shutdown().await;
}

/// The `i`-th log dir of a project, `logs-<ISO time>`, with a file or two.
fn log(project: &Path, i: usize) -> PathBuf {
    let d = project.join(format!(
        "logs-2026-{:02}-{:02}T{:02}-{:02}-{:02}",
        1 + i % 12,
        1 + i % 28,
        i % 24,
        (i * 7) % 60,
        (i * 13) % 60
    ));
    tree::write_file(&d.join("server.log"), 2000 + i * 1301);
    d
}

fn group_in<'s>(s: &'s Snapshot, prefix: &str) -> Option<&'s UnattributedGroupDto> {
    s.unattributed_groups
        .iter()
        .find(|g| g.shape.starts_with(prefix))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_two_levels_down_are_in_the_snapshot_follow_a_remeasure_and_make_a_rule() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    let tool = root.join("tool");
    let mut a: Vec<PathBuf> = (0..25).map(|i| log(&tool.join("proj-a"), i)).collect();
    let b: Vec<PathBuf> = (0..22)
        .map(|i| log(&tool.join("proj-b"), 100 + i))
        .collect();
    tree::write_file(&tool.join("tool.db"), 9_999);
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, &root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.debounce = Duration::from_millis(50);
    let m = monitor::spawn(opts).unwrap();
    let s = wait_for(&m, "two groups inside tool", |s| {
        s.state != MonitorState::Scanning
            && group_in(s, "tool/proj-a/logs-").is_some()
            && group_in(s, "tool/proj-b/logs-").is_some()
    })
    .await;
    assert_eq!(
        s.unattributed_groups.len(),
        2,
        "{:?}",
        s.unattributed_groups
    );
    let ga = group_in(&s, "tool/proj-a/logs-").unwrap();
    let gb = group_in(&s, "tool/proj-b/logs-").unwrap();
    assert_eq!((ga.items, gb.items), (25, 22));
    assert_eq!(ga.allocated_bytes, du::allocated(&a));
    assert_eq!(gb.allocated_bytes, du::allocated(&b));
    // `tool` lists only what the groups leave of it: no byte counted twice.
    let rest = du::allocated(&[&tool]) - du::allocated(&a) - du::allocated(&b);
    let t = s
        .unattributed
        .iter()
        .find(|u| u.path.ends_with("tool"))
        .expect("tool's rest");
    assert_eq!(t.allocated_bytes, rest);

    // Five more logs in proj-a: `tool` is re-measured, the group follows without a rescan.
    a.extend((25..30).map(|i| log(&tool.join("proj-a"), i)));
    m.flush().await.unwrap();
    let s = wait_for(&m, "30 members in proj-a", |s| {
        group_in(s, "tool/proj-a/logs-").is_some_and(|g| g.items == 30)
    })
    .await;
    let ga = group_in(&s, "tool/proj-a/logs-").unwrap().clone();
    assert_eq!(ga.allocated_bytes, du::allocated(&a));
    assert_eq!(group_in(&s, "tool/proj-b/logs-").unwrap().items, 22);
    assert_eq!(s.roots[0].rescans, 0);

    // A rule from the proj-a group claims exactly its 30 members.
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let p = groups::preview_group_rule(&m, Some(&config), &ga.root, &ga.label)
        .await
        .unwrap();
    assert_eq!(p.refused, None, "{p:?}");
    assert!(p.is_exact(), "{p:?}");
    assert_eq!(p.claimed, 30);
    let rule = p.rule.clone().unwrap();
    assert!(
        rule.glob.starts_with("[t]ool/proj\\-a/logs\\-"),
        "{}",
        rule.glob
    );
    let added = groups::add_group_rule(
        &m,
        Some(&config),
        &ga.root,
        &ga.label,
        &rule.id,
        &rule.regex,
    )
    .await
    .unwrap();
    assert_eq!(added.claimed, 30);
    let s = wait_for(&m, "the producer", |s| {
        s.producers.iter().any(|p| p.id == rule.id && p.items == 30)
    })
    .await;
    let prod = s.producers.iter().find(|p| p.id == rule.id).unwrap();
    assert_eq!(prod.allocated_bytes, du::allocated(&a));
    assert!(group_in(&s, "tool/proj-a/").is_none());
    assert_eq!(group_in(&s, "tool/proj-b/logs-").unwrap().items, 22);
    m.shutdown().await;
}
