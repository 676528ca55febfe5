//! Unit tests of plan and execute on hand-built inventories over real temp trees, with a fake probe.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::plan::plan_id;
use super::*;
use crate::catalogue::Catalogue;
use crate::inventory::{Captures, Inventory, Item, Measure, RootScan};
use crate::process::{OpenFile, ProcessInfo, ProcessProbe};
use crate::roots::{Root, RootKind};

const RULES: &str = r#"
[[producer]]
id = "kg"
name = "katago-like"
root = "temp"
item = "model_*_*_*.mlmodelc"
name_regex = '^model_(?P<pid>\d+)_(?P<thread>\d+)_(?P<ts>\d+)\.mlmodelc$'
kind = "leak"
reclaim = "auto"
owner = { pid_in_name = true }

[[producer]]
id = "gpu"
name = "gpuarchiver-like"
root = "temp"
item = "gpuarchiver-*"
kind = "leak"
reclaim = "auto"
min_age_secs = 300

[[producer]]
id = "man"
name = "manual"
root = "temp"
item = "man-*"
kind = "cache"
reclaim = "manual"

[[producer]]
id = "sys"
name = "system"
root = "temp"
item = "sys-*"
kind = "system"
reclaim = "auto"

[[producer]]
id = "ship"
name = "app-owned"
root = "temp"
item = "ship-*"
kind = "leak"
reclaim = "auto"
owner = { processes = ["ShipIt"] }
"#;

fn catalogue() -> Catalogue {
    Catalogue::from_toml(RULES, Path::new("<test>")).unwrap()
}

#[derive(Default)]
struct FakeProbe {
    procs: HashMap<u32, ProcessInfo>,
    running: Vec<String>,
    open: Vec<OpenFile>,
}

impl ProcessProbe for FakeProbe {
    fn process(&self, pid: u32) -> Option<ProcessInfo> {
        self.procs.get(&pid).cloned()
    }
    fn is_running(&self, name: &str) -> bool {
        self.running.iter().any(|n| n == name)
    }
    fn open_file_under(&self, dir: &Path) -> Option<OpenFile> {
        self.open.iter().find(|o| o.path.starts_with(dir)).cloned()
    }
}

struct Tree {
    _dir: tempfile::TempDir,
    root: Root,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Temp, dir.path()).unwrap();
    Tree { _dir: dir, root }
}

const HOUR: Duration = Duration::from_secs(3600);

/// Makes a dir item with one 5000-byte file, every mtime set to `mtime`.
fn make_dir(root: &Root, name: &str, mtime: SystemTime) -> PathBuf {
    let p = root.canonical.join(name);
    fs::create_dir(&p).unwrap();
    let f = p.join("data.bin");
    fs::write(&f, vec![7u8; 5000]).unwrap();
    set_mtime(&f, mtime);
    set_mtime(&p, mtime);
    p
}

/// Sets mtime and access time: the item was made then and not read since (a cache ages from
/// its last use).
fn set_mtime(p: &Path, t: SystemTime) {
    let f = fs::File::open(p).unwrap();
    f.set_times(fs::FileTimes::new().set_modified(t).set_accessed(t))
        .unwrap();
}

/// Allocated bytes (`st_blocks * 512`) and newest mtime of `path` and everything under it, not
/// following symlinks.
fn measure_tree(path: &Path) -> (u64, Option<SystemTime>) {
    let md = fs::symlink_metadata(path).unwrap();
    let mut bytes = md.blocks() * 512;
    let mut newest = md.modified().ok();
    if md.is_dir() {
        for e in fs::read_dir(path).unwrap() {
            let (b, n) = measure_tree(&e.unwrap().path());
            bytes += b;
            newest = newest.max(n);
        }
    }
    (bytes, newest)
}

fn item(path: &Path, producer: Option<&str>, captures: Captures) -> Item {
    let md = fs::symlink_metadata(path).unwrap();
    let (allocated_bytes, newest_mtime) = measure_tree(path);
    Item {
        path: path.to_path_buf(),
        producer: producer.map(str::to_owned),
        captures,
        measure: Measure {
            allocated_bytes,
            apparent_bytes: md.len(),
            freeable_bytes: allocated_bytes,
            files: 1,
            dirs: 1,
            newest_mtime,
            birth_time: md.created().ok(),
        },
        is_symlink: md.file_type().is_symlink(),
        dev: md.dev(),
        ino: md.ino(),
    }
}

