//! Reclaim on real trees with the real scanner, the built-in catalogue and the real processes
//! (open files: this test process's own, see [`OwnFilesProbe`]).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{
    execute, plan, AuditRecord, KeepReason, Policy, ReclaimPlan, ReclaimReport,
};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};

use crate::support::{kept_reasons, test_path, OwnFilesProbe};

const HOUR: Duration = Duration::from_secs(3600);

/// A `sleep 60` child killed on drop.
struct Sleeper(Child);

impl Sleeper {
    fn spawn() -> Sleeper {
        Sleeper(Command::new("sleep").arg("60").spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
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

/// Sets the mtime of `p` and of everything under it (not through symlinks) to `t`.
fn age_tree(p: &Path, t: SystemTime) {
    let md = fs::symlink_metadata(p).unwrap();
    if md.file_type().is_symlink() {
        return;
    }
    if md.is_dir() {
        for e in fs::read_dir(p).unwrap() {
            age_tree(&e.unwrap().path(), t);
        }
    }
    fs::File::open(p).unwrap().set_modified(t).unwrap();
}

/// A dir with `n` files of 3000 bytes and a subdir with one more.
fn make_bundle(p: &Path, n: usize) {
    fs::create_dir_all(p.join("weights")).unwrap();
    for i in 0..n {
        fs::write(p.join(format!("f{i}")), vec![1u8; 3000]).unwrap();
    }
    fs::write(p.join("weights/w.bin"), vec![2u8; 3000]).unwrap();
}

/// `du -B1 -s` of the paths together (hard links once), bytes.
fn du_bytes(paths: &[&Path]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

struct Env {
    _dirs: Vec<tempfile::TempDir>,
    temp: Root,
    cache: Root,
    outside: PathBuf,
}

fn env() -> Env {
    let t = tempfile::tempdir().unwrap();
    let c = tempfile::tempdir().unwrap();
    let o = tempfile::tempdir().unwrap();
    let outside = fs::canonicalize(o.path()).unwrap();
    Env {
        temp: Root::new(RootKind::Temp, t.path()).unwrap(),
        cache: Root::new(RootKind::Cache, c.path()).unwrap(),
        outside,
        _dirs: vec![t, c, o],
    }
}

impl Env {
    fn roots(&self) -> Vec<Root> {
        vec![self.temp.clone(), self.cache.clone()]
    }
    fn plan(&self, older_than: Duration, now: SystemTime) -> ReclaimPlan {
        let cat = Catalogue::builtin();
        let inv = scan(&self.roots(), &cat, now);
        let policy = Policy {
            older_than,
            producers: vec![],
            protected: vec![],
        };
        plan(&inv, &cat, &policy, &OwnFilesProbe::new(), now)
    }
    fn execute(&self, p: &ReclaimPlan, now: SystemTime) -> (ReclaimReport, Vec<String>) {
        Env::execute_with(p, &Catalogue::builtin(), now)
    }
    fn execute_with(
        p: &ReclaimPlan,
        cat: &Catalogue,
        now: SystemTime,
    ) -> (ReclaimReport, Vec<String>) {
        let mut outcomes = vec![];
        let r = execute(p, cat, &OwnFilesProbe::new(), now, &mut |a| {
            outcomes.push(format!("{} {}", a.path.display(), a.outcome))
        });
        (r, outcomes)
    }
}

fn reason_of<'a>(p: &'a ReclaimPlan, path: &Path) -> &'a KeepReason {
    &p.kept
        .iter()
        .find(|k| k.path == path)
        .unwrap_or_else(|| panic!("{} not kept: {:#?}", path.display(), p))
        .reason
}

fn planned(p: &ReclaimPlan) -> Vec<PathBuf> {
    p.items.iter().map(|i| i.path.clone()).collect()
}

#[test]
fn katago_bundles_of_dead_owners_go_live_owners_stay() {
    let e = env();
    let live = Sleeper::spawn();
    let dead = dead_pid();
    let now = SystemTime::now();
    let ts_now = epoch_secs(now);
    let root = &e.temp.canonical;
    let live_item = root.join(format!("model_{}_1_{ts_now}.mlmodelc", live.pid()));
    let dead_item = root.join(format!("model_{dead}_1_{ts_now}.mlmodelc"));
    // The name's last field says an hour before the live sleeper started, but it is a clock count,
    // not a time: the bundle's own birth (now) is after the sleeper's start, so the sleeper keeps it.
    let reused_item = root.join(format!("model_{}_2_{}.mlmodelc", live.pid(), ts_now - 3600));
    for p in [&live_item, &dead_item, &reused_item] {
        make_bundle(p, 3);
    }
    let sentinel = root.join("unrelated.txt");
    fs::write(&sentinel, b"keep me").unwrap();

    let now = SystemTime::now();
    let p = e.plan(Duration::ZERO, now);
    assert_eq!(planned(&p), vec![dead_item.clone()], "{}", kept_reasons(&p));
    assert_eq!(
        reason_of(&p, &live_item),
        &KeepReason::OwnerAlive { pid: live.pid() }
    );
    assert_eq!(
        reason_of(&p, &reused_item),
        &KeepReason::OwnerAlive { pid: live.pid() }
    );
    let expected_bytes = du_bytes(&[&dead_item]);
    assert_eq!(p.planned_bytes, expected_bytes);

    let (r, outcomes) = e.execute(&p, SystemTime::now());
    assert_eq!(r.deleted.len(), 1, "{r:#?}");
    assert_eq!(r.freed_bytes, expected_bytes);
    assert_eq!(outcomes.len(), 1);
    assert!(outcomes.iter().all(|o| o.ends_with(" deleted")));
    assert!(!dead_item.exists());
    assert!(live_item.join("weights/w.bin").exists());
    assert!(reused_item.join("weights/w.bin").exists());
    assert_eq!(fs::read(&sentinel).unwrap(), b"keep me");
    assert!(root.is_dir());
}

#[test]
fn gpuarchiver_dirs_younger_than_five_minutes_stay_at_threshold_zero() {
    let e = env();
    let base = e.cache.canonical.join("com.apple.gpuarchiver");
    let young = base.join("gpuarchiver-young1");
    let old = base.join("gpuarchiver-old001");
    let app_old = e
        .cache
        .canonical
        .join("julia/com.apple.gpuarchiver/gpuarchiver-old002");
    for p in [&young, &old, &app_old] {
        make_bundle(p, 2);
    }
    let now = SystemTime::now();
    age_tree(&old, now - HOUR);
    age_tree(&app_old, now - Duration::from_secs(10 * 60));
    age_tree(&young, now - Duration::from_secs(4 * 60));

    let p = e.plan(Duration::ZERO, now);
    assert_eq!(
        planned(&p),
        vec![old.clone(), app_old.clone()],
        "{}",
        kept_reasons(&p)
    );
    match reason_of(&p, &young) {
        KeepReason::TooYoung {
            age_secs,
            needed_secs,
        } => {
            assert_eq!(*needed_secs, 300);
            assert!((240..=241).contains(age_secs), "age {age_secs}");
        }
        other => panic!("{other:?}"),
    }
    let before = du_bytes(&[&old, &app_old]);
    let (r, _) = e.execute(&p, now);
    assert_eq!(r.freed_bytes, before);
    assert!(!old.exists() && !app_old.exists());
    assert!(young.join("f1").exists());
    // The parent dirs are not items: they stay.
    assert!(
        base.is_dir()
            && e.cache
                .canonical
                .join("julia/com.apple.gpuarchiver")
                .is_dir()
    );
}

#[test]
fn symlinks_go_as_links_and_their_targets_survive() {
    let e = env();
    let dead = dead_pid();
    let ts = epoch_secs(SystemTime::now());
    let root = &e.temp.canonical;
    let target_dir = e.outside.join("precious");
    make_bundle(&target_dir, 2);
    // An item that is itself a symlink to a dir outside the root.
    let link_item = root.join(format!("model_{dead}_1_{ts}.mlmodelc"));
    std::os::unix::fs::symlink(&target_dir, &link_item).unwrap();
    // An item with a symlink inside pointing outside.
    let item = root.join(format!("model_{dead}_2_{ts}.mlmodelc"));
    make_bundle(&item, 1);
    std::os::unix::fs::symlink(&target_dir, item.join("escape")).unwrap();
    std::os::unix::fs::symlink(target_dir.join("f0"), item.join("weights/escape-file")).unwrap();

    let now = SystemTime::now();
    let p = e.plan(Duration::ZERO, now);
    assert_eq!(
        planned(&p),
        vec![link_item.clone(), item.clone()],
        "{}",
        kept_reasons(&p)
    );
    assert!(p.items[0].is_symlink);
    let (r, _) = e.execute(&p, now);
    assert_eq!(r.deleted.len(), 2, "{r:#?}");
    assert!(fs::symlink_metadata(&link_item).is_err());
    assert!(!item.exists());
    for f in ["f0", "f1", "weights/w.bin"] {
        assert_eq!(fs::read(target_dir.join(f)).unwrap().len(), 3000, "{f}");
    }
}

#[test]
fn an_open_file_keeps_its_item() {
    let e = env();
    let dead = dead_pid();
    let ts = epoch_secs(SystemTime::now());
    let item = e
        .temp
        .canonical
        .join(format!("model_{dead}_1_{ts}.mlmodelc"));
    make_bundle(&item, 2);
    let held = fs::File::open(item.join("weights/w.bin")).unwrap();

    let p = e.plan(Duration::ZERO, SystemTime::now());
    assert!(p.items.is_empty(), "{p:#?}");
    assert_eq!(
        reason_of(&p, &item),
        &KeepReason::InUse {
            pid: std::process::id(),
            path: item.join("weights/w.bin")
        }
    );
    drop(held);
    let p = e.plan(Duration::ZERO, SystemTime::now());
    assert_eq!(planned(&p), vec![item.clone()], "{}", kept_reasons(&p));
    // Opened again between plan and execute: the re-check sees it.
    let held = fs::File::open(item.join("f1")).unwrap();
    let (r, outcomes) = e.execute(&p, SystemTime::now());
    assert!(r.deleted.is_empty());
    assert!(
        matches!(r.kept[0].reason, KeepReason::InUse { .. }),
        "{r:#?}"
    );
    assert!(outcomes[0].contains("skipped: in use"), "{outcomes:?}");
    assert!(item.join("f1").exists());
    drop(held);
}

#[test]
fn a_file_added_after_the_plan_keeps_the_item() {
    let e = env();
    let base = e.cache.canonical.join("com.apple.gpuarchiver");
    let item = base.join("gpuarchiver-abc123");
    make_bundle(&item, 2);
    let now = SystemTime::now();
    age_tree(&item, now - 2 * HOUR);
    let p = e.plan(HOUR, now);
    assert_eq!(planned(&p), vec![item.clone()], "{}", kept_reasons(&p));
    fs::write(item.join("weights/PersistentState"), b"in progress").unwrap();
    let (r, outcomes) = e.execute(&p, SystemTime::now());
    assert!(r.deleted.is_empty());
    assert!(
        matches!(&r.kept[0].reason, KeepReason::Changed { what } if what.contains("modified")),
        "{r:#?}"
    );
    assert!(outcomes[0].contains("skipped: changed"));
    assert!(item.join("weights/PersistentState").exists());
}

#[test]
fn an_item_replaced_by_another_inode_is_kept() {
    let e = env();
    let base = e.cache.canonical.join("com.apple.gpuarchiver");
    let item = base.join("gpuarchiver-swap01");
    make_bundle(&item, 1);
    let now = SystemTime::now();
    age_tree(&item, now - 2 * HOUR);
    let p = e.plan(HOUR, now);
    assert_eq!(planned(&p), vec![item.clone()], "{}", kept_reasons(&p));
    // Move the planned dir out (keeping its inode busy) and put a look-alike with old mtimes in.
    let moved = e.outside.join("moved");
    fs::rename(&item, &moved).unwrap();
    make_bundle(&item, 1);
    age_tree(&item, now - 2 * HOUR);
    let (r, _) = e.execute(&p, now);
    assert!(r.deleted.is_empty());
    assert!(
        matches!(&r.kept[0].reason, KeepReason::Changed { what } if what.contains("replaced")),
        "{r:#?}"
    );
    assert!(item.join("f0").exists() && moved.join("f0").exists());
}

#[test]
fn nothing_outside_the_roots_and_never_a_root_is_deleted() {
    let e = env();
    let dead = dead_pid();
    let ts = epoch_secs(SystemTime::now());
    let root = &e.temp.canonical;
    let items: Vec<PathBuf> = (0..20)
        .map(|i| root.join(format!("model_{dead}_{i}_{ts}.mlmodelc")))
        .collect();
    for p in &items {
        make_bundle(p, 1);
    }
    let unattributed = root.join("some-tool-dir");
    make_bundle(&unattributed, 2);
    fs::write(e.outside.join("outside.txt"), b"x").unwrap();
    let now = SystemTime::now();
    let p = e.plan(Duration::ZERO, now);
    assert_eq!(p.items.len(), 20, "{}", kept_reasons(&p));
    assert!(p.items.iter().all(|i| i.root == *root && i.path != *root));
    let (r, outcomes) = e.execute(&p, now);
    assert_eq!(r.deleted.len(), 20);
    assert_eq!(outcomes.len(), 20);
    assert!(r.errors.is_empty());
    assert!(items.iter().all(|p| !p.exists()));
    assert!(root.is_dir() && e.cache.canonical.is_dir());
    assert!(unattributed.join("weights/w.bin").exists());
    assert!(e.outside.join("outside.txt").exists());
    // Executing the same plan again: everything is already gone, nothing else is touched.
    let (r, outcomes) = e.execute(&p, now);
    assert_eq!(r.already_gone.len(), 20);
    assert!(outcomes.iter().all(|o| o.ends_with("already-gone")));
    assert!(root.is_dir() && unattributed.is_dir());
}

/// Regression: a file of a deleted item hard-linked to a file outside the root was counted as
/// freed, though its blocks stay allocated through the outside link.
#[test]
fn a_file_hard_linked_from_outside_is_not_counted_as_freed() {
    use std::os::unix::fs::MetadataExt;
    let e = env();
    let item = e
        .cache
        .canonical
        .join("com.apple.gpuarchiver/gpuarchiver-linked1");
    make_bundle(&item, 2);
    let inside = item.join("weights/w.bin");
    let outside = e.outside.join("w.bin");
    fs::hard_link(&inside, &outside).unwrap();
    let now = SystemTime::now();
    age_tree(&item, now - HOUR);

    let p = e.plan(Duration::ZERO, now);
    assert_eq!(planned(&p), vec![item.clone()], "{}", kept_reasons(&p));
    let linked_bytes = fs::symlink_metadata(&inside).unwrap().blocks() * 512;
    assert!(linked_bytes >= 3000);
    let expected = du_bytes(&[&item]) - linked_bytes;
    let (r, _) = e.execute(&p, now);
    assert_eq!(r.deleted.len(), 1, "{r:#?}");
    assert!(!item.exists());
    assert_eq!(r.freed_bytes, expected);
    assert_eq!(r.deleted[0].allocated_bytes, expected);
    assert_eq!(fs::read(&outside).unwrap(), vec![2u8; 3000]);
    assert_eq!(fs::symlink_metadata(&outside).unwrap().nlink(), 1);
}

/// The plan's times serialize as whole Unix seconds under `*_unix_secs` names (not serde's
/// `{secs_since_epoch, nanos_since_epoch}`); a plan read back from that JSON has lost the
/// sub-second part, so its id no longer matches and it deletes nothing.
#[test]
fn plan_json_times_are_unix_secs_and_a_plan_read_back_deletes_nothing() {
    use std::os::unix::fs::MetadataExt;
    let e = env();
    let dead = dead_pid();
    let ts = epoch_secs(SystemTime::now()) - 7200;
    // Nuitka's onefile dir carries its epoch seconds in the name.
    let item = e.temp.canonical.join(format!("onefile_{dead}_{ts}_123456"));
    make_bundle(&item, 1);
    let mtime = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
    age_tree(&item, mtime);
    let now = SystemTime::now();
    let p = e.plan(Duration::ZERO, now);
    assert_eq!(planned(&p), vec![item.clone()], "{}", kept_reasons(&p));

    let json = serde_json::to_value(&p).unwrap();
    let text = json.to_string();
    assert!(!text.contains("secs_since_epoch"), "{text}");
    assert_eq!(json["created_unix_secs"], epoch_secs(now));
    let j = &json["items"][0];
    let md = fs::symlink_metadata(&item).unwrap();
    assert_eq!(md.mtime(), 1_700_000_000);
    assert_eq!(j["newest_mtime_unix_secs"], 1_700_000_000u64);
    assert_eq!(j["name_ts_unix_secs"], ts);
    assert_eq!(j["birth_time_unix_secs"], ts);
    match md.created() {
        Ok(born) => assert_eq!(j["born_unix_secs"], epoch_secs(born)),
        Err(_) => assert!(j.get("born_unix_secs").is_none(), "{j}"),
    }

    let back: ReclaimPlan = serde_json::from_value(json).unwrap();
    assert_eq!(back.id, p.id);
    let (r, outcomes) = e.execute(&back, now);
    assert!(r.deleted.is_empty() && outcomes.is_empty(), "{r:#?}");
    assert_eq!(r.errors.len(), 1, "{r:#?}");
    assert_eq!(
        r.errors[0].path,
        PathBuf::new(),
        "a plan mismatch names no path"
    );
    assert!(item.join("weights/w.bin").exists());

    let rec = AuditRecord {
        time: mtime,
        path: item.clone(),
        producer: "katago-coreml".to_owned(),
        allocated_bytes: 4096,
        outcome: "deleted".into(),
    };
    let json = serde_json::to_value(&rec).unwrap();
    assert_eq!(json["time_unix_secs"], 1_700_000_000u64);
    assert!(json.get("time").is_none(), "{json}");
}

/// A catalogue of one user rule claiming every entry of a root (`item = "*"`), as the review's `u*`
/// at `/` did (alone: with the built-in rules `*` is refused for overlapping their examples).
fn claim_all_catalogue(kind: &str) -> Catalogue {
    let text = format!(
        "[[producer]]\nid = \"claim-all\"\nname = \"Claims everything\"\nroot = \"{kind}\"\n\
         item = \"*\"\nkind = \"leak\"\nreclaim = \"auto\"\nmin_age_secs = 0\n"
    );
    Catalogue::from_toml(&text, Path::new("config.toml")).unwrap()
}

fn plan_with(
    root: &Root,
    cat: &Catalogue,
    protected: Vec<PathBuf>,
    now: SystemTime,
) -> ReclaimPlan {
    let inv = scan(std::slice::from_ref(root), cat, now);
    let policy = Policy {
        older_than: HOUR / 2,
        producers: vec![],
        protected,
    };
    plan(&inv, cat, &policy, &OwnFilesProbe::new(), now)
}

/// Another process walking a root (`du`, `find`, an indexer, another cachewatch's scan) holds the
/// dirs it lists open: that kept whatever item it was in at the moment of the plan, so a busy
/// machine planned `junk-b` without `junk-a`. A dir held open is not in use; a file is. The real
/// probe here, as the holder is another process.
#[test]
fn a_process_listing_an_item_does_not_keep_it_one_reading_a_file_in_it_does() {
    let t = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(t.path()).unwrap();
    let now = SystemTime::now();
    let (listed, read) = (base.join("listed"), base.join("read"));
    make_bundle(&listed, 1);
    make_bundle(&read, 1);
    age_tree(&base, now - HOUR);
    let mut holder = Command::new("sh")
        .args([
            "-c",
            "exec 3<\"$1\" 4<\"$2\"; echo ready; exec sleep 60",
            "sh",
        ])
        .arg(listed.join("weights"))
        .arg(read.join("f0"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    let root = Root::new(RootKind::Temp, &base).unwrap();
    let cat = claim_all_catalogue("temp");
    let inv = scan(std::slice::from_ref(&root), &cat, now);
    let policy = Policy {
        older_than: HOUR / 2,
        producers: vec![],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    holder.kill().ok();
    holder.wait().ok();

    assert_eq!(ready, "ready\n");
    assert_eq!(planned(&p), vec![listed.clone()], "{}", kept_reasons(&p));
    assert_eq!(
        reason_of(&p, &read),
        &KeepReason::InUse {
            pid: holder.id(),
            path: read.join("f0")
        }
    );
}

#[test]
fn a_user_rule_claiming_everything_keeps_the_protected_data_dir() {
    let t = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(t.path()).unwrap();
    let now = SystemTime::now();
    let data = base.join("data");
    fs::create_dir(&data).unwrap();
    fs::write(data.join("cachewatch.db"), vec![7u8; 5000]).unwrap();
    let junk: Vec<PathBuf> = ["junk-a", "junk-b"].iter().map(|n| base.join(n)).collect();
    for j in &junk {
        make_bundle(j, 2);
    }
    age_tree(&base, now - HOUR);
    let root = Root::new(RootKind::Temp, &base).unwrap();
    let cat = claim_all_catalogue("temp");

    let p = plan_with(&root, &cat, vec![data.clone()], now);
    let planned: Vec<&Path> = p.items.iter().map(|i| i.path.as_path()).collect();
    assert_eq!(
        planned,
        vec![junk[0].as_path(), junk[1].as_path()],
        "{}",
        kept_reasons(&p)
    );
    assert_eq!(
        reason_of(&p, &data),
        &KeepReason::HoldsProtected { path: data.clone() }
    );
    let json = serde_json::to_value(&p.kept[0]).unwrap();
    assert_eq!(json["reason"], "holds-protected");
    assert_eq!(json["protected_path"], data.to_str().unwrap());
    assert_eq!(json["path"], data.to_str().unwrap());

    // Without the protected list the same rule would plan the data dir: the list is what keeps it.
    let unprotected = plan_with(&root, &cat, vec![], now);
    assert!(unprotected.items.iter().any(|i| i.path == data));

    let (report, _) = Env::execute_with(&p, &cat, now);
    assert_eq!(report.deleted.len(), 2, "{report:#?}");
    assert!(report.errors.is_empty(), "{report:#?}");
    assert!(junk.iter().all(|j| !j.exists()));
    assert_eq!(
        fs::read(data.join("cachewatch.db")).unwrap(),
        vec![7u8; 5000]
    );
}

/// Set in the child process that runs [`home_dir_scenario`].
const HOME_SCENARIO: &str = "CACHEWATCH_TEST_HOME_SCENARIO";

/// The home dir is protected without the caller naming it, at plan and again at execute (read
/// through `directories` each time, so the test points `HOME` at a dir inside the root). `HOME` is
/// process-wide and the other tests of this binary plan meanwhile, so the scenario runs in a
/// process of its own: this test binary again, running only [`home_dir_scenario`].
#[test]
fn an_item_holding_the_home_dir_is_kept_at_plan_and_at_execute() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &test_path(module_path!(), "home_dir_scenario"),
            "--ignored",
            "--test-threads=1",
        ])
        .env(HOME_SCENARIO, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the scenario failed:\n{text}\n{err}");
    assert!(text.contains("1 passed"), "the scenario ran:\n{text}");
}

/// The scenario of [`an_item_holding_the_home_dir_is_kept_at_plan_and_at_execute`]; it changes
/// `HOME`, so it does nothing outside the child process that test starts.
#[test]
#[ignore = "run in a process of its own by an_item_holding_the_home_dir_is_kept_at_plan_and_at_execute"]
fn home_dir_scenario() {
    if std::env::var_os(HOME_SCENARIO).is_none() {
        println!("SKIPPED: changes HOME; runs only in the process its test starts");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(t.path()).unwrap();
    let now = SystemTime::now();
    let homes = base.join("homes");
    let home = homes.join("me");
    fs::create_dir_all(&home).unwrap();
    fs::write(home.join(".profile"), b"export X=1\n").unwrap();
    let other = base.join("other");
    make_bundle(&other, 1);
    age_tree(&base, now - HOUR);
    let root = Root::new(RootKind::Temp, &base).unwrap();
    let cat = claim_all_catalogue("temp");
    let saved = std::env::var_os("HOME");

    std::env::set_var("HOME", &home);
    let p = plan_with(&root, &cat, vec![], now);
    let kept_reason = reason_of(&p, &homes).clone();
    let planned: Vec<PathBuf> = p.items.iter().map(|i| i.path.clone()).collect();

    // A plan made while HOME was elsewhere lists `homes`; execute re-reads HOME and keeps it.
    std::env::set_var("HOME", elsewhere.path());
    let stale = plan_with(&root, &cat, vec![], now);
    std::env::set_var("HOME", &home);
    let (report, outcomes) = Env::execute_with(&stale, &cat, now);
    match saved {
        Some(h) => std::env::set_var("HOME", h),
        None => std::env::remove_var("HOME"),
    }

    assert_eq!(
        kept_reason,
        KeepReason::HoldsProtected { path: home.clone() }
    );
    assert_eq!(planned, vec![other.clone()]);
    assert!(stale.items.iter().any(|i| i.path == homes));
    assert_eq!(report.kept.len(), 1, "{report:#?}");
    assert_eq!(report.kept[0].path, homes);
    assert_eq!(
        report.kept[0].reason,
        KeepReason::HoldsProtected { path: home.clone() }
    );
    assert!(outcomes.iter().any(|o| o.starts_with(&format!(
        "{} skipped: it is or holds the protected path",
        homes.display()
    ))));
    assert_eq!(report.deleted.len(), 1);
    assert!(!other.exists());
    assert_eq!(fs::read(home.join(".profile")).unwrap(), b"export X=1\n");
}
