//! The 2026-H2 producers on real trees in the shape of their reports: each rule's items are
//! attributed with `du` totals and hand counts, their look-alikes stay unattributed, and reclaim
//! plans what the owners and clocks let go: a Codex object DB but not a scratch clone, a Tauri
//! backup only once its app is gone, a cache read yesterday but built 45 days ago not at all.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime};

use cachewatch_core::inventory::Inventory;
use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, plan, KeepReason, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, tree};

use super::support::OwnFilesProbe;

const DAY: u64 = 86_400;

/// A rule id, an item path relative to its root, and the files (path in the item, bytes) in it.
type Planted = (&'static str, &'static str, &'static [(&'static str, usize)]);

fn root(dir: &Path, name: &str, kind: RootKind) -> Root {
    let p = dir.join(name);
    fs::create_dir_all(&p).unwrap();
    Root::new(kind, &p).unwrap()
}

/// Sets the access and modification times of `path` and of everything under it.
fn set_times(path: &Path, atime: SystemTime, mtime: SystemTime) {
    let md = fs::symlink_metadata(path).unwrap();
    if md.file_type().is_symlink() {
        return;
    }
    if md.is_dir() {
        for e in fs::read_dir(path).unwrap() {
            set_times(&e.unwrap().path(), atime, mtime);
        }
    }
    let times = fs::FileTimes::new().set_accessed(atime).set_modified(mtime);
    fs::File::open(path).unwrap().set_times(times).unwrap();
}

fn ago(secs: u64) -> SystemTime {
    SystemTime::now() - Duration::from_secs(secs)
}

fn producer_of(inv: &Inventory, path: &Path) -> Option<String> {
    inv.items()
        .find(|(_, i)| i.path == path)
        .unwrap_or_else(|| panic!("no item at {}", path.display()))
        .1
        .producer
        .clone()
}

/// Every item of `id` in `inv`, sorted, without the rule's structure dirs (which hold its items).
fn items_of(inv: &Inventory, id: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = inv
        .items()
        .filter(|(_, i)| i.producer.as_deref() == Some(id))
        .map(|(_, i)| i.path.clone())
        .collect();
    v.sort();
    let all = v.clone();
    v.retain(|p| !all.iter().any(|q| q != p && q.starts_with(p)));
    v
}

