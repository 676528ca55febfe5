//! Unknown producers in the live monitor: the unattributed entries of a root grouped by name shape
//! reach the snapshot (true counts and `du`'s bytes), with the process writing into the group, and
//! `/metrics` carries `cachewatch_unattributed_group_bytes{root,shape,writer}` and `..._items`; a group
//! that grows is seen grown without a rescan.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Duration;

use cachewatch::dto::{MonitorState, UnattributedGroupDto};
use cachewatch::metrics::{self, AlertCounts};
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, tree};

const WITHIN: Duration = Duration::from_secs(90);
const SHAPE: &str = "swc-<uuid>/";

fn member(root: &Path, i: usize) -> PathBuf {
    let d = root.join(format!("swc-{i:08x}-1a2b-4c3d-8e9f-{:012x}", i * 7919));
    tree::write_file(&d.join("lib.o"), 2000 + i * 517);
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
    s.unattributed_groups.iter().find(|g| g.shape == SHAPE)
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
async fn an_unknown_producer_is_one_group_with_its_writer_in_the_snapshot_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut members: Vec<PathBuf> = (0..24).map(|i| member(&root, i)).collect();
    for name in [
        "notes.txt",
        "report-2026-01-05.pdf",
        "MyProject/f",
        "foo-1.2.3.tar.gz",
    ] {
        tree::write_file(&root.join(name), 300);
    }
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
    let s = wait_for(&m, "the group with its writer", |s| {
        group(s).is_some_and(|g| !g.writers.is_empty())
    })
    .await;
    let g = group(&s).unwrap();
    assert_eq!(s.unattributed_groups.len(), 1);
    assert_eq!(g.items, 24);
    assert_eq!(g.allocated_bytes, du::allocated(&members));
    assert_eq!(g.apparent_bytes, du::apparent(&members));
    assert_eq!(g.root_kind.as_str(), "temp");
    assert_eq!(g.writers[0].pid, pid);
    assert_eq!(g.writers[0].name, "sleep");
    // The other entries are listed as unattributed, the group's members only in the group.
    let mut lone: Vec<PathBuf> = s
        .unattributed
        .iter()
        .map(|u| PathBuf::from(&u.path))
        .collect();
    lone.sort();
    let mut want: Vec<PathBuf> = [
        "MyProject",
        "foo-1.2.3.tar.gz",
        "notes.txt",
        "report-2026-01-05.pdf",
    ]
    .iter()
    .map(|n| root.join(n))
    .collect();
    want.sort();
    assert_eq!(lone, want);

    let text = metrics::render(&s, &AlertCounts::default());
    let root_label = root.display().to_string();
    assert!(
        text.contains(&format!(
            "cachewatch_unattributed_group_bytes{{root=\"{root_label}\",shape=\"{SHAPE}\",writer=\"sleep\"}} {}",
            g.allocated_bytes
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "cachewatch_unattributed_group_items{{root=\"{root_label}\",shape=\"{SHAPE}\",writer=\"sleep\"}} 24"
        )),
        "{text}"
    );

    // The producer keeps writing: the group grows, no rescan.
    members.extend((24..30).map(|i| member(&root, i)));
    m.flush().await.unwrap();
    let s = wait_for(&m, "30 members", |s| {
        group(s).is_some_and(|g| g.items == 30)
    })
    .await;
    assert_eq!(group(&s).unwrap().allocated_bytes, du::allocated(&members));
    drop(writer);
    m.shutdown().await;
}