fn inventory(root: &Root, items: Vec<Item>, now: SystemTime) -> Inventory {
    Inventory {
        roots: vec![RootScan {
            root: root.clone(),
            total: Measure::default(),
            items,
            issues: vec![],
            vanished: 0,
            non_utf8_names: 0,
            other_device: 0,
        }],
        scanned_at: now,
    }
}

fn policy(older_than: Duration, producers: &[&str]) -> Policy {
    Policy {
        older_than,
        producers: producers.iter().map(|s| (*s).to_owned()).collect(),
        protected: vec![],
    }
}

fn kept_reason<'a>(plan: &'a [KeptItem], path: &Path) -> &'a KeepReason {
    &plan.iter().find(|k| k.path == path).unwrap().reason
}

#[test]
fn plan_selects_by_mode_kind_age_and_app() {
    let t = tree();
    let now = SystemTime::now();
    let old = now - 2 * HOUR;
    let gpu_old = make_dir(&t.root, "gpuarchiver-old", old);
    let gpu_young = make_dir(&t.root, "gpuarchiver-young", now - Duration::from_secs(60));
    let man = make_dir(&t.root, "man-1", old);
    let sys = make_dir(&t.root, "sys-1", old);
    let ship = make_dir(&t.root, "ship-1", old);
    let unattributed = make_dir(&t.root, "whatever", old);
    let ghost = make_dir(&t.root, "ghost", old);
    let inv = inventory(
        &t.root,
        vec![
            item(&gpu_old, Some("gpu"), Captures::default()),
            item(&gpu_young, Some("gpu"), Captures::default()),
            item(&man, Some("man"), Captures::default()),
            item(&sys, Some("sys"), Captures::default()),
            item(&ship, Some("ship"), Captures::default()),
            item(&unattributed, None, Captures::default()),
            item(&ghost, Some("no-such-rule"), Captures::default()),
        ],
        now,
    );
    let probe = FakeProbe {
        running: vec!["ShipIt".into()],
        ..Default::default()
    };
    // Threshold 0: the gpu rule's 300 s floor still keeps the 60 s old archive.
    let p = plan(
        &inv,
        &catalogue(),
        &policy(Duration::ZERO, &[]),
        &probe,
        now,
    );
    let planned: Vec<_> = p.items.iter().map(|i| i.path.clone()).collect();
    assert_eq!(planned, vec![gpu_old.clone()]);
    assert_eq!(
        kept_reason(&p.kept, &gpu_young),
        &KeepReason::TooYoung {
            age_secs: 60,
            needed_secs: 300
        }
    );
    assert_eq!(kept_reason(&p.kept, &man), &KeepReason::Manual);
    assert_eq!(kept_reason(&p.kept, &sys), &KeepReason::Never);
    assert_eq!(
        kept_reason(&p.kept, &ship),
        &KeepReason::AppRunning {
            name: "ShipIt".into()
        }
    );
    assert_eq!(kept_reason(&p.kept, &ghost), &KeepReason::UnknownProducer);
    assert!(p.kept.iter().all(|k| k.path != unattributed));
    assert_eq!(p.kept.len(), 5);
    let gpu_item = &inv.roots[0].items[0];
    assert_eq!(p.planned_bytes, gpu_item.measure.allocated_bytes);
    assert_eq!(p.items[0].age_secs, 7200);
    assert_eq!(p.items[0].root, t.root.canonical);

    // Naming the manual rule plans it; naming a rule leaves the others out entirely.
    let p = plan(&inv, &catalogue(), &policy(HOUR, &["man"]), &probe, now);
    assert_eq!(p.items.len(), 1);
    assert_eq!(p.items[0].path, man);
    assert!(p.kept.is_empty());
    // A named system rule is still kept.
    let p = plan(&inv, &catalogue(), &policy(HOUR, &["sys"]), &probe, now);
    assert!(p.items.is_empty());
    assert_eq!(kept_reason(&p.kept, &sys), &KeepReason::Never);
}

