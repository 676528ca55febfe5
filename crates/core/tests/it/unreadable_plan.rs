//! An item the scan could not read whole (a subdir without permission) is planned as
//! kept with reason `unreadable` already in the dry run, so the preview equals what execute does:
//! execute is given nothing for it and the item stays whole.
//!
//! Permissions do not stop root: where the tests run as root, the scenario runs as nobody
//! (`setpriv`, re-executing this test binary), or is skipped with a printed reason.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, KeepReason};
use cachewatch_core::{Catalogue, Root, RootKind};
use support::{make_items, plan_roots};

/// The scenario, as an unprivileged user, in `base` (a dir that user may write).
fn scenario(base: &Path) {
    let now = SystemTime::now();
    let root_dir = base.join("root");
    fs::create_dir(&root_dir).unwrap();
    let root = Root::new(RootKind::Temp, &root_dir).unwrap();
    let gradio = root.canonical.join("gradio");
    let names = make_items(&gradio, 2, now);
    let item = gradio.join(&names[0]);
    let private = item.join("private");
    fs::create_dir(&private).unwrap();
    fs::write(private.join("secret.bin"), vec![2u8; 5000]).unwrap();
    support::set_mtime(&private, now - support::TWO_DAYS);
    support::set_mtime(&item, now - support::TWO_DAYS);
    fs::set_permissions(&private, fs::Permissions::from_mode(0o000)).unwrap();

    let plan = plan_roots(std::slice::from_ref(&root), now);
    let planned: Vec<_> = plan.items.iter().map(|i| i.path.clone()).collect();
    assert_eq!(planned, [gradio.join(&names[1])], "{:#?}", plan.kept);
    assert_eq!(plan.kept.len(), 1, "{:#?}", plan.kept);
    assert_eq!(plan.kept[0].path, item);
    assert_eq!(
        plan.kept[0].reason,
        KeepReason::Unreadable {
            path: private.clone()
        }
    );
    let json = serde_json::to_value(&plan.kept[0]).unwrap();
    assert_eq!(json["reason"], "unreadable");
    assert_eq!(json["unreadable_path"], private.to_str().unwrap());

    let r = execute(
        &plan,
        &Catalogue::builtin(),
        &SystemProbe::snapshot(),
        now,
        &mut |_| {},
    );
    assert_eq!(r.deleted.len(), 1, "{r:#?}");
    assert!(r.errors.is_empty() && r.kept.is_empty(), "{r:#?}");
    fs::set_permissions(&private, fs::Permissions::from_mode(0o755)).unwrap();
    assert!(
        private.join("secret.bin").is_file(),
        "the unreadable item stays whole"
    );
}

/// Not a test of its own: the scenario as nobody, run by the test below.
#[test]
#[ignore = "helper: run by an_item_with_an_unreadable_subdir_is_planned_as_kept"]
fn unreadable_scenario_helper() {
    if let Some(base) = std::env::var_os("CW_UNREADABLE_BASE") {
        scenario(Path::new(&base));
    }
}

#[test]
fn an_item_with_an_unreadable_subdir_is_planned_as_kept() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        scenario(dir.path());
        return;
    }
    let usable = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !usable {
        println!("SKIPPED: running as root and `setpriv --reuid=nobody` is not usable here");
        return;
    }
    // nobody must reach the base dir and write in it.
    let base = dir.path().join("base");
    fs::create_dir(&base).unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&base, fs::Permissions::from_mode(0o777)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let status = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args([
            "--exact",
            &support::test_path(module_path!(), "unreadable_scenario_helper"),
            "--ignored",
            "--quiet",
        ])
        .env("CW_UNREADABLE_BASE", &base)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the scenario failed as nobody (its output is above)"
    );
    // Let root clean up what nobody made unreadable.
    Command::new("chmod")
        .arg("-R")
        .arg("u+rwx")
        .arg(&base)
        .status()
        .ok();
}