#[test]
fn each_new_producer_is_attributed_with_du_totals_and_look_alikes_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let t = root(dir.path(), "T", RootKind::Temp);
    let lc = root(dir.path(), "LC", RootKind::LibraryCaches);
    let (tp, lp) = (t.canonical.clone(), lc.canonical.clone());
    let w = |p: &Path, rel: &str, len: usize| tree::write_file(&p.join(rel), len);

    // (rule, item paths relative to their root, files written in each)
    let temp_items: Vec<Planted> = vec![
        ("browser-use-tmp", "browser-use-user-data-dir-k3x_9qa2", &[("Default/Cookies", 20_000), ("Local State", 3_000)]),
        ("browser-use-tmp", "browser-use-downloads-5f0c2e9a", &[("report.pdf", 50_000)]),
        ("browser-use-tmp", "browseruse-tmp-ab12cd34", &[("Default/Preferences", 4_000)]),
        ("codex-tmp-git-objects", "tmp.Xk3j9QaB", &[("index", 9_000), ("objects/pack/tmp_pack_a1b2c3", 300_000), ("objects/ab/cdef0123", 700)]),
        ("codex-tmp-git-objects", "tmp.a1B2c3D4e5", &[("index", 5_000), ("objects/pack/tmp_pack_zz9yx8", 200_000)]),
        ("executorch-coreml-staging", "executorchcoreml/8C1D2E3F-0A1B-4C2D-8E3F-405162738495", &[("model.mlmodelc/model.mil", 80_000)]),
        ("playwright-mcp-output", "playwright-mcp-output/1768994280526", &[("page.png", 40_000)]),
        ("playwright-mcp-output", "playwright-mcp-output/2025-08-05T02-53-06.672Z", &[("track.pdf", 30_000)]),
        ("rust-analyzer-proc-macro-srv", "proc-macro-srv3fa9c1-0", &[("libserde_derive-1a2b.dylib", 120_000)]),
        ("tauri-updater-backup", "tauri_current_appAb12Cd", &[("Contents/MacOS/cw-none-such-app", 10_000), ("Contents/Info.plist", 900)]),
        ("tendril-e2e", "tendril-e2e-3fa85f6457b4", &[("config.yaml", 1_000), ("db/tendril.db", 60_000)]),
        ("tendril-e2e", "tendril-e2e-repo-3fa85f6457b4", &[("README.md", 2_000)]),
        ("tfdf-ydf-tmp", "tmpa1b2c3d4", &[("model/data_spec.pb", 3_000), ("model/header.pb", 200), ("model/done", 0)]),
        ("tfhub-modules", "tfhub_modules/063d866c06683311b44b4992fd46003be952409c", &[("saved_model.pb", 90_000), ("variables/variables.index", 500)]),
        ("tfhub-modules", "tfhub_modules/063d866c06683311b44b4992fd46003be952409c.0123456789abcdef0123456789abcdef.tmp", &[("saved_model.pb", 10_000)]),
    ];
    let cache_items: Vec<Planted> = vec![
        ("claude-mcp-logs", "claude-cli-nodejs/-Users-alice-src-app/mcp-logs-playwright/2026-08-01T10-00-00-000Z.jsonl", &[]),
        ("claude-mcp-logs", "claude-cli-nodejs/-Users-alice/mcp-logs-github/2026-08-02T11-00-00-000Z.jsonl", &[]),
        ("executorch-coreml-assets", "executorchcoreml/3F2A9C1E-7B4D-4E8A-9C2F-1A2B3C4D5E6F", &[("model.mlmodelc/weights.bin", 70_000), ("metadata.json", 300)]),
        ("swiftpm-shared-cache", "org.swift.swiftpm/repositories/swift-argument-parser-5c2a1b3e", &[("objects/pack/pack-1.pack", 150_000), ("HEAD", 30)]),
        ("swiftpm-shared-cache", "org.swift.swiftpm/manifests/manifest.db", &[]),
    ];
    let mut files = 0u64;
    for (_, item, inside) in &temp_items {
        for (f, len) in inside.iter() {
            w(&tp, &format!("{item}/{f}"), *len);
            files += 1;
        }
    }
    for (_, item, inside) in &cache_items {
        if inside.is_empty() {
            w(&lp, item, 12_000);
        }
        for (f, len) in inside.iter() {
            w(&lp, &format!("{item}/{f}"), *len);
        }
    }
    // Look-alikes, each unattributed.
    let look_alikes = [
        "tmp.Sc4tch01", // a user's scratch clone: the Git dir is .git/, HEAD there
        "tmp.Bare0002", // a bare repository: HEAD beside index and objects
        "tmp.NoObj003", // an index without objects
        "browser-use-user-data-dir-my-profile",
        "tendril-e2e-complete-timeout.png",
        "tmpflatmod6", // TF-DF's files directly inside: not the layout TF-DF writes
        "proc-macro-srvXYZ123-0",
    ];
    w(&tp, "tmp.Sc4tch01/.git/HEAD", 23);
    w(&tp, "tmp.Sc4tch01/.git/index", 4_000);
    w(&tp, "tmp.Sc4tch01/.git/objects/ab/cd", 500);
    w(&tp, "tmp.Sc4tch01/index", 10); // even a file named index in the work tree
    fs::create_dir_all(tp.join("tmp.Sc4tch01/objects")).unwrap();
    w(&tp, "tmp.Bare0002/HEAD", 23);
    w(&tp, "tmp.Bare0002/index", 4_000);
    w(&tp, "tmp.Bare0002/objects/ab/cd", 500);
    w(&tp, "tmp.NoObj003/index", 4_000);
    w(
        &tp,
        "browser-use-user-data-dir-my-profile/Default/Cookies",
        1_000,
    );
    w(&tp, "tendril-e2e-complete-timeout.png", 7_000);
    w(&tp, "tmpflatmod6/data_spec.pb", 3_000);
    w(&tp, "tmpflatmod6/header.pb", 200);
    w(&tp, "tmpflatmod6/done", 0);
    w(&tp, "proc-macro-srvXYZ123-0/lib.dylib", 1_000);
    w(
        &tp,
        "tfhub_modules/063d866c06683311b44b4992fd46003be952409c.descriptor.txt",
        120,
    );

    let cat = Catalogue::builtin();
    let inv = scan(&[t.clone(), lc.clone()], &cat, SystemTime::now());
    for (id, item, inside) in temp_items.iter().map(|x| (x.0, x.1, x.2)) {
        let p = tp.join(item);
        assert_eq!(producer_of(&inv, &p).as_deref(), Some(id), "{item}");
        let it = inv.items().find(|(_, i)| i.path == p).unwrap().1;
        assert_eq!(it.measure.allocated_bytes, du::allocated(&[&p]), "{item}");
        assert_eq!(it.measure.files, inside.len() as u64, "{item}");
    }
    for (id, item, _) in &cache_items {
        let p = lp.join(item);
        assert_eq!(producer_of(&inv, &p).as_deref(), Some(*id), "{item}");
        let it = inv.items().find(|(_, i)| i.path == p).unwrap().1;
        assert_eq!(it.measure.allocated_bytes, du::allocated(&[&p]), "{item}");
    }
    for l in look_alikes {
        assert_eq!(producer_of(&inv, &tp.join(l)), None, "{l} claimed");
    }
    // Producer totals: du of the items, counted by hand.
    for (id, n) in [
        ("browser-use-tmp", 3),
        ("codex-tmp-git-objects", 2),
        ("playwright-mcp-output", 2),
        ("tendril-e2e", 2),
        ("tfhub-modules", 2),
        ("claude-mcp-logs", 2),
        ("swiftpm-shared-cache", 2),
    ] {
        let items = items_of(&inv, id);
        assert_eq!(items.len(), n, "{id}: {items:?}");
        let p = inv.producers().into_iter().find(|p| p.id == id).unwrap();
        // The producer's total is its items plus its structure dirs' own entries.
        let structure: Vec<PathBuf> = inv
            .items()
            .filter(|(_, i)| i.producer.as_deref() == Some(id) && !items.contains(&i.path))
            .map(|(_, i)| i.path.clone())
            .collect();
        let own: u64 = inv
            .items()
            .filter(|(_, i)| structure.contains(&i.path))
            .map(|(_, i)| i.measure.allocated_bytes)
            .sum();
        assert_eq!(
            p.measure.allocated_bytes,
            du::allocated(&items) + own,
            "{id}"
        );
    }
    assert_eq!(files, 24); // 4 browser-use, 5 codex, 1 executorch, 2 mcp, 1 proc-macro, 2 tauri, 3 tendril, 3 tfdf, 3 tfhub
    assert_eq!(inv.roots[0].total.allocated_bytes, du::allocated(&[&tp]));
    assert_eq!(inv.roots[1].total.allocated_bytes, du::allocated(&[&lp]));
}