#[test]
fn owner_pid_alive_keeps_dead_or_reused_does_not() {
    let t = tree();
    let now = SystemTime::now();
    let ts = now - 3 * HOUR;
    let ts_secs = ts.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let ts = SystemTime::UNIX_EPOCH + Duration::from_secs(ts_secs);
    let mut items = vec![];
    for pid in [100u32, 200, 300] {
        let name = format!("model_{pid}_1_{ts_secs}.mlmodelc");
        let p = make_dir(&t.root, &name, now - 2 * HOUR);
        let caps = Captures {
            pid: Some(pid),
            ts: Some(ts),
            bundle: None,
        };
        items.push(item(&p, Some("kg"), caps));
    }
    let inv = inventory(&t.root, items, now);
    let started = |pid, start_time| {
        (
            pid,
            ProcessInfo {
                pid,
                name: "katago".into(),
                start_time,
            },
        )
    };
    // 100: alive since before the item's birth (the ts). 200: dead. 300: alive but started an
    // hour after the birth, so the pid was reused.
    let probe = FakeProbe {
        procs: [started(100, ts - HOUR), started(300, ts + HOUR)].into(),
        ..Default::default()
    };
    let p = plan(&inv, &catalogue(), &policy(HOUR, &[]), &probe, now);
    let planned: Vec<_> = p.items.iter().map(|i| i.owner_pid).collect();
    assert_eq!(planned, vec![Some(200), Some(300)]);
    assert_eq!(p.kept.len(), 1);
    assert_eq!(p.kept[0].reason, KeepReason::OwnerAlive { pid: 100 });
    // Age comes from the younger of ts (3 h) and mtime (2 h).
    assert_eq!(p.items[0].age_secs, 7200);
    assert_eq!(p.items[0].birth_time, Some(ts));
}

#[test]
fn in_use_keeps_and_kept_json_is_flat() {
    let t = tree();
    let now = SystemTime::now();
    let a = make_dir(&t.root, "gpuarchiver-a", now - HOUR);
    let inv = inventory(
        &t.root,
        vec![item(&a, Some("gpu"), Captures::default())],
        now,
    );
    let probe = FakeProbe {
        open: vec![OpenFile {
            pid: 42,
            path: a.join("data.bin"),
        }],
        ..Default::default()
    };
    let p = plan(
        &inv,
        &catalogue(),
        &policy(Duration::ZERO, &[]),
        &probe,
        now,
    );
    assert!(p.items.is_empty());
    let json = serde_json::to_value(&p.kept[0]).unwrap();
    assert_eq!(json["reason"], "in-use");
    assert_eq!(json["pid"], 42);
    assert_eq!(json["path"], a.to_str().unwrap());
    assert_eq!(json["open_path"], a.join("data.bin").to_str().unwrap());
    assert_eq!(json["producer"], "gpu");
    let back: KeptItem = serde_json::from_value(json).unwrap();
    assert_eq!(back, p.kept[0]);
}

#[test]
fn plan_id_is_stable_and_a_tampered_plan_deletes_nothing() {
    let t = tree();
    let now = SystemTime::now();
    let a = make_dir(&t.root, "gpuarchiver-a", now - HOUR);
    let inv = inventory(
        &t.root,
        vec![item(&a, Some("gpu"), Captures::default())],
        now,
    );
    let probe = FakeProbe::default();
    let pol = policy(Duration::ZERO, &[]);
    let p1 = plan(&inv, &catalogue(), &pol, &probe, now);
    let p2 = plan(&inv, &catalogue(), &pol, &probe, now + HOUR);
    assert_eq!(p1.id, p2.id);
    assert_eq!(p1.id.len(), 32);
    let p3 = plan(&inv, &catalogue(), &policy(HOUR / 2, &[]), &probe, now);
    assert_ne!(p1.id, p3.id);

    let mut bad = p1.clone();
    bad.items[0].root = PathBuf::from("/");
    let mut calls = 0;
    let r = execute(&bad, &catalogue(), &probe, now, &mut |_| calls += 1);
    assert_eq!(calls, 0);
    assert!(r.deleted.is_empty());
    assert_eq!(r.errors.len(), 1);
    assert!(r.errors[0].message.contains("does not match"));
    assert!(a.exists());
}

