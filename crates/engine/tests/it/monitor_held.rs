//! A writer seen holding a member only for a moment, in the live monitor, with a real process: a
//! renamed copy of `sh` makes a new member of a group of unattributed entries and holds a file
//! in it open for 2 s, then exits, all between two refreshes of the figures. The growth has the
//! monitor look at who holds the new member while it grows, so the group names the copy as its
//! holder, and still names it (exited, with when it was last seen) after it is gone; the history
//! database keeps it with the group's other writers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use cachewatch::dto::{EvidenceDto, EvidenceKindDto};
use cachewatch::dto::{MonitorState, UnattributedGroupDto};
use cachewatch::history::{key_from_hex, History};
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::provenance::EvidenceKind;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::leakwriter::{self, unix_now};

const WITHIN: Duration = Duration::from_secs(90);
/// The holder's name: a copy of `sh` under a name no other process has.
const HOLDER: &str = "heldwriter";

fn group(s: &Snapshot) -> Option<&UnattributedGroupDto> {
    s.unattributed_groups
        .iter()
        .find(|g| g.shape.starts_with("hld_"))
}

fn held(s: &Snapshot) -> Option<&EvidenceDto> {
    group(s)?
        .evidence
        .iter()
        .find(|e| e.kind == EvidenceKindDto::Held && e.name == HOLDER)
}

async fn wait_for(m: &MonitorHandle, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Arc<Snapshot> {
    let mut rx = m.subscribe();
    let res = tokio::time::timeout(WITHIN, rx.wait_for(|s| ok(s))).await;
    match res {
        Ok(Ok(s)) => s.clone(),
        _ => panic!(
            "{what}: not in the snapshot: {:#?}",
            m.snapshot().unattributed_groups
        ),
    }
}

/// A member named with a number no process has (above Linux's default pid_max, 4,194,304, and
/// any pid macOS gives), so no pid-in-name evidence names anybody.
fn member(root: &Path, n: u32) -> PathBuf {
    root.join(format!("hld_{}_{}", 4_200_000 + n * 17, unix_now()))
}

fn make_member(root: &Path, n: u32) {
    let d = member(root, n);
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("f"), "leak").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_holding_a_new_member_for_two_seconds_is_named_after_it_exits() {
    let bin = tempfile::tempdir().unwrap();
    let exe = bin.path().join(HOLDER);
    std::fs::copy("/bin/sh", &exe).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    // A group shows from 20 members on (`GROUP_MIN_ITEMS`).
    for n in 0..20 {
        make_member(&root, n);
    }
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, &root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.debounce = Duration::from_millis(50);
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("cachewatch.db");
    opts.db_path = Some(db.clone());
    opts.sample_interval = Duration::from_secs(1);
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    wait_for(&m, "the group of 20", |s| {
        group(s).is_some_and(|g| g.items == 20)
    })
    .await;

    // A member added with no flush shows once the monitor computes its figures by itself (on its
    // tick): they were just computed when it shows, so the next time comes seconds later, after
    // the holder below has come and gone.
    make_member(&root, 20);
    wait_for(&m, "the group of 21, by the monitor's own refresh", |s| {
        group(s).is_some_and(|g| g.items == 21)
    })
    .await;
    let launched = unix_now();
    let new_member = member(&root, 21);
    let mut holder = leakwriter::hold(&exe, &new_member);
    tokio::time::sleep(Duration::from_secs(2)).await;
    holder.finish();
    let exited = unix_now();
    assert!(new_member.join("f").is_file(), "the holder made its member");

    // Another unattributed entry: the monitor looks at the process table again and sees the
    // holder gone. The flush computes the figures now.
    std::fs::write(root.join("after-the-holder.txt"), "x").unwrap();
    m.flush().await.unwrap();
    let s = wait_for(&m, "the group of 22 naming its exited holder", |s| {
        group(s).is_some_and(|g| g.items == 22) && held(s).is_some_and(|e| !e.alive)
    })
    .await;
    let e = held(&s).unwrap();
    assert_eq!((e.agree, e.total), (1, 22), "{e:?}");
    assert_eq!(
        e.exe.as_deref().map(PathBuf::from),
        Some(std::fs::canonicalize(&exe).unwrap()),
        "{e:?}"
    );
    let seen = e.last_seen_unix_secs.unwrap();
    assert!(
        (launched..=exited).contains(&seen),
        "last seen at {seen}, alive from {launched} to {exited}"
    );

    // Stored like the group's other writers.
    let key = key_from_hex(&group(&s).unwrap().history_key).unwrap();
    let mut stored = None;
    for _ in 0..120 {
        stored = History::open_read_only(&db)
            .ok()
            .and_then(|h| h.group_writers().ok())
            .and_then(|ws| {
                ws.into_iter()
                    .find(|w| w.key == key && w.kind == EvidenceKind::Held && w.name == HOLDER)
            });
        if stored.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let w = stored.expect("the holder is not in the history database");
    assert_eq!(w.exe, Some(std::fs::canonicalize(&exe).unwrap()));
    assert_eq!(w.agree, 1);
    let stored_seen = w
        .last_seen
        .unwrap()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        (launched..=exited).contains(&stored_seen),
        "stored as last seen at {stored_seen}, alive from {launched} to {exited}"
    );
    m.shutdown().await;
}