/// A child process, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// Runs a copy of `sleep` named `name` (the name a process table shows), with `cwd`.
fn run_as(dir: &Path, name: &str, cwd: &Path) -> Running {
    let exe = dir.join(name);
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap();
    fs::copy(sleep, &exe).unwrap();
    let child = Command::new(&exe)
        .arg("600")
        .current_dir(cwd)
        .spawn()
        .unwrap();
    // The process table shows it once it has exec'd.
    std::thread::sleep(Duration::from_millis(300));
    Running(child)
}

fn named(ids: &[&str]) -> Policy {
    Policy {
        older_than: Duration::ZERO,
        producers: ids.iter().map(|s| (*s).to_owned()).collect(),
        protected: vec![],
    }
}

#[test]
fn codex_object_dbs_go_once_no_process_works_in_them_and_a_scratch_clone_never() {
    let dir = tempfile::tempdir().unwrap();
    let t = root(dir.path(), "T", RootKind::Temp);
    let tp = t.canonical.clone();
    for d in ["tmp.Xk3j9QaB", "tmp.Yk3j9QaC"] {
        tree::write_file(&tp.join(d).join("index"), 9_000);
        tree::write_file(&tp.join(d).join("objects/pack/tmp_pack_a1b2c3"), 100_000);
    }
    tree::write_file(&tp.join("tmp.Sc4tch01/.git/HEAD"), 23);
    tree::write_file(&tp.join("tmp.Sc4tch01/index"), 10);
    fs::create_dir_all(tp.join("tmp.Sc4tch01/objects")).unwrap();
    // Look-alikes of other kinds: a search index (an `index` dir) beside an `objects` dir, and
    // `index` and `objects` both files. Git's index is a file, its object store a dir.
    tree::write_file(&tp.join("tmp.Lucene0001/index/segments_1"), 4_000);
    fs::create_dir_all(tp.join("tmp.Lucene0001/objects")).unwrap();
    tree::write_file(&tp.join("tmp.Flat000001/index"), 10);
    tree::write_file(&tp.join("tmp.Flat000001/objects"), 10);
    for e in fs::read_dir(&tp).unwrap() {
        tree::set_tree_mtime(&e.unwrap().path(), ago(2 * DAY));
    }
    let bin = dir.path().join("bin");
    fs::create_dir(&bin).unwrap();
    // A git still working in one (its cwd inside) keeps that one.
    let _git = run_as(&bin, "cw-git-add", &tp.join("tmp.Yk3j9QaC"));
    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let inv = scan(std::slice::from_ref(&t), &cat, now);
    let p = plan(&inv, &cat, &named(&[]), &SystemProbe::new(), now);
    let planned: Vec<&Path> = p.items.iter().map(|i| i.path.as_path()).collect();
    assert_eq!(planned, vec![tp.join("tmp.Xk3j9QaB").as_path()], "{p:#?}");
    let kept = p
        .kept
        .iter()
        .find(|k| k.path == tp.join("tmp.Yk3j9QaC"))
        .unwrap();
    assert!(matches!(kept.reason, KeepReason::InUse { .. }), "{kept:?}");
    assert!(p.kept.iter().all(|k| k.path != tp.join("tmp.Sc4tch01")));
    assert_eq!(p.planned_bytes, du::allocated(&[tp.join("tmp.Xk3j9QaB")]));
    let mut codex: Vec<&Path> = inv.roots[0]
        .items
        .iter()
        .filter(|i| i.producer.as_deref() == Some("codex-tmp-git-objects"))
        .map(|i| i.path.as_path())
        .collect();
    codex.sort();
    assert_eq!(
        codex,
        [tp.join("tmp.Xk3j9QaB"), tp.join("tmp.Yk3j9QaC")],
        "only the git stores are Codex's"
    );
    // Planned, then made a repository (a HEAD, old times kept as `cp -a` keeps them) before the
    // deletion: no longer Codex's, so it stays with what was added.
    let store = tp.join("tmp.Xk3j9QaB");
    tree::write_file(&store.join("HEAD"), 21);
    tree::write_file(&store.join("notes.txt"), 7);
    tree::set_tree_mtime(&store, ago(3 * DAY));
    let report = execute(&p, &cat, &SystemProbe::new(), now, &mut |_| {});
    assert_eq!(report.freed_bytes, 0, "{report:#?}");
    assert!(store.join("notes.txt").exists() && store.join("index").exists());
}

