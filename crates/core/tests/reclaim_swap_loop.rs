//! Issue 8, "deletion follows a swapped ancestor", with a real attacker: a thread exchanges an
//! item's parent dir (or the root itself) with a symlink to an outside dir holding same-named
//! entries, in a loop (`renameat2(RENAME_EXCHANGE)`), for the whole execute. Nothing outside may
//! go, and every item reported deleted must really be gone from the root.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::SystemTime;

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, ReclaimReport};
use cachewatch_core::Catalogue;
use support::{decoys_lost, make_decoys, make_items, Arena, Swapper};

const ITEMS: usize = 3000;

fn run(arena: &Arena, a: std::path::PathBuf, b: std::path::PathBuf) -> (ReclaimReport, usize) {
    let now = SystemTime::now();
    let plan = arena.plan(now);
    assert_eq!(plan.items.len(), ITEMS, "kept: {:?}", plan.kept.first());
    let swapper = Swapper::start(a, b);
    let report = execute(
        &plan,
        &Catalogue::builtin(),
        &SystemProbe::snapshot(),
        now,
        &mut |_| {},
    );
    (report, swapper.stop())
}

#[test]
fn parent_dir_exchanged_with_symlink_in_a_loop_deletes_nothing_outside() {
    let arena = Arena::new();
    let now = SystemTime::now();
    let names = make_items(&arena.gradio(), ITEMS, now);
    make_decoys(&arena.outside, &names);
    let link = arena.root.canonical.join("gradio-link");
    std::os::unix::fs::symlink(&arena.outside, &link).unwrap();

    let (report, swaps) = run(&arena, arena.gradio(), link);

    let lost = decoys_lost(&arena.outside, &names);
    println!(
        "{swaps} swaps; deleted {}, kept {}, errors {}, outside lost {lost}",
        report.deleted.len(),
        report.kept.len(),
        report.errors.len()
    );
    assert_eq!(
        lost, 0,
        "outside entries deleted through the swapped parent"
    );
    for d in &report.deleted {
        assert!(
            std::fs::symlink_metadata(&d.path).is_err(),
            "{:?} reported deleted but still in the root",
            d.path
        );
    }
}

#[test]
fn root_exchanged_with_symlink_in_a_loop_deletes_nothing_outside() {
    let arena = Arena::new();
    let now = SystemTime::now();
    let names = make_items(&arena.gradio(), ITEMS, now);
    let decoy_gradio = arena.outside.join("gradio");
    make_decoys(&decoy_gradio, &names);
    let link = arena.beside_root("root-link");
    std::os::unix::fs::symlink(&arena.outside, &link).unwrap();

    let (report, swaps) = run(&arena, arena.root.canonical.clone(), link);

    let lost = decoys_lost(&decoy_gradio, &names);
    println!(
        "{swaps} swaps; deleted {}, kept {}, errors {}, outside lost {lost}",
        report.deleted.len(),
        report.kept.len(),
        report.errors.len()
    );
    assert_eq!(lost, 0, "outside entries deleted through the swapped root");
    for d in &report.deleted {
        assert!(
            std::fs::symlink_metadata(&d.path).is_err(),
            "{:?} reported deleted but still in the root",
            d.path
        );
    }
}
