//! Sparkle's staged updates (`sparkle-installation`) are stale when the staged build is at most as
//! new as the installed app: each case is a real tree (the staged `X.app` under
//! `<bundle>/org.sparkle-project.Sparkle/Installation/<random>/`, the installed app in an
//! application dir, XML and binary `Info.plist` files) planned by name. A stale build is planned
//! and deleted, freeing what `du` measured; a newer one, or one whose version (or installed app)
//! cannot be read, is kept and says why; while the app runs, it is kept whatever its version.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime};

use cachewatch_core::process::{OpenFile, ProcessInfo, ProcessProbe, SystemProbe};
use cachewatch_core::reclaim::{execute, plan, KeepReason, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, tree};

const RULE: &str = "sparkle-installation";
const BUNDLE: &str = "com.example.Notes";

/// The system's processes and open files, with application dirs of the test's own.
struct Apps {
    inner: SystemProbe,
    dirs: Vec<PathBuf>,
}

impl ProcessProbe for Apps {
    fn process(&self, pid: u32) -> Option<ProcessInfo> {
        self.inner.process(pid)
    }
    fn is_running(&self, name: &str) -> bool {
        self.inner.is_running(name)
    }
    fn app_running(&self, app: &str) -> bool {
        self.inner.app_running(app)
    }
    fn application_dirs(&self) -> Vec<PathBuf> {
        self.dirs.clone()
    }
    fn open_file_under(&self, dir: &Path) -> Option<OpenFile> {
        self.inner.open_file_under(dir)
    }
    fn refresh(&self) {
        self.inner.refresh();
    }
}

/// Writes `app/Contents/Info.plist` (XML when `xml`, else binary) with the given keys, and an
/// executable-sized file beside it.
fn bundle(app: &Path, id: &str, short: Option<&str>, build: Option<&str>, xml: bool) {
    let contents = app.join("Contents");
    tree::write_file(&contents.join("MacOS/Notes"), 50_000);
    let plist = contents.join("Info.plist");
    if xml {
        let mut keys = format!("\t<key>CFBundleIdentifier</key>\n\t<string>{id}</string>\n");
        if let Some(s) = short {
            keys.push_str(&format!(
                "\t<key>CFBundleShortVersionString</key>\n\t<string>{s}</string>\n"
            ));
        }
        if let Some(b) = build {
            keys.push_str(&format!(
                "\t<key>CFBundleVersion</key>\n\t<string>{b}</string>\n"
            ));
        }
        fs::write(
            &plist,
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD \
                 PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
                 <plist version=\"1.0\">\n<dict>\n\t<key>CFBundleExecutable</key>\n\
                 \t<string>Notes</string>\n{keys}</dict>\n</plist>\n"
            ),
        )
        .unwrap();
    } else {
        let mut d = plist::Dictionary::new();
        d.insert("CFBundleIdentifier".into(), id.into());
        if let Some(s) = short {
            d.insert("CFBundleShortVersionString".into(), s.into());
        }
        if let Some(b) = build {
            d.insert("CFBundleVersion".into(), b.into());
        }
        plist::to_file_binary(&plist, &plist::Value::Dictionary(d)).unwrap();
        assert_eq!(&fs::read(&plist).unwrap()[..6], b"bplist");
    }
}

/// A tree: the library-caches root and two application dirs, empty. Each test uses its own
/// bundle id: the running-app test's stand-in would keep another test's items.
struct Tree {
    /// The app's bundle id (the cache dir's name).
    bundle: &'static str,
    _dir: tempfile::TempDir,
    root: Root,
    apps: Vec<PathBuf>,
}

impl Tree {
    fn new(bundle: &'static str) -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root_dir = dir.path().join("Caches");
        fs::create_dir(&root_dir).unwrap();
        let apps = vec![
            dir.path().join("Applications"),
            dir.path().join("home-Applications"),
        ];
        for a in &apps {
            fs::create_dir(a).unwrap();
        }
        Tree {
            bundle,
            root: Root::new(RootKind::LibraryCaches, &root_dir).unwrap(),
            apps,
            _dir: dir,
        }
    }

