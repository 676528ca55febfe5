//! App-owned caches are kept while their app runs, even when their producer is named (regression:
//! `reclaim --producer e5rt-bundlecache` deleted the live e5rt cache of a running app, which broke
//! its OCR until restart). Each case is a real tree and a live stand-in process: a copy of `sleep`
//! named after the app the item's path names. While it runs the plan keeps the item
//! (`app-running`), and a plan made before it started is refused at execute's re-check; once it
//! exits, the item is planned and deleted, freeing what `du` measured.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime};

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, plan, KeepReason, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, tree};

/// A stand-in for an app: a copy of `sleep` named `name`, running; killed on drop.
struct App(Child);

impl App {
    fn start(bin_dir: &Path, name: &str) -> App {
        let exe = bin_dir.join(name);
        if !exe.exists() {
            fs::create_dir_all(bin_dir).unwrap();
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
        }
        App(Command::new(&exe).arg("120").spawn().unwrap())
    }

    fn stop(mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// One owner rule: where its item lies and which app owns it.
struct Case {
    kind: RootKind,
    producer: &'static str,
    /// The item, relative to the root.
    item: &'static str,
    /// The app its path names (the stand-in's name).
    app: &'static str,
}

const CASES: &[Case] = &[
    Case {
        kind: RootKind::LibraryCaches,
        producer: "e5rt-bundlecache",
        item: "com.example.transcriber/com.apple.e5rt.e5bundlecache/24F74/4F1C0A9B2D",
        app: "com.example.transcriber",
    },
    Case {
        kind: RootKind::Cache,
        producer: "metal-shader-cache",
        item: "com.example.Game/com.apple.metal/16777235_322",
        app: "com.example.Game",
    },
    Case {
        kind: RootKind::Cache,
        producer: "metal-gpuarchiver",
        item: "julia/com.apple.gpuarchiver/gpuarchiver-XyZ789",
        app: "julia",
    },
    Case {
        kind: RootKind::LibraryCaches,
        producer: "squirrel-shipit-caches",
        item: "com.example.hyper.ShipIt/update.AbC1234",
        app: "com.example.hyper",
    },
    Case {
        kind: RootKind::Temp,
        producer: "squirrel-shipit-temp",
        item: "co.zeit.now.ShipIt.AbCd1234",
        app: "co.zeit.now",
    },
    Case {
        kind: RootKind::LibraryCaches,
        producer: "electron-updater-pending",
        item: "beekeeper-studio-updater/pending/Beekeeper-Studio-4.6.0-mac.zip",
        app: "beekeeper-studio",
    },
    Case {
        kind: RootKind::LibraryCaches,
        producer: "sparkle-persistent-downloads",
        item: "com.tinyapp.DBngin/org.sparkle-project.Sparkle/PersistentDownloads/AbC123xyz",
        app: "com.tinyapp.DBngin",
    },
];
// `sparkle-installation` is also kept while its app runs: `sparkle_staged.rs`, whose staged
// builds carry the versions its rule compares first.

/// Builds the case's item (a dir of two files, or a file when its name has an extension such as
/// `.zip`) 20 days old (past every floor), and returns its path under the root's canonical path.
fn build(root: &Root, case: &Case) -> PathBuf {
    let item = root.canonical.join(case.item);
    if case.item.ends_with(".zip") {
        tree::write_file(&item, 40_000);
    } else {
        tree::write_file(&item.join("a.bin"), 30_000);
        tree::write_file(&item.join("sub/b.bin"), 9_000);
    }
    tree::set_tree_mtime(&item, tree::days_ago(20));
    item
}

fn policy(case: &Case) -> Policy {
    Policy {
        older_than: Duration::from_secs(86_400),
        producers: vec![case.producer.to_owned()],
        protected: vec![],
    }
}

#[test]
fn an_app_owned_item_is_kept_while_its_app_runs_and_reclaimed_after_it_exits() {
    let cat = Catalogue::builtin();
    for case in CASES {
        let dir = tempfile::tempdir().unwrap();
        let root_dir = dir.path().join("root");
        fs::create_dir(&root_dir).unwrap();
        let root = Root::new(case.kind, &root_dir).unwrap();
        let item = build(&root, case);
        let bin = dir.path().join("bin");
        let roots = std::slice::from_ref(&root);
        let now = SystemTime::now();

        // A plan made while the app does not run yet plans the item...
        let early = plan(
            &scan(roots, &cat, now),
            &cat,
            &policy(case),
            &SystemProbe::new(),
            now,
        );
        assert_eq!(
            early.items.iter().map(|i| &i.path).collect::<Vec<_>>(),
            [&item],
            "{}: {early:#?}",
            case.producer
        );
        assert_eq!(early.items[0].owner_app.as_deref(), Some(case.app));

        // ...the app starts: the plan keeps it, and execute of the early plan refuses it.
        let app = App::start(&bin, case.app);
        let inv = scan(roots, &cat, now);
        let live = plan(&inv, &cat, &policy(case), &SystemProbe::new(), now);
        assert!(live.items.is_empty(), "{}: {live:#?}", case.producer);
        assert_eq!(
            live.kept
                .iter()
                .map(|k| (&k.path, &k.reason))
                .collect::<Vec<_>>(),
            [(
                &item,
                &KeepReason::AppRunning {
                    name: case.app.to_owned()
                }
            )],
            "{}",
            case.producer
        );
        let report = execute(&early, &cat, &SystemProbe::new(), now, &mut |_| {});
        assert!(report.deleted.is_empty(), "{}: {report:#?}", case.producer);
        assert!(item.exists());
        app.stop();

        // The app exited: planned and deleted, freeing what du counts.
        let du_bytes = du::allocated(&[&item]);
        let after = plan(
            &scan(roots, &cat, now),
            &cat,
            &policy(case),
            &SystemProbe::new(),
            now,
        );
        assert_eq!(after.items.len(), 1, "{}: {after:#?}", case.producer);
        assert_eq!(after.planned_bytes, du_bytes, "{}", case.producer);
        let report = execute(&after, &cat, &SystemProbe::new(), now, &mut |_| {});
        assert_eq!(report.deleted.len(), 1, "{}: {report:#?}", case.producer);
        assert_eq!(report.freed_bytes, du_bytes, "{}", case.producer);
        assert!(!item.exists());
    }
}

#[test]
fn crash_reports_and_code_sign_clones_have_no_app_owner() {
    let cat = Catalogue::builtin();
    let report = cat
        .classify(
            RootKind::DiagnosticReports,
            Path::new("Finder-2024-05-06-101112.ips"),
        )
        .unwrap();
    assert_eq!(report.captures.bundle.as_deref(), Some("Finder"));
    assert_eq!(
        cachewatch_core::owner::owner_app(report.rule, &report.captures),
        None
    );
    let clone = cat
        .classify(
            RootKind::CodeSignClones,
            Path::new("com.google.Chrome.code_sign_clone/code_sign_clone.tKdILk"),
        )
        .unwrap();
    assert_eq!(
        cachewatch_core::owner::owner_app(clone.rule, &clone.captures),
        None
    );
}

#[test]
fn explain_says_the_app_owner_check() {
    let dir = tempfile::tempdir().unwrap();
    let lc = dir.path().join("Caches");
    fs::create_dir(&lc).unwrap();
    let root = Root::new(RootKind::LibraryCaches, &lc).unwrap();
    let cat = Catalogue::builtin();
    let path = root
        .canonical
        .join("com.example.transcriber/com.apple.e5rt.e5bundlecache/24F74/4F1C0A9B2D/x.bundle");
    let e = cat.explain(std::slice::from_ref(&root), &path);
    match e.verdict {
        cachewatch_core::explain::Verdict::Claimed { owner_check, .. } => {
            assert_eq!(
                owner_check,
                cachewatch_core::owner::OwnerCheck::App {
                    app: "com.example.transcriber".to_owned(),
                    processes: vec![],
                }
            );
            let text = owner_check.to_string();
            assert!(
                text.contains("com.example.transcriber") && text.contains("kept while"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}