/// A plan crafted with a consistent id must still not reach outside its root nor the root itself.
#[test]
fn execute_refuses_root_outside_and_dotdot() {
    let t = tree();
    let outside = tempfile::tempdir().unwrap();
    let victim = fs::canonicalize(outside.path())
        .unwrap()
        .join("gpuarchiver-x");
    fs::create_dir(&victim).unwrap();
    let now = SystemTime::now();
    let md = fs::symlink_metadata(&victim).unwrap();
    let root_md = fs::symlink_metadata(&t.root.canonical).unwrap();
    let mk = |path: PathBuf, md: &fs::Metadata| PlannedItem {
        path,
        root: t.root.canonical.clone(),
        producer: "gpu".into(),
        allocated_bytes: 0,
        apparent_bytes: 0,
        freeable_bytes: 0,
        age_secs: 0,
        dev: md.dev(),
        ino: md.ino(),
        is_symlink: false,
        newest_mtime: None,
        name_ts: None,
        owner_pid: None,
        owner_app: None,
        birth_time: None,
        born: None,
    };
    let items = vec![
        mk(victim.clone(), &md),
        mk(t.root.canonical.clone(), &root_md),
        mk(t.root.canonical.join("..").join("gpuarchiver-x"), &md),
    ];
    let pol = policy(Duration::ZERO, &[]);
    let plan = ReclaimPlan {
        id: plan_id(&pol, &[], &items),
        created: now,
        policy: pol,
        items,
        kept: vec![],
        roots: vec![],
        planned_bytes: 0,
        planned_freeable_bytes: 0,
    };
    let mut outcomes = vec![];
    let r = execute(&plan, &catalogue(), &FakeProbe::default(), now, &mut |a| {
        outcomes.push(a.outcome.to_string())
    });
    assert!(r.deleted.is_empty());
    assert_eq!(r.errors.len(), 3, "{:?}", r.errors);
    assert_eq!(outcomes.len(), 3);
    assert!(outcomes.iter().all(|o| o.starts_with("error: refusing")));
    assert!(victim.exists());
    assert!(t.root.canonical.exists());
}

#[test]
fn execute_rechecks_inode_age_and_counts_hard_links_once() {
    let t = tree();
    let now = SystemTime::now();
    let old = now - 2 * HOUR;
    let keep_same = make_dir(&t.root, "gpuarchiver-same", old);
    let replaced = make_dir(&t.root, "gpuarchiver-replaced", old);
    let touched = make_dir(&t.root, "gpuarchiver-touched", old);
    let gone = make_dir(&t.root, "gpuarchiver-gone", old);
    let linked = make_dir(&t.root, "gpuarchiver-linked", old);
    fs::hard_link(keep_same.join("data.bin"), linked.join("second")).unwrap();
    set_mtime(&linked, old);
    set_mtime(&keep_same, old);
    let names = [&keep_same, &replaced, &touched, &gone, &linked];
    let items = names
        .iter()
        .map(|p| item(p, Some("gpu"), Captures::default()))
        .collect();
    let inv = inventory(&t.root, items, now);
    let probe = FakeProbe::default();
    let p = plan(&inv, &catalogue(), &policy(HOUR, &[]), &probe, now);
    assert_eq!(p.items.len(), 5);

    fs::remove_dir_all(&replaced).unwrap();
    make_dir(&t.root, "gpuarchiver-replaced", old);
    fs::write(touched.join("new"), b"x").unwrap();
    fs::remove_dir_all(&gone).unwrap();

    let file_bytes = fs::symlink_metadata(linked.join("second"))
        .unwrap()
        .blocks()
        * 512;
    assert!(file_bytes >= 5000);
    let mut audit = vec![];
    let r = execute(&p, &catalogue(), &probe, now, &mut |a| {
        audit.push(a.clone())
    });
    let deleted: Vec<_> = r.deleted.iter().map(|d| d.path.clone()).collect();
    assert_eq!(deleted, vec![linked.clone(), keep_same.clone()]);
    assert!(!keep_same.exists() && !linked.exists());
    assert!(replaced.exists() && touched.exists());
    assert_eq!(r.already_gone, vec![gone.clone()]);
    assert_eq!(r.kept.len(), 2);
    assert!(
        matches!(kept_reason(&r.kept, &replaced), KeepReason::Changed { what } if what.contains("replaced"))
    );
    assert!(
        matches!(kept_reason(&r.kept, &touched), KeepReason::Changed { what } if what.contains("modified"))
    );
    assert_eq!(audit.len(), 5);
    assert_eq!(audit.iter().filter(|a| a.outcome == "deleted").count(), 2);
    assert_eq!(
        audit.iter().filter(|a| a.outcome == "already-gone").count(),
        1
    );
    // The shared inode is counted once: the sum of both items' planned bytes minus one copy.
    let same_bytes = p
        .items
        .iter()
        .find(|i| i.path == keep_same)
        .unwrap()
        .allocated_bytes;
    let linked_bytes = p
        .items
        .iter()
        .find(|i| i.path == linked)
        .unwrap()
        .allocated_bytes;
    assert_eq!(r.freed_bytes, same_bytes + linked_bytes - file_bytes);
    assert_eq!(
        r.deleted.iter().map(|d| d.allocated_bytes).sum::<u64>(),
        r.freed_bytes
    );
}

