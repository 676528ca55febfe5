//! Swaps at the worst moment (through the executor's
//! checkpoints), mounts inside items, files opened mid-reclaim, concurrent reclaims and roots given
//! twice. Trees are real, in temp dirs; outside dirs hold same-named decoys that must survive.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, SystemTime};

use cachewatch_core::process::{ProcessProbe, SystemProbe};
use cachewatch_core::reclaim::{
    execute, Checkpoint, ExecuteOptions, Executor, KeepReason, PlannedItem, ReclaimError,
    ReclaimPlan, ReclaimReport,
};
use cachewatch_core::{Catalogue, Root, RootKind};
use support::{decoys_lost, exchange, make_decoys, make_items, plan_roots, Arena};

/// Runs `plan` one item per batch (so items go in plan order), calling `hook` at every checkpoint.
fn run_with(
    plan: &ReclaimPlan,
    now: SystemTime,
    hook: &(dyn Fn(Checkpoint, &PlannedItem) + Sync),
) -> ReclaimReport {
    let cat = Catalogue::builtin();
    let probe = SystemProbe::snapshot();
    let opts = ExecuteOptions {
        batch_size: 1,
        lock_wait: Duration::ZERO,
        checkpoint: Some(hook),
    };
    let mut exec = Executor::new(plan, &cat, &probe, now, opts).unwrap();
    while let Some(b) = exec.next_batch() {
        exec.run_batch(b);
    }
    exec.finish()
}

/// Exchanges `a` and `b` once, the first time `item` reaches `at`.
fn swap_once(
    at: Checkpoint,
    item: PathBuf,
    a: PathBuf,
    b: PathBuf,
) -> impl Fn(Checkpoint, &PlannedItem) + Sync {
    let done = AtomicBool::new(false);
    move |c, i| {
        if c == at && i.path == item && !done.swap(true, Ordering::SeqCst) {
            exchange(&a, &b).unwrap();
        }
    }
}

fn swapped_parent_case(at: Checkpoint) {
    let arena = Arena::new();
    let now = SystemTime::now();
    let names = make_items(&arena.gradio(), 3, now);
    make_decoys(&arena.outside, &names);
    let link = arena.root.canonical.join("gradio-link");
    std::os::unix::fs::symlink(&arena.outside, &link).unwrap();
    let plan = arena.plan(now);
    assert_eq!(plan.items.len(), 3);
    let first = arena.gradio().join(&names[0]);

    let hook = swap_once(at, first.clone(), arena.gradio(), link.clone());
    let r = run_with(&plan, now, &hook);

    assert_eq!(decoys_lost(&arena.outside, &names), 0, "{r:#?}");
    // The planned inode went (through the parent's fd), from the real dir now named gradio-link.
    assert_eq!(r.deleted.len(), 1, "{r:#?}");
    assert_eq!(r.deleted[0].path, first);
    assert!(!link.join(&names[0]).exists());
    // The others now lie behind a symlink: kept as changed, untouched.
    assert_eq!(r.kept.len(), 2, "{r:#?}");
    for k in &r.kept {
        assert!(matches!(&k.reason, KeepReason::Changed { what } if what.contains("symlink")));
    }
    assert!(link.join(&names[1]).join("data.bin").is_file());
    assert!(link.join(&names[2]).join("data.bin").is_file());
}

#[test]
fn parent_exchanged_with_symlink_after_recheck_deletes_nothing_outside() {
    swapped_parent_case(Checkpoint::Rechecked);
}

#[test]
fn parent_exchanged_with_symlink_just_before_delete_deletes_nothing_outside() {
    swapped_parent_case(Checkpoint::BeforeDelete);
}

