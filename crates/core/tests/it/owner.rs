//! The owner rule (DESIGN rule 3) on real trees and real processes: a pid in the name decides
//! alone; the rule's processes guard only items whose name yields no pid.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch_core::owner::{self, OwnerCheck, OwnerVerdict};
use cachewatch_core::process::{ProcessProbe, SystemProbe};
use cachewatch_core::reclaim::{execute, plan, KeepReason, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// `/bin/sleep` copied as `<dir>/katago` and run; killed on drop.
struct Engine(Child);

impl Engine {
    fn spawn(exe: &Path) -> Engine {
        Engine(Command::new(exe).arg("600").spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// A copy of `/bin/sleep` named `katago` in `dir`.
fn katago_exe(dir: &Path) -> PathBuf {
    let exe = dir.join("katago");
    fs::copy("/bin/sleep", &exe).unwrap();
    exe
}

/// The pid of a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A bundle dir: two files of 4000 bytes and a subdir with one more, every mtime set to `mtime`.
fn make_bundle(p: &Path, mtime: SystemTime) {
    fs::create_dir_all(p.join("weights")).unwrap();
    for f in ["coremldata.bin", "model.espresso.net", "weights/weight.bin"] {
        fs::write(p.join(f), vec![9u8; 4000]).unwrap();
    }
    for f in [
        "coremldata.bin",
        "model.espresso.net",
        "weights/weight.bin",
        "weights",
        "",
    ] {
        fs::File::open(p.join(f))
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }
}

/// `du -B1 -s -c` of the paths together, bytes.
fn du_bytes(paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

/// With `katago` engines running, every bundle was kept as `app-running`, because the
/// rule's processes guard was checked for items whose name carries a pid too.
#[test]
fn katago_orphans_are_reclaimed_while_other_engines_run() {
    let bin = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let exe = katago_exe(bin.path());
    let engines: Vec<Engine> = (0..3).map(|_| Engine::spawn(&exe)).collect();
    let probe = SystemProbe::snapshot();
    for e in &engines {
        assert_eq!(probe.process(e.pid()).unwrap().name, "katago");
    }
    let root = Root::new(RootKind::Temp, tmp.path()).unwrap();
    let r = &root.canonical;
    let now = SystemTime::now();
    let two_days_ago = now - 2 * DAY;
    let ts_old = epoch_secs(two_days_ago);

    // 50 bundles of 10 engines that exited two days ago (5 threads each).
    let mut orphans: Vec<PathBuf> = Vec::new();
    for _ in 0..10 {
        let pid = dead_pid();
        for thread in 0..5 {
            let p = r.join(format!("model_{pid}_{thread}_{ts_old}.mlmodelc"));
            make_bundle(&p, two_days_ago);
            orphans.push(p);
        }
    }
    // A package of a dead engine killed mid-conversion (v1.17.2 names it with the pid).
    let package = r.join(format!(
        "katago_coreml/model_{}_0_{ts_old}.mlpackage",
        dead_pid()
    ));
    make_bundle(&package, two_days_ago);
    orphans.push(package);
    // The bundle of a running engine, born after it started (the name's ts is now).
    let live = &engines[0];
    let owned = r.join(format!(
        "model_{}_0_{}.mlmodelc",
        live.pid(),
        epoch_secs(now)
    ));
    make_bundle(&owned, now);
    // A bundle whose name says two days ago, with the pid of an engine running now: KataGo's last
    // field is a clock count, not a time, so only the bundle's own birth (made now, after the
    // engine started) counts, and the live engine keeps it.
    let reused = r.join(format!("model_{}_1_{ts_old}.mlmodelc", engines[1].pid()));
    make_bundle(&reused, two_days_ago);
    // An older package without a pid in its name: the processes guard still keeps it.
    let unnamed = r.join("katago_coreml/b18c384nbt.mlpackage");
    make_bundle(&unnamed, two_days_ago);
    orphans.sort();

    // Two hours later, so the owned bundle is past `--older-than 1h` and only its owner keeps it.
    let later = now + 2 * HOUR;
    let cat = Catalogue::builtin();
    let inv = scan(std::slice::from_ref(&root), &cat, later);
    let policy = Policy {
        older_than: HOUR,
        producers: vec![],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), later);
    let planned: Vec<PathBuf> = p.items.iter().map(|i| i.path.clone()).collect();
    assert_eq!(planned, orphans);
    assert!(p.items.iter().all(|i| i.producer == "katago-coreml"));
    let kept: Vec<(PathBuf, KeepReason)> = p
        .kept
        .iter()
        .map(|k| (k.path.clone(), k.reason.clone()))
        .collect();
    let mut want = vec![
        (owned.clone(), KeepReason::OwnerAlive { pid: live.pid() }),
        (
            reused.clone(),
            KeepReason::OwnerAlive {
                pid: engines[1].pid(),
            },
        ),
        (
            unnamed.clone(),
            KeepReason::AppRunning {
                name: "katago".into(),
            },
        ),
    ];
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(kept, want);
    let expected = du_bytes(&orphans);
    assert_eq!(p.planned_bytes, expected);

    let report = execute(&p, &cat, &SystemProbe::new(), later, &mut |_| {});
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.deleted.len(), 51);
    assert_eq!(report.freed_bytes, expected);
    assert!(orphans.iter().all(|o| !o.exists()));
    assert!(owned.join("weights/weight.bin").is_file());
    assert!(unnamed.join("weights/weight.bin").is_file());
    drop(engines);
}

#[test]
fn katago_package_names_yield_the_owner_pid() {
    let cat = Catalogue::builtin();
    let m = cat
        .classify(
            RootKind::Temp,
            Path::new("katago_coreml/model_4242_3_1718000000.mlpackage"),
        )
        .unwrap();
    assert_eq!(m.rule.id, "katago-coreml");
    assert_eq!(m.captures.pid, Some(4242));
    assert_eq!(m.captures.ts, None);
    assert_eq!(
        OwnerCheck::of(m.rule, &m.captures),
        OwnerCheck::Pid {
            pid: 4242,
            ignored_processes: vec!["katago".into()]
        }
    );
    let unnamed = cat
        .classify(
            RootKind::Temp,
            Path::new("katago_coreml/b18c384nbt.mlpackage"),
        )
        .unwrap();
    assert_eq!(unnamed.captures.pid, None);
    assert_eq!(
        OwnerCheck::of(unnamed.rule, &unnamed.captures),
        OwnerCheck::Processes {
            processes: vec!["katago".into()]
        }
    );
}

/// The start-time slack: an owner whose (whole-second) start reads up to 2 s after the item's
/// birth still owns it; 3 s after is a reused pid.
#[test]
fn owner_started_within_the_slack_keeps_its_item() {
    let cat = Catalogue::builtin();
    let rule = cat.rule("katago-coreml").unwrap();
    let probe = SystemProbe::snapshot();
    let me = probe.process(std::process::id()).unwrap();
    let pid = Some(me.pid);
    let at = |secs_before: u64| Some(me.start_time - Duration::from_secs(secs_before));
    assert_eq!(
        owner::verdict(&probe, rule, pid, None, at(2)),
        OwnerVerdict::PidAlive { pid: me.pid }
    );
    assert_eq!(
        owner::verdict(&probe, rule, pid, None, at(3)),
        OwnerVerdict::PidReused {
            pid: me.pid,
            started: me.start_time
        }
    );
    assert_eq!(
        owner::verdict(&probe, rule, pid, None, None),
        OwnerVerdict::PidAlive { pid: me.pid }
    );
    let dead = dead_pid();
    assert_eq!(
        owner::verdict(&probe, rule, Some(dead), None, None),
        OwnerVerdict::PidDead { pid: dead }
    );
    assert!(owner::verdict(&probe, rule, Some(dead), None, None).is_orphan());
    // No pid and a rule naming no processes: nothing keeps it (`katago` may run in another test).
    let mps = cat.rule("mpsgraph-scratch").unwrap();
    assert_eq!(
        owner::verdict(&probe, mps, None, None, None),
        OwnerVerdict::NoPid { running: None }
    );
}