#[test]
fn a_tauri_backup_is_kept_while_its_app_runs_and_planned_once_it_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let t = root(dir.path(), "T", RootKind::Temp);
    let tp = t.canonical.clone();
    let app = "cwtauriapp";
    let backup = tp.join("tauri_current_appAb12Cd");
    tree::write_file(&backup.join("Contents/MacOS").join(app), 50_000);
    tree::write_file(&backup.join("Contents/Info.plist"), 900);
    // A backup whose app cannot be read (no Contents/MacOS) is kept whatever runs.
    let unknown = tp.join("tauri_updated_app9xYz0Q");
    tree::write_file(&unknown.join("current_app.AppImage"), 40_000);
    tree::set_tree_mtime(&backup, ago(30 * DAY));
    tree::set_tree_mtime(&unknown, ago(30 * DAY));
    let cat = Catalogue::builtin();
    let policy = named(&["tauri-updater-backup"]);
    let bin = dir.path().join("bin");
    fs::create_dir(&bin).unwrap();
    let running = run_as(&bin, app, dir.path());
    let now = SystemTime::now();
    let inv = scan(std::slice::from_ref(&t), &cat, now);
    let p = plan(&inv, &cat, &policy, &OwnFilesProbe::new(), now);
    assert!(p.items.is_empty(), "{p:#?}");
    let reason = |p: &cachewatch_core::reclaim::ReclaimPlan, path: &Path| {
        p.kept
            .iter()
            .find(|k| k.path == path)
            .unwrap()
            .reason
            .clone()
    };
    assert_eq!(
        reason(&p, &backup),
        KeepReason::AppRunning { name: app.into() }
    );
    assert!(matches!(
        reason(&p, &unknown),
        KeepReason::AppRunning { .. }
    ));
    drop(running);
    let p = plan(
        &inv,
        &cat,
        &policy,
        &OwnFilesProbe::new(),
        SystemTime::now(),
    );
    let planned: Vec<&Path> = p.items.iter().map(|i| i.path.as_path()).collect();
    assert_eq!(planned, vec![backup.as_path()], "{p:#?}");
    assert_eq!(p.planned_bytes, du::allocated(&[&backup]));
    assert!(matches!(
        reason(&p, &unknown),
        KeepReason::AppRunning { .. }
    ));
}

