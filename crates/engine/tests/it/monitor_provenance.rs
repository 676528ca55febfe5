//! Who wrote an unknown producer's group, in the live monitor, with real processes: a renamed
//! copy of `sh` launched a dozen times, each launch leaving two `wrk_<pid>_<n>_<ts>` dirs in the
//! watched root. The group's evidence names the copy by the pid in the names, counts the members
//! of launches that exited as orphans, and names it again by the births right after its starts;
//! members that no process start explains and whose numbers are no pid name nobody.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cachewatch::dto::{EvidenceDto, EvidenceKindDto};
use cachewatch::dto::{MonitorState, UnattributedGroupDto};
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::leakwriter::{self, launch, unix_now, Launch, WRITER};

const WITHIN: Duration = Duration::from_secs(90);
const SHAPE_PREFIX: &str = "wrk_";

fn group(s: &Snapshot) -> Option<&UnattributedGroupDto> {
    s.unattributed_groups
        .iter()
        .find(|g| g.shape.starts_with(SHAPE_PREFIX))
}

fn evidence(s: &Snapshot, kind: EvidenceKindDto) -> Option<&EvidenceDto> {
    group(s)?.evidence.iter().find(|e| e.kind == kind)
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

async fn start(root: &Path) -> MonitorHandle {
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Temp, root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.debounce = Duration::from_millis(50);
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m
}

/// The pids in the members' names, by hand: the first digit run of each `wrk_` entry.
fn pids_in(root: &Path) -> Vec<u32> {
    let mut out: Vec<u32> = std::fs::read_dir(root)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().ok()?;
            name.strip_prefix(SHAPE_PREFIX)?
                .split('_')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    out.sort_unstable();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dozen_launches_are_named_by_the_pid_in_their_names_with_the_exited_ones_orphans() {
    let bin = tempfile::tempdir().unwrap();
    let exe = leakwriter::install(bin.path());
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let m = start(&root).await;
    // A busy temp dir before the launches: the monitor samples every second, so the launch
    // evidence has control instants (17 s before each birth) that a sample looked at.
    for i in 0..38 {
        std::fs::write(root.join("lead-in.txt"), format!("{i}")).unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // 1.2 s apart: the launches span 13 s, so none lies 17 s before another's births.
    let mut launches: Vec<Launch> = Vec::new();
    for _ in 0..12 {
        launches.push(launch(&exe, &root));
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
    let pids: Vec<u32> = launches.iter().map(|l| l.child.id()).collect();
    // Every launch lives a few seconds: long enough for a sample (at most one a second) to see it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (keeper, exited) = launches.split_last_mut().unwrap();
    for l in exited.iter_mut() {
        l.finish();
    }
    let mut expected: Vec<u32> = pids.iter().flat_map(|&p| [p, p]).collect();
    expected.sort_unstable();
    assert_eq!(pids_in(&root), expected, "each launch left two members");
    // A new unattributed entry: the monitor samples again and sees the eleven gone.
    std::fs::write(root.join("after-the-launches.txt"), "x").unwrap();
    m.flush().await.unwrap();

    let s = wait_for(&m, "pid-in-name evidence with 22 orphans", |s| {
        evidence(s, EvidenceKindDto::PidInName).is_some_and(|e| e.orphans == Some(22))
    })
    .await;
    let g = group(&s).unwrap();
    assert_eq!(g.items, 24);
    let e = evidence(&s, EvidenceKindDto::PidInName).unwrap();
    assert_eq!(e.name, WRITER);
    assert_eq!((e.agree, e.total), (24, 24));
    assert_eq!(
        e.exe.as_deref().map(PathBuf::from),
        Some(std::fs::canonicalize(&exe).unwrap())
    );
    assert!(e.alive, "the twelfth launch still runs: {e:?}");
    let launch_ev = evidence(&s, EvidenceKindDto::CreatedAtLaunch)
        .unwrap_or_else(|| panic!("no created-at-launch evidence: {:#?}", g.evidence));
    assert_eq!(launch_ev.name, WRITER);
    assert_eq!((launch_ev.agree, launch_ev.total), (24, 24));
    // The rule the window makes from the group takes its owner from that evidence, though
    // eleven of the twelve writers have exited: the pid run becomes the rule's `pid` capture.
    let conf = tempfile::tempdir().unwrap();
    let config = conf.path().join("config.toml");
    std::fs::write(&config, "# mine\n").unwrap();
    let p = cachewatch::api::groups::preview_group_rule(&m, Some(&config), &g.root, &g.label)
        .await
        .unwrap();
    assert_eq!((p.members, p.claimed), (24, 24), "{p:?}");
    let rule = p.rule.unwrap();
    assert!(rule.toml.contains("pid_in_name = true"), "{}", rule.toml);
    assert!(rule.regex.contains("(?P<pid>"), "{}", rule.regex);
    keeper.finish();
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_no_process_explains_name_no_writer() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let m = start(&root).await;
    // Births spread over 14 s, so no one process start lies within seconds before most of them;
    // the numbers are above any pid macOS gives and above Linux's default pid_max (4,194,304).
    for i in 0..24u32 {
        let d = root.join(format!(
            "wrk_{}_{}_{}",
            4_200_000 + i * 17,
            i % 2,
            unix_now()
        ));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), "leak").unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    m.flush().await.unwrap();
    let s = wait_for(&m, "the group of 24", |s| {
        group(s).is_some_and(|g| g.items == 24)
    })
    .await;
    let g = group(&s).unwrap();
    assert!(
        g.evidence.iter().all(|e| !matches!(
            e.kind,
            EvidenceKindDto::PidInName | EvidenceKindDto::CreatedAtLaunch
        )),
        "a writer was named: {:#?}",
        g.evidence
    );
    m.shutdown().await;
}
