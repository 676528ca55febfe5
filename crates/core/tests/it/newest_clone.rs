//! "Never the newest clone of a running app", on a real tree of code-sign clones with a
//! fake process table: while a process of the app runs, its newest clone is kept with reason
//! `newest-clone-of-running-app`; older ones, and every clone of an app that is not running, are
//! planned; a clone with a file open in it is kept as in use.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cachewatch_core::process::{OpenFile, ProcessInfo, ProcessProbe};
use cachewatch_core::reclaim::{plan, KeepReason, Policy, ReclaimPlan};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};

/// A fake process table: these executable names run; these paths are open.
struct Fake {
    running: Vec<&'static str>,
    open: Vec<PathBuf>,
}

impl ProcessProbe for Fake {
    fn process(&self, _pid: u32) -> Option<ProcessInfo> {
        None
    }
    fn is_running(&self, name: &str) -> bool {
        self.running.contains(&name)
    }
    fn open_file_under(&self, dir: &Path) -> Option<OpenFile> {
        self.open
            .iter()
            .find(|p| p.starts_with(dir))
            .map(|p| OpenFile {
                pid: 4242,
                path: p.clone(),
            })
    }
}

/// Makes `<x>/<bundle>.code_sign_clone/code_sign_clone.<tag>/<app>.app/Contents/MacOS/<exe>`
/// with mtime `mtime` everywhere; returns the clone dir.
fn clone(x: &Path, bundle: &str, tag: &str, app: &str, exe: &str, mtime: SystemTime) -> PathBuf {
    let dir = x.join(format!("{bundle}.code_sign_clone/code_sign_clone.{tag}"));
    let macos = dir.join(format!("{app}.app/Contents/MacOS"));
    fs::create_dir_all(&macos).unwrap();
    fs::write(macos.join(exe), vec![1u8; 9000]).unwrap();
    for p in [
        macos.join(exe),
        macos.clone(),
        macos.parent().unwrap().to_path_buf(),
        dir.join(format!("{app}.app")),
        dir.clone(),
    ] {
        fs::File::options()
            .read(true)
            .open(&p)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }
    dir
}

struct Tree {
    _dir: tempfile::TempDir,
    root: Root,
    chrome: [PathBuf; 3],
    edge: [PathBuf; 2],
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("X");
    let day = |d: u64| SystemTime::now() - Duration::from_secs(d * 86_400);
    // Made oldest first: birth times (where the filesystem keeps them) and mtimes agree.
    let chrome = [
        clone(
            &x,
            "com.google.Chrome",
            "Zz0001",
            "Google Chrome",
            "Google Chrome",
            day(9),
        ),
        clone(
            &x,
            "com.google.Chrome",
            "Aa0002",
            "Google Chrome",
            "Google Chrome",
            day(5),
        ),
        clone(
            &x,
            "com.google.Chrome",
            "Mm0003",
            "Google Chrome",
            "Google Chrome",
            day(2),
        ),
    ];
    let edge = [
        clone(
            &x,
            "com.microsoft.edgemac",
            "Ed0001",
            "Microsoft Edge",
            "Microsoft Edge",
            day(8),
        ),
        clone(
            &x,
            "com.microsoft.edgemac",
            "Ed0002",
            "Microsoft Edge",
            "Microsoft Edge",
            day(3),
        ),
    ];
    let root = Root::new(RootKind::CodeSignClones, &x).unwrap();
    let canon = |p: PathBuf| root.canonical.join(p.strip_prefix(&x).unwrap());
    Tree {
        chrome: chrome.map(canon),
        edge: edge.map(canon),
        root,
        _dir: dir,
    }
}

fn plan_with(t: &Tree, probe: &Fake) -> ReclaimPlan {
    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let inv = scan(std::slice::from_ref(&t.root), &cat, now);
    let policy = Policy {
        older_than: Duration::from_secs(86_400),
        producers: vec!["chromium-code-sign-clone".to_owned()],
        protected: vec![],
    };
    plan(&inv, &cat, &policy, probe, now)
}