/// Regression: with a cache root and a temp root nested inside it (here: the temp root is a
/// claimed gpuarchiver-like dir of the cache root), reclaim deleted the temp root as an item of the
/// cache root. An item that is or holds another root is kept at plan and refused at execute.
#[test]
fn nested_root_claimed_as_item_of_outer_root_is_never_deleted() {
    let t = tree();
    let now = SystemTime::now();
    let old = now - 2 * HOUR;
    let holder = make_dir(&t.root, "gpuarchiver-holder", old);
    let inner_dir = holder.join("inner");
    fs::create_dir(&inner_dir).unwrap();
    set_mtime(&inner_dir, old);
    set_mtime(&holder, old);
    let inner = Root::new(RootKind::Cache, &inner_dir).unwrap();
    let same = make_dir(&t.root, "gpuarchiver-is-root", old);
    let same_root = Root::new(RootKind::Cache, &same).unwrap();
    let plain = make_dir(&t.root, "gpuarchiver-plain", old);
    let items = [&holder, &same, &plain]
        .iter()
        .map(|p| item(p, Some("gpu"), Captures::default()))
        .collect();
    let mut inv = inventory(&t.root, items, now);
    for r in [&inner, &same_root] {
        inv.roots.push(RootScan {
            root: r.clone(),
            total: Measure::default(),
            items: vec![],
            issues: vec![],
            vanished: 0,
            non_utf8_names: 0,
            other_device: 0,
        });
    }
    let probe = FakeProbe::default();
    let p = plan(&inv, &catalogue(), &policy(HOUR, &[]), &probe, now);
    let planned: Vec<_> = p.items.iter().map(|i| i.path.clone()).collect();
    assert_eq!(planned, vec![plain.clone()]);
    assert_eq!(
        kept_reason(&p.kept, &holder),
        &KeepReason::HoldsRoot {
            root: inner.canonical.clone()
        }
    );
    assert_eq!(
        kept_reason(&p.kept, &same),
        &KeepReason::HoldsRoot {
            root: same_root.canonical.clone()
        }
    );

    // A plan that lists them anyway (made before the nested root existed, or crafted with a
    // consistent id) still leaves them: execute checks every item against the plan's roots.
    let mut crafted = p.clone();
    crafted.items = [&holder, &same, &plain]
        .iter()
        .map(|path| {
            let mut i = p.items[0].clone();
            let md = fs::symlink_metadata(path).unwrap();
            i.path = (*path).clone();
            i.dev = md.dev();
            i.ino = md.ino();
            i.born = md.created().ok();
            i
        })
        .collect();
    crafted.id = plan_id(&crafted.policy, &crafted.roots, &crafted.items);
    let mut audit = vec![];
    let r = execute(&crafted, &catalogue(), &probe, now, &mut |a| {
        audit.push(a.outcome.to_string())
    });
    let deleted: Vec<_> = r.deleted.iter().map(|d| d.path.clone()).collect();
    assert_eq!(deleted, vec![plain.clone()]);
    assert!(inner_dir.is_dir() && same.is_dir() && holder.is_dir());
    assert!(!plain.exists());
    assert_eq!(r.kept.len(), 2);
    assert!(r
        .kept
        .iter()
        .all(|k| matches!(k.reason, KeepReason::HoldsRoot { .. })));
    assert_eq!(audit.len(), 3);
}