#[test]
fn a_cache_read_yesterday_is_not_old_however_old_its_changes_and_a_leak_is() {
    let dir = tempfile::tempdir().unwrap();
    let c = root(dir.path(), "C", RootKind::Cache);
    let t = root(dir.path(), "T", RootKind::Temp);
    let module = c.canonical.join("clang/ModuleCache/2AB3C4D5E6F70");
    tree::write_file(&module.join("Foundation-1A2B3C.pcm"), 90_000);
    tree::write_file(&module.join("Darwin-4D5E6F.pcm"), 60_000);
    let stale = c.canonical.join("clang/ModuleCache/3BC4D5E6F7081");
    tree::write_file(&stale.join("UIKit-7A8B9C.pcm"), 80_000);
    let leak = t.canonical.join("tendril-e2e-3fa85f6457b4");
    tree::write_file(&leak.join("db/tendril.db"), 70_000);
    tree::write_file(&leak.join("config.yaml"), 1_000);
    // Built 45 days ago; one module of the first set (and one file of the leak) read yesterday.
    for p in [&module, &stale, &leak] {
        set_times(p, ago(45 * DAY), ago(45 * DAY));
    }
    let read = |p: &Path| {
        let times = fs::FileTimes::new()
            .set_accessed(ago(DAY))
            .set_modified(ago(45 * DAY));
        fs::File::open(p).unwrap().set_times(times).unwrap();
    };
    read(&module.join("Darwin-4D5E6F.pcm"));
    read(&leak.join("db/tendril.db"));
    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let inv = scan(&[c.clone(), t.clone()], &cat, now);
    let policy = Policy {
        older_than: Duration::from_secs(30 * DAY),
        producers: vec!["clang-modulecache".into(), "tendril-e2e".into()],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &OwnFilesProbe::new(), now);
    let mut planned: Vec<&Path> = p.items.iter().map(|i| i.path.as_path()).collect();
    planned.sort();
    let mut want = vec![stale.as_path(), leak.as_path()];
    want.sort();
    assert_eq!(planned, want, "{p:#?}");
    let kept = p.kept.iter().find(|k| k.path == module).unwrap();
    match &kept.reason {
        KeepReason::TooYoung {
            age_secs,
            needed_secs,
        } => {
            assert!((DAY..DAY + 60).contains(age_secs), "{age_secs}");
            assert_eq!(*needed_secs, 31 * DAY);
        }
        other => panic!("{other:?}"),
    }
    let leak_item = p.items.iter().find(|i| i.path == leak).unwrap();
    assert!(leak_item.age_secs >= 45 * DAY, "{leak_item:?}");
}