    /// The staged update dir `name`, its app written by `app` (nothing when `None`), 20 days old.
    fn staged(&self, name: &str, app: Option<(&str, Option<&str>, Option<&str>)>) -> PathBuf {
        let item = self
            .root
            .canonical
            .join(self.bundle)
            .join("org.sparkle-project.Sparkle/Installation")
            .join(name);
        match app {
            Some((id, short, build)) => bundle(&item.join("Notes.app"), id, short, build, true),
            None => tree::write_file(&item.join("Notes.tar.xz"), 30_000),
        }
        tree::set_tree_mtime(&item, tree::days_ago(20));
        item
    }

    fn probe(&self) -> Apps {
        Apps {
            inner: SystemProbe::new(),
            dirs: self.apps.clone(),
        }
    }

    /// The plan of the rule, named.
    fn plan(&self) -> cachewatch_core::reclaim::ReclaimPlan {
        let cat = Catalogue::builtin();
        let now = SystemTime::now();
        let policy = Policy {
            older_than: Duration::from_secs(86_400),
            producers: vec![RULE.to_owned()],
            protected: vec![],
        };
        plan(
            &scan(std::slice::from_ref(&self.root), &cat, now),
            &cat,
            &policy,
            &self.probe(),
            now,
        )
    }
}

fn kept_reason(p: &cachewatch_core::reclaim::ReclaimPlan, item: &Path) -> Option<KeepReason> {
    p.kept
        .iter()
        .find(|k| k.path == item)
        .map(|k| k.reason.clone())
}

fn staged(s: Option<&str>, i: Option<&str>) -> KeepReason {
    KeepReason::StagedUpdate {
        staged: s.map(str::to_owned),
        installed: i.map(str::to_owned),
    }
}

#[test]
fn a_staged_build_at_most_the_installed_version_is_stale_and_deleted() {
    let t = Tree::new(BUNDLE);
    bundle(
        &t.apps[0].join("Notes.app"),
        BUNDLE,
        Some("5.2"),
        Some("520"),
        true,
    );
    let older = t.staged("3hTzFa1Q9", Some((BUNDLE, Some("5.1"), Some("510"))));
    let same = t.staged("AbC123xyz", Some((BUNDLE, Some("5.2"), Some("520"))));
    // Builds compare by number, not as text: 99 is older than 520.
    let numeric = t.staged("Zz9Yy8Xx7", Some((BUNDLE, Some("4.0"), Some("99"))));
    let newer = t.staged("Nn1Ww2Ee3", Some((BUNDLE, Some("5.3"), Some("530"))));
    let p = t.plan();
    let mut planned: Vec<&PathBuf> = p.items.iter().map(|i| &i.path).collect();
    planned.sort();
    let mut want = vec![&older, &same, &numeric];
    want.sort();
    assert_eq!(planned, want, "{p:#?}");
    assert_eq!(
        kept_reason(&p, &newer),
        Some(staged(Some("5.3 (530)"), Some("5.2 (520)")))
    );
    assert_eq!(
        kept_reason(&p, &newer).unwrap().to_string(),
        "staged update 5.3 (530) is newer than the installed 5.2 (520)"
    );
    let du_bytes = du::allocated(&[&older, &same, &numeric]);
    assert_eq!(p.planned_bytes, du_bytes);
    let cat = Catalogue::builtin();
    let report = execute(&p, &cat, &t.probe(), SystemTime::now(), &mut |_| {});
    assert_eq!(report.deleted.len(), 3, "{report:#?}");
    assert_eq!(report.freed_bytes, du_bytes);
    assert!(!older.exists() && !same.exists() && !numeric.exists());
    assert!(newer.join("Notes.app/Contents/Info.plist").exists());
}

