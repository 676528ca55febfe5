//! Version-keyed caches never lose their newest version (named at `--older-than 0s`, the
//! Cypress rule deleted the current `Cypress/14.5.1` along with the old versions), nor a version a
//! running process uses. Real trees, the real process probe, sizes checked against `du`.

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

/// A child process killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// A version dir: two files, 30 days old.
fn version(root: &Path, rel: &str) -> PathBuf {
    let dir = root.join(rel);
    tree::write_file(&dir.join("bin/payload"), 50_000);
    tree::write_file(&dir.join("manifest.json"), 700);
    tree::set_tree_mtime(&dir, tree::days_ago(30));
    dir
}

#[test]
fn named_at_zero_seconds_the_newest_version_of_each_series_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let lc = dir.path().join("Caches");
    fs::create_dir(&lc).unwrap();
    let root = Root::new(RootKind::LibraryCaches, &lc).unwrap();
    let c = &root.canonical;
    let old: Vec<PathBuf> = [
        "Cypress/9.0.0",
        "Cypress/13.6.0",
        "ms-playwright/chromium-1124",
        "JetBrains/IntelliJIdea2023.3",
    ]
    .iter()
    .map(|r| version(c, r))
    .collect();
    let newest: Vec<(PathBuf, &str)> = [
        ("Cypress/14.5.1", "14.5.1"),
        ("ms-playwright/chromium-1200", "1200"),
        ("ms-playwright/chromium_headless_shell-1124", "1124"),
        ("ms-playwright/webkit-2035", "2035"),
        ("JetBrains/IntelliJIdea2024.1", "2024.1"),
        ("JetBrains/PyCharm2023.3", "2023.3"),
    ]
    .iter()
    .map(|(r, v)| (version(c, r), *v))
    .collect();
    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let roots = std::slice::from_ref(&root);
    let policy = Policy {
        older_than: Duration::ZERO,
        producers: [
            "cypress-binary-cache",
            "playwright-browsers",
            "jetbrains-versioned-caches",
        ]
        .map(str::to_owned)
        .to_vec(),
        protected: vec![],
    };
    let p = plan(
        &scan(roots, &cat, now),
        &cat,
        &policy,
        &SystemProbe::new(),
        now,
    );
    let mut want_kept: Vec<(&PathBuf, KeepReason)> = newest
        .iter()
        .map(|(path, v)| {
            (
                path,
                KeepReason::NewestVersion {
                    version: (*v).to_owned(),
                },
            )
        })
        .collect();
    want_kept.sort_by(|a, b| a.0.cmp(b.0));
    assert_eq!(
        p.kept
            .iter()
            .map(|k| (&k.path, k.reason.clone()))
            .collect::<Vec<_>>(),
        want_kept
    );
    let kept_text = p.kept[0].reason.to_string();
    assert!(kept_text.starts_with("newest version"), "{kept_text}");
    let mut want_planned = old.clone();
    want_planned.sort();
    assert_eq!(
        p.items.iter().map(|i| i.path.clone()).collect::<Vec<_>>(),
        want_planned
    );
    let du_bytes = du::allocated(&old);
    assert_eq!(p.planned_bytes, du_bytes);

    let report = execute(&p, &cat, &SystemProbe::new(), now, &mut |_| {});
    assert_eq!(report.deleted.len(), old.len(), "{report:#?}");
    assert_eq!(report.freed_bytes, du_bytes);
    assert!(old.iter().all(|p| !p.exists()));
    assert!(newest.iter().all(|(p, _)| p.exists()));
}

#[test]
fn an_older_version_a_running_process_uses_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let lc = dir.path().join("Caches");
    fs::create_dir(&lc).unwrap();
    let root = Root::new(RootKind::LibraryCaches, &lc).unwrap();
    let c = &root.canonical;
    let used = version(c, "Cypress/13.6.0");
    let unused = version(c, "Cypress/12.0.0");
    version(c, "Cypress/14.5.1");
    // A helper of the old version runs from inside it: its executable is mapped.
    let exe = used.join("Cypress.app/Contents/MacOS/cy-helper");
    fs::create_dir_all(exe.parent().unwrap()).unwrap();
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
    tree::set_tree_mtime(&used, tree::days_ago(30));
    let running = Running(Command::new(&exe).arg("60").spawn().unwrap());
    // Give the child time to exec the copy (its mapping is what keeps the version).
    std::thread::sleep(Duration::from_millis(300));

    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let policy = Policy {
        older_than: Duration::ZERO,
        producers: vec!["cypress-binary-cache".to_owned()],
        protected: vec![],
    };
    let inv = scan(std::slice::from_ref(&root), &cat, now);
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    assert_eq!(
        p.items.iter().map(|i| &i.path).collect::<Vec<_>>(),
        [&unused]
    );
    let kept = p.kept.iter().find(|k| k.path == used).unwrap();
    match &kept.reason {
        KeepReason::InUse { pid, .. } => assert_eq!(*pid, running.0.id()),
        other => panic!("used version kept for {other:?}, not in use"),
    }
}

#[test]
fn node_compile_cache_keeps_the_newest_node_version_per_arch() {
    let dir = tempfile::tempdir().unwrap();
    let ncc = dir.path().join("node-compile-cache");
    for name in [
        "v22.11.0-arm64-1a2b3c4d-501",
        "v26.0.0-arm64-904a5e71-501",
        "v9.11.2-arm64-00aa11bb-501",
        "v20.1.0-x64-0badf00d-501",
    ] {
        fs::create_dir_all(ncc.join(name)).unwrap();
    }
    let cat = Catalogue::builtin();
    let rule = cat.rule("node-compile-cache").unwrap();
    let newest = |name: &str| cat.newest_version(rule, &ncc.join(name));
    assert_eq!(
        newest("v26.0.0-arm64-904a5e71-501").as_deref(),
        Some("26.0.0")
    );
    assert_eq!(newest("v22.11.0-arm64-1a2b3c4d-501"), None);
    assert_eq!(newest("v9.11.2-arm64-00aa11bb-501"), None);
    assert_eq!(
        newest("v20.1.0-x64-0badf00d-501").as_deref(),
        Some("20.1.0")
    );
}