#[test]
fn root_exchanged_with_symlink_just_before_delete_deletes_nothing_outside() {
    let arena = Arena::new();
    let now = SystemTime::now();
    let names = make_items(&arena.gradio(), 3, now);
    let decoys = arena.outside.join("gradio");
    make_decoys(&decoys, &names);
    let link = arena.beside_root("root-link");
    std::os::unix::fs::symlink(&arena.outside, &link).unwrap();
    let plan = arena.plan(now);
    let first = arena.gradio().join(&names[0]);

    let hook = swap_once(
        Checkpoint::BeforeDelete,
        first,
        arena.root.canonical.clone(),
        link.clone(),
    );
    let r = run_with(&plan, now, &hook);

    assert_eq!(decoys_lost(&decoys, &names), 0, "{r:#?}");
    // The root's fd was opened once: every item is still reached in the real root (now at
    // root-link) and deleted there.
    assert_eq!(r.deleted.len(), 3, "{r:#?}");
    for n in &names {
        assert!(!link.join("gradio").join(n).exists());
    }
}

/// Runs a command as nobody (`setpriv`), `None` when setpriv is not usable.
fn as_nobody(program: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Option<bool> {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(program)
        .args(args);
    for (k, v) in envs {
        c.env(k, v);
    }
    c.status().ok().map(|s| s.success())
}

/// Not a test of its own: the unprivileged attacker of the cross-user test, run as nobody by
/// re-executing this binary. Exchanges `$CW_SWAP_A` and `$CW_SWAP_B` once.
#[test]
#[ignore = "helper: run by cross_user_swap_in_sticky_root_spares_the_root_only_file"]
fn cross_user_swap_helper() {
    if let (Some(a), Some(b)) = (std::env::var_os("CW_SWAP_A"), std::env::var_os("CW_SWAP_B")) {
        exchange(Path::new(&a), Path::new(&b)).unwrap();
    }
}

#[test]
fn cross_user_swap_in_sticky_root_spares_the_root_only_file() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: needs root to play both users (root reclaims, nobody attacks)");
        return;
    }
    let sh = Path::new("/bin/sh");
    if as_nobody(sh, &["-c", "true"], &[]) != Some(true) {
        println!("SKIPPED: `setpriv --reuid=nobody` is not usable here");
        return;
    }
    let arena = Arena::new();
    let now = SystemTime::now();
    let base = arena.root.canonical.parent().unwrap().to_path_buf();
    fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&arena.root.canonical, fs::Permissions::from_mode(0o1777)).unwrap();
    // Root-only: mode 700 owned by root, holding what the attacker wants gone.
    let secret = arena.outside.join("secret");
    fs::create_dir(&secret).unwrap();
    make_decoys(&secret, &["item-00000".to_owned()]);
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o700)).unwrap();
    fs::set_permissions(&arena.outside, fs::Permissions::from_mode(0o755)).unwrap();
    // nobody's own gradio dir with one old item, and a symlink to the secret dir.
    let gradio = arena.gradio();
    let link = arena.root.canonical.join("gradio-link");
    let script = format!(
        "mkdir -p {g}/item-00000 && echo x > {g}/item-00000/data.bin && \
         touch -d '3 days ago' {g}/item-00000/data.bin {g}/item-00000 && ln -s {s} {l}",
        g = gradio.display(),
        s = secret.display(),
        l = link.display()
    );
    assert_eq!(as_nobody(sh, &["-c", &script], &[]), Some(true));
    let plan = arena.plan(now);
    assert_eq!(plan.items.len(), 1, "{:?}", plan.kept);

    let exe = std::env::current_exe().unwrap();
    let helper = support::test_path(module_path!(), "cross_user_swap_helper");
    let args = ["--exact", helper.as_str(), "--ignored", "--quiet"];
    if as_nobody(&exe, &args, &[]) != Some(true) {
        println!(
            "SKIPPED: nobody cannot run this test binary {exe:?} (a dir on its path is not \
             world-searchable), so the unprivileged attacker cannot run"
        );
        return;
    }
    let attacked = AtomicBool::new(false);
    let hook = |c: Checkpoint, _: &PlannedItem| {
        if c == Checkpoint::BeforeDelete && !attacked.swap(true, Ordering::SeqCst) {
            let envs = [
                ("CW_SWAP_A", gradio.as_path()),
                ("CW_SWAP_B", link.as_path()),
            ];
            assert_eq!(as_nobody(&exe, &args, &envs), Some(true), "the swap failed");
        }
    };
    let r = run_with(&plan, now, &hook);

    assert!(attacked.load(Ordering::SeqCst));
    assert!(
        secret.join("item-00000/data.bin").is_file(),
        "the root-only file was deleted: {r:#?}"
    );
    // gradio is now the symlink; nobody's real dir (now gradio-link) lost the planned item.
    assert!(fs::symlink_metadata(&gradio).unwrap().is_symlink());
    assert!(!link.join("item-00000").exists(), "{r:#?}");
}