/// Without CFBundleVersion on both, the short versions compare; the installed app is found by its
/// bundle id under another name, in the second dir, with a binary plist.
#[test]
fn the_installed_app_is_found_by_bundle_id_and_short_versions_compare() {
    let t = Tree::new(BUNDLE);
    bundle(
        &t.apps[1].join("Notes Beta.app"),
        BUNDLE,
        Some("2.10"),
        None,
        false,
    );
    bundle(
        &t.apps[0].join("Other.app"),
        "com.example.Other",
        Some("99"),
        Some("99"),
        false,
    );
    let old = t.staged("Qq1Rr2Ss3", Some((BUNDLE, Some("2.9"), Some("209"))));
    let new = t.staged("Tt4Uu5Vv6", Some((BUNDLE, Some("2.11"), None)));
    let p = t.plan();
    assert_eq!(
        p.items.iter().map(|i| &i.path).collect::<Vec<_>>(),
        [&old],
        "{p:#?}"
    );
    assert_eq!(
        kept_reason(&p, &new),
        Some(staged(Some("2.11"), Some("2.10")))
    );
}

/// What cannot be compared is kept: no staged app (an archive not extracted yet), a staged app
/// with no version, no installed app of its bundle id.
#[test]
fn a_staged_build_of_unknown_version_is_kept() {
    let t = Tree::new(BUNDLE);
    let no_app = t.staged("Aa1Bb2Cc3", None);
    let no_version = t.staged("Dd4Ee5Ff6", Some((BUNDLE, None, None)));
    let p = t.plan();
    assert!(p.items.is_empty(), "{p:#?}");
    assert_eq!(kept_reason(&p, &no_app), Some(staged(None, None)));
    // No installed app yet: the version is read, nothing to compare with.
    let orphan = t.staged("Gg7Hh8Ii9", Some((BUNDLE, Some("1.0"), Some("100"))));
    let p = t.plan();
    assert_eq!(kept_reason(&p, &no_version), Some(staged(None, None)));
    assert_eq!(
        kept_reason(&p, &orphan),
        Some(staged(Some("1.0 (100)"), None))
    );
    // The installed app found, but it has no version to compare with either.
    bundle(&t.apps[0].join("Notes.app"), BUNDLE, None, None, true);
    let p = t.plan();
    assert_eq!(
        kept_reason(&p, &orphan),
        Some(staged(Some("1.0 (100)"), None))
    );
}

/// A stand-in for the app: a copy of `sleep` named after its bundle id `bundle`, running.
fn start_app(bin: &Path, bundle: &str) -> Child {
    let exe = bin.join(bundle);
    fs::create_dir_all(bin).unwrap();
    let sleep = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v sleep"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    fs::copy(sleep.trim(), &exe).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
    Command::new(&exe).arg("120").spawn().unwrap()
}

/// A stale build is still kept while its app runs (it may be installing it right now).
#[test]
fn a_stale_build_is_kept_while_its_app_runs() {
    const RUNNING: &str = "com.example.RunningNotes";
    let t = Tree::new(RUNNING);
    bundle(
        &t.apps[0].join("Notes.app"),
        RUNNING,
        Some("5.2"),
        Some("520"),
        true,
    );
    let old = t.staged("3hTzFa1Q9", Some((RUNNING, Some("5.1"), Some("510"))));
    let bin = tempfile::tempdir().unwrap();
    let mut app = start_app(bin.path(), RUNNING);
    let p = t.plan();
    app.kill().ok();
    app.wait().ok();
    assert!(p.items.is_empty(), "{p:#?}");
    assert_eq!(
        kept_reason(&p, &old),
        Some(KeepReason::AppRunning {
            name: RUNNING.to_owned()
        })
    );
    let p = t.plan();
    assert_eq!(p.items.len(), 1, "{p:#?}");
}