/// Rule 1 and 4: the item's parent is moved out of the root and replaced by a symlink to where it
/// went, between plan and execute. The item keeps its device and inode, but it now resolves
/// outside the root: execute, walking from the root's fd without following symlinks, keeps it as
/// changed and it survives.
#[test]
fn parent_replaced_by_symlink_after_plan_is_refused() {
    let t = tree();
    let outside = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    let old = now - 2 * HOUR;
    let sub = t.root.canonical.join("sub");
    fs::create_dir(&sub).unwrap();
    let victim = sub.join("gpuarchiver-x");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("data.bin"), vec![7u8; 5000]).unwrap();
    set_mtime(&victim.join("data.bin"), old);
    set_mtime(&victim, old);
    let it = item(&victim, Some("gpu"), Captures::default());
    let mut p = plan(
        &inventory(&t.root, vec![it], now),
        &catalogue(),
        &policy(HOUR, &[]),
        &FakeProbe::default(),
        now,
    );
    assert_eq!(p.items.len(), 1);
    p.id = plan_id(&p.policy, &p.roots, &p.items);

    let moved = fs::canonicalize(outside.path()).unwrap().join("sub");
    fs::rename(&sub, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &sub).unwrap();
    let r = execute(&p, &catalogue(), &FakeProbe::default(), now, &mut |_| {});
    assert!(r.deleted.is_empty());
    assert!(r.errors.is_empty(), "{:?}", r);
    assert_eq!(r.kept.len(), 1, "{:?}", r);
    assert!(
        matches!(&r.kept[0].reason, KeepReason::Changed { what } if what.contains("symlink")),
        "{:?}",
        r.kept
    );
    assert!(moved.join("gpuarchiver-x/data.bin").is_file());
}

/// The audit table holds outcomes as text: each reads back as its type and writes back as the
/// same text, whatever it is (rows of older versions too).
#[test]
fn audit_outcomes_read_back_as_the_same_text() {
    use crate::reclaim::AuditOutcome;
    for (text, outcome) in [
        ("attempt", AuditOutcome::Attempt),
        ("interrupted", AuditOutcome::Interrupted),
        ("deleted", AuditOutcome::Deleted),
        ("already-gone", AuditOutcome::AlreadyGone),
        (
            "skipped: in use: pid 7 has /tmp/b/x open",
            AuditOutcome::Skipped("in use: pid 7 has /tmp/b/x open".into()),
        ),
        (
            "error: permission denied",
            AuditOutcome::Error("permission denied".into()),
        ),
        ("skipped:x", AuditOutcome::Other("skipped:x".into())),
        (
            "ignored by begin_reclaims",
            AuditOutcome::Other("ignored by begin_reclaims".into()),
        ),
    ] {
        assert_eq!(AuditOutcome::parse(text), outcome, "{text}");
        assert_eq!(outcome.to_string(), text);
        assert_eq!(
            serde_json::to_value(&outcome).expect("serializes"),
            serde_json::Value::from(text)
        );
        assert_eq!(
            serde_json::from_value::<AuditOutcome>(text.into()).expect("reads"),
            outcome
        );
    }
    assert_eq!(AuditOutcome::parse("error: a: b").word(), "error");
    assert_eq!(AuditOutcome::parse("error: a: b").detail(), "a: b");
    assert_eq!(AuditOutcome::parse("odd: thing").word(), "odd");
    assert_eq!(AuditOutcome::parse("odd: thing").detail(), "thing");
}