fn planned(p: &ReclaimPlan) -> Vec<PathBuf> {
    p.items.iter().map(|i| i.path.clone()).collect()
}

#[test]
fn the_newest_clone_of_a_running_app_is_kept_and_its_older_clones_are_planned() {
    let t = tree();
    let p = plan_with(
        &t,
        &Fake {
            running: vec!["Google Chrome"],
            open: vec![],
        },
    );
    let mut want = vec![
        t.chrome[0].clone(),
        t.chrome[1].clone(),
        t.edge[0].clone(),
        t.edge[1].clone(),
    ];
    want.sort();
    assert_eq!(planned(&p), want, "{:#?}", p.kept);
    assert_eq!(p.kept.len(), 1, "{:#?}", p.kept);
    assert_eq!(p.kept[0].path, t.chrome[2]);
    assert_eq!(
        p.kept[0].reason,
        KeepReason::NewestCloneOfRunningApp {
            app: "Google Chrome".into()
        }
    );
    let json = serde_json::to_value(&p.kept[0]).unwrap();
    assert_eq!(json["reason"], "newest-clone-of-running-app");
    assert_eq!(json["app"], "Google Chrome");
}

#[test]
fn no_clone_is_kept_for_being_newest_when_its_app_is_not_running() {
    let t = tree();
    let p = plan_with(
        &t,
        &Fake {
            running: vec!["Safari"],
            open: vec![],
        },
    );
    assert_eq!(p.items.len(), 5, "{:#?}", p.kept);
    assert!(p.kept.is_empty());
}

#[test]
fn a_clone_with_a_file_open_in_it_is_kept_as_in_use_whether_newest_or_not() {
    let t = tree();
    let exe = t.edge[0].join("Microsoft Edge.app/Contents/MacOS/Microsoft Edge");
    let p = plan_with(
        &t,
        &Fake {
            running: vec!["Microsoft Edge"],
            open: vec![exe.clone()],
        },
    );
    let reason = |path: &Path| {
        p.kept
            .iter()
            .find(|k| k.path == path)
            .map(|k| k.reason.clone())
    };
    assert_eq!(
        reason(&t.edge[0]),
        Some(KeepReason::InUse {
            pid: 4242,
            path: exe
        })
    );
    assert_eq!(
        reason(&t.edge[1]),
        Some(KeepReason::NewestCloneOfRunningApp {
            app: "Microsoft Edge".into()
        })
    );
    assert_eq!(p.items.len(), 3, "all of Chrome's: it is not running");
}

/// The streamed plan (the CLI's and the auto-reclaim drains') learns the newest clones only after
/// the scan: it must keep and plan exactly what the held plan does, its sums included.
#[test]
fn a_streamed_plan_keeps_the_newest_clone_of_a_running_app_like_the_held_plan() {
    use cachewatch_core::reclaim::plan_streamed;
    use cachewatch_core::scan::ScanProgress;
    let t = tree();
    let probe = Fake {
        running: vec!["Google Chrome"],
        open: vec![],
    };
    let held = plan_with(&t, &probe);
    let cat = Catalogue::builtin();
    let policy = Policy {
        older_than: Duration::from_secs(86_400),
        producers: vec!["chromium-code-sign-clone".to_owned()],
        protected: vec![],
    };
    let streamed = plan_streamed(
        std::slice::from_ref(&t.root),
        &cat,
        &policy,
        &probe,
        SystemTime::now(),
        &ScanProgress::new(),
    )
    .unwrap();
    let items: Vec<PathBuf> = streamed.planned().map(|i| i.unwrap().path).collect();
    assert_eq!(items, planned(&held));
    let kept: Vec<_> = streamed.kept().map(|k| k.unwrap()).collect();
    assert_eq!(kept, held.kept);
    assert_eq!(streamed.summary.planned_items, 4);
    assert_eq!(streamed.summary.kept_items, 1);
    assert_eq!(streamed.summary.planned_bytes, held.planned_bytes);
}