/// A mount made by a test, unmounted (lazily, so a busy mount still goes) on drop.
struct MountGuard(PathBuf);

impl MountGuard {
    /// `mount <args> <target>`; `None` (after printing why) when mounting is not permitted.
    fn mount(args: &[&str], target: &Path) -> Option<MountGuard> {
        let out = Command::new("mount").args(args).arg(target).output().ok()?;
        if !out.status.success() {
            println!(
                "SKIPPED: cannot mount here ({}): {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(MountGuard(target.to_path_buf()))
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        Command::new("umount").arg("-l").arg(&self.0).status().ok();
    }
}

/// One old gradio item holding an empty dir `mnt`; returns (arena, item, mnt, decoy names).
fn mount_arena(now: SystemTime) -> (Arena, PathBuf, PathBuf, Vec<String>) {
    let arena = Arena::new();
    let names = make_items(&arena.gradio(), 1, now);
    let item = arena.gradio().join(&names[0]);
    let mnt = item.join("mnt");
    fs::create_dir(&mnt).unwrap();
    support::set_mtime(&mnt, now - support::TWO_DAYS);
    support::set_mtime(&item, now - support::TWO_DAYS);
    let decoys: Vec<String> = (0..3).map(|i| format!("outside-{i}")).collect();
    make_decoys(&arena.outside, &decoys);
    // Old, so an item measured through a bind mount (the scanner stays on the device, and a bind
    // mount of the same filesystem shares it) is still planned.
    for d in &decoys {
        let p = arena.outside.join(d);
        support::set_mtime(&p.join("data.bin"), now - support::TWO_DAYS);
        support::set_mtime(&p, now - support::TWO_DAYS);
    }
    support::set_mtime(&arena.outside, now - support::TWO_DAYS);
    (arena, item, mnt, decoys)
}

fn assert_kept_for_mount(r: &ReclaimReport, at: &Path) {
    assert!(r.deleted.is_empty(), "{r:#?}");
    assert_eq!(r.kept.len(), 1, "{r:#?}");
    assert_eq!(
        r.kept[0].reason,
        KeepReason::HoldsMount {
            path: at.to_path_buf()
        }
    );
}

/// A mount inside an item is seen by the plan already (the dry run shows it kept, as
/// execute would keep it), bind mounts of the same file system included.
fn assert_planned_as_kept_for_mount(plan: &ReclaimPlan, at: &Path) {
    assert!(plan.items.is_empty(), "{:#?}", plan.items);
    assert_eq!(plan.kept.len(), 1, "{:#?}", plan.kept);
    assert_eq!(
        plan.kept[0].reason,
        KeepReason::HoldsMount {
            path: at.to_path_buf()
        }
    );
}

#[test]
fn bind_mount_of_an_outside_dir_inside_an_item_keeps_the_item() {
    let now = SystemTime::now();
    let (arena, _item, mnt, decoys) = mount_arena(now);
    let outside = arena.outside.to_str().unwrap().to_owned();
    let Some(_m) = MountGuard::mount(&["--bind", &outside], &mnt) else {
        return;
    };
    let plan = arena.plan(now);
    assert_planned_as_kept_for_mount(&plan, &mnt);
    let r = execute(
        &plan,
        &Catalogue::builtin(),
        &SystemProbe::snapshot(),
        now,
        &mut |_| {},
    );
    assert_eq!(decoys_lost(&arena.outside, &decoys), 0, "{r:#?}");
    assert!(r.deleted.is_empty() && r.errors.is_empty(), "{r:#?}");
}

#[test]
fn tmpfs_mounted_inside_an_item_keeps_the_item() {
    let now = SystemTime::now();
    let (arena, _item, mnt, _) = mount_arena(now);
    let Some(_m) = MountGuard::mount(&["-t", "tmpfs", "cw-test"], &mnt) else {
        return;
    };
    fs::write(mnt.join("on-tmpfs"), b"keep").unwrap();
    let plan = arena.plan(now);
    assert_planned_as_kept_for_mount(&plan, &mnt);
    let r = execute(
        &plan,
        &Catalogue::builtin(),
        &SystemProbe::snapshot(),
        now,
        &mut |_| {},
    );
    assert!(mnt.join("on-tmpfs").is_file());
    assert!(r.deleted.is_empty() && r.errors.is_empty(), "{r:#?}");
}

#[test]
fn bind_mount_appearing_just_before_delete_stops_the_deletion_there() {
    let now = SystemTime::now();
    let (arena, item, mnt, decoys) = mount_arena(now);
    let plan = arena.plan(now);
    assert_eq!(plan.items.len(), 1);
    let outside = arena.outside.to_str().unwrap().to_owned();
    let guard: Mutex<Option<MountGuard>> = Mutex::new(None);
    let skipped = AtomicBool::new(false);
    let hook = |c: Checkpoint, _: &PlannedItem| {
        if c == Checkpoint::BeforeDelete {
            match MountGuard::mount(&["--bind", &outside], &mnt) {
                Some(g) => *guard.lock().unwrap() = Some(g),
                None => skipped.store(true, Ordering::SeqCst),
            }
        }
    };
    let r = run_with(&plan, now, &hook);
    if skipped.load(Ordering::SeqCst) {
        return;
    }
    assert_eq!(decoys_lost(&arena.outside, &decoys), 0, "{r:#?}");
    assert!(r.deleted.is_empty(), "{r:#?}");
    assert_eq!(r.errors.len(), 1, "{r:#?}");
    assert!(r.errors[0].message.contains("mounted"), "{r:#?}");
    assert!(item.exists());
    drop(guard);
}

#[test]
fn bind_mount_over_the_item_itself_after_recheck_keeps_it() {
    let now = SystemTime::now();
    let (arena, item, _mnt, decoys) = mount_arena(now);
    let plan = arena.plan(now);
    let outside = arena.outside.to_str().unwrap().to_owned();
    let guard: Mutex<Option<MountGuard>> = Mutex::new(None);
    let skipped = AtomicBool::new(false);
    let hook = |c: Checkpoint, _: &PlannedItem| {
        if c == Checkpoint::Rechecked {
            match MountGuard::mount(&["--bind", &outside], &item) {
                Some(g) => *guard.lock().unwrap() = Some(g),
                None => skipped.store(true, Ordering::SeqCst),
            }
        }
    };
    let r = run_with(&plan, now, &hook);
    if skipped.load(Ordering::SeqCst) {
        return;
    }
    assert_eq!(decoys_lost(&arena.outside, &decoys), 0, "{r:#?}");
    assert_kept_for_mount(&r, &item);
    drop(guard);
}

#[test]
fn file_opened_in_a_later_batch_during_a_reclaim_keeps_its_item() {
    let arena = Arena::new();
    let now = SystemTime::now();
    let n = cachewatch_core::reclaim::DEFAULT_BATCH_SIZE * 2 + 10;
    let names = make_items(&arena.gradio(), n, now);
    let plan = arena.plan(now);
    assert_eq!(plan.items.len(), n);
    let last = arena.gradio().join(names.last().unwrap());
    let mut held: Option<fs::File> = None;
    let probe = SystemProbe::snapshot();
    let r = execute(&plan, &Catalogue::builtin(), &probe, now, &mut |_| {
        if held.is_none() {
            held = Some(fs::File::open(last.join("data.bin")).unwrap());
        }
    });
    assert!(held.is_some());
    assert_eq!(r.deleted.len(), n - 1, "{:?}", r.kept);
    assert_eq!(r.kept.len(), 1);
    assert_eq!(r.kept[0].path, last);
    assert!(matches!(r.kept[0].reason, KeepReason::InUse { pid, .. } if pid == std::process::id()));
    assert!(last.join("data.bin").is_file());
}

#[test]
fn two_reclaims_at_once_delete_each_item_once() {
    let arena = Arena::new();
    let now = SystemTime::now();
    let n = 2000;
    make_items(&arena.gradio(), n, now);
    let plan = arena.plan(now);
    assert_eq!(plan.items.len(), n);
    let barrier = Barrier::new(2);
    let reports: Vec<ReclaimReport> = std::thread::scope(|s| {
        let run = || {
            barrier.wait();
            let probe = SystemProbe::snapshot();
            execute(&plan, &Catalogue::builtin(), &probe, now, &mut |_| {})
        };
        let a = s.spawn(run);
        let b = s.spawn(run);
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    let deleted: usize = reports.iter().map(|r| r.deleted.len()).sum();
    assert_eq!(
        deleted, n,
        "an item counted as deleted twice, or not at all"
    );
    for r in &reports {
        // The second either waited and found everything gone, or refused naming the root.
        let busy = r
            .errors
            .iter()
            .any(|e| e.message.contains("another reclaim"));
        assert!(
            r.deleted.len() == n || r.already_gone.len() == n || busy,
            "deleted {}, already gone {}, errors {:?}",
            r.deleted.len(),
            r.already_gone.len(),
            r.errors.first()
        );
    }
}

#[test]
fn reclaim_refuses_naming_the_root_while_another_holds_it() {
    let arena = Arena::new();
    let now = SystemTime::now();
    make_items(&arena.gradio(), 2, now);
    let plan = arena.plan(now);
    let cat = Catalogue::builtin();
    let probe = SystemProbe::snapshot();
    let opts = ExecuteOptions {
        lock_wait: Duration::ZERO,
        ..ExecuteOptions::default()
    };
    let first = Executor::new(&plan, &cat, &probe, now, opts).unwrap();
    let second = Executor::new(&plan, &cat, &probe, now, opts);
    match second {
        Err(e @ ReclaimError::Busy { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains(arena.root.canonical.to_str().unwrap()),
                "{text}"
            );
            assert!(text.contains("try again"), "{text}");
        }
        other => panic!("expected busy, got {:?}", other.map(|_| ())),
    }
    drop(first);
    assert!(Executor::new(&plan, &cat, &probe, now, opts).is_ok());
}

#[test]
fn same_root_given_twice_plans_and_deletes_each_item_once() {
    let arena = Arena::new();
    let now = SystemTime::now();
    make_items(&arena.gradio(), 3, now);
    let link = arena.beside_root("root-link");
    std::os::unix::fs::symlink(&arena.root.canonical, &link).unwrap();
    let via_link = Root::new(RootKind::Temp, &link).unwrap();
    for roots in [
        vec![arena.root.clone(), arena.root.clone()],
        vec![arena.root.clone(), via_link],
    ] {
        let plan = plan_roots(&roots, now);
        assert_eq!(plan.items.len(), 3, "{:?}", plan.items);
    }
    let plan = plan_roots(&[arena.root.clone(), arena.root.clone()], now);
    let mut outcomes = Vec::new();
    let probe: &dyn ProcessProbe = &SystemProbe::snapshot();
    let r = execute(&plan, &Catalogue::builtin(), probe, now, &mut |a| {
        outcomes.push(a.outcome.clone())
    });
    assert_eq!(r.deleted.len(), 3);
    assert_eq!(outcomes, vec!["deleted"; 3]);
}
