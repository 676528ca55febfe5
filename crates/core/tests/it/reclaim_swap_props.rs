//! Property: whatever an attacker exchanges (an item's parent dir or the root, with a symlink to
//! an outside dir of same-named entries), whenever (at the executor's checkpoints, or all along
//! from a swapper thread), execute deletes nothing outside the plan, and what it reports deleted
//! is really gone while everything else is still there.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use cachewatch_core::reclaim::{Checkpoint, ExecuteOptions, Executor, PlannedItem};
use cachewatch_core::Catalogue;
use proptest::prelude::*;
use support::{decoys_lost, exchange, make_decoys, make_items, Arena, NoProcesses, Swapper};

/// Every (dev, ino) under `p`, not following symlinks.
fn inodes(p: &Path, out: &mut HashSet<(u64, u64)>) {
    let Ok(md) = std::fs::symlink_metadata(p) else {
        return;
    };
    out.insert((md.dev(), md.ino()));
    if md.is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            inodes(&e.unwrap().path(), out);
        }
    }
}

#[derive(Debug, Clone)]
struct Attack {
    item: usize,
    before_delete: bool,
    root: bool,
    times: usize,
}

fn attack() -> impl Strategy<Value = Attack> {
    (0usize..40, any::<bool>(), any::<bool>(), 1usize..=2).prop_map(
        |(item, before_delete, root, times)| Attack {
            item,
            before_delete,
            root,
            times,
        },
    )
}

fn run_case(n: usize, attacks: &[Attack], swapper: Option<bool>, batch_size: usize) {
    let arena = Arena::new();
    let now = SystemTime::now();
    let names = make_items(&arena.gradio(), n, now);
    make_decoys(&arena.outside, &names);
    let decoy_gradio = arena.outside.join("gradio");
    make_decoys(&decoy_gradio, &names);
    let parent_link = arena.root.canonical.join("gradio-link");
    std::os::unix::fs::symlink(&arena.outside, &parent_link).unwrap();
    let root_link = arena.beside_root("root-link");
    std::os::unix::fs::symlink(&arena.outside, &root_link).unwrap();
    let pair = |root: bool| {
        if root {
            (arena.root.canonical.clone(), root_link.clone())
        } else {
            (arena.gradio(), parent_link.clone())
        }
    };
    let plan = arena.plan_with(now, &NoProcesses);
    assert_eq!(plan.items.len(), n);

    let done = Mutex::new(HashSet::new());
    // (root swapped, parent swapped): a parent swap is only made while the root is in place
    // (through the root's symlink it would rename the outside decoys themselves).
    let state = Mutex::new((false, false));
    let hook = |c: Checkpoint, item: &PlannedItem| {
        for (k, a) in attacks.iter().enumerate() {
            let at = if a.before_delete {
                Checkpoint::BeforeDelete
            } else {
                Checkpoint::Rechecked
            };
            let name = &names[a.item % n];
            if c == at && item.path.ends_with(name) && done.lock().unwrap().insert(k) {
                let mut st = state.lock().unwrap();
                if !a.root && st.0 {
                    continue;
                }
                let (x, y) = pair(a.root);
                for _ in 0..a.times {
                    exchange(&x, &y).unwrap();
                    if a.root {
                        st.0 = !st.0;
                    } else {
                        st.1 = !st.1;
                    }
                }
            }
        }
    };
    let thread = swapper.map(|root| {
        let (x, y) = pair(root);
        Swapper::start(x, y)
    });
    let cat = Catalogue::builtin();
    let probe = NoProcesses;
    let opts = ExecuteOptions {
        batch_size,
        lock_wait: Duration::ZERO,
        checkpoint: Some(&hook),
    };
    let report = match Executor::new(&plan, &cat, &probe, now, opts) {
        Ok(mut exec) => {
            while let Some(b) = exec.next_batch() {
                exec.run_batch(b);
            }
            Some(exec.finish())
        }
        // The swapper had the root swapped for a symlink when the root was opened: refused whole.
        Err(e) => {
            assert!(swapper == Some(true), "{e}");
            None
        }
    };
    drop(thread);
    let (root_swapped, parent_swapped) = *state.lock().unwrap();
    if root_swapped {
        let (x, y) = pair(true);
        exchange(&x, &y).unwrap();
    }
    if parent_swapped {
        let (x, y) = pair(false);
        exchange(&x, &y).unwrap();
    }

    assert_eq!(decoys_lost(&arena.outside, &names), 0, "{report:#?}");
    assert_eq!(decoys_lost(&decoy_gradio, &names), 0, "{report:#?}");
    let mut present = HashSet::new();
    inodes(arena.root.canonical.parent().unwrap(), &mut present);
    let deleted: HashSet<PathBuf> = report
        .iter()
        .flat_map(|r| r.deleted.iter().map(|d| d.path.clone()))
        .collect();
    for item in &plan.items {
        let there = present.contains(&(item.dev, item.ino));
        let gone = deleted.contains(&item.path);
        assert!(
            there != gone,
            "{:?}: reported deleted {gone}, still present {there}",
            item.path
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn swaps_at_checkpoints_never_delete_outside_the_plan(
        n in 1usize..8,
        attacks in proptest::collection::vec(attack(), 0..4),
        batch_size in 1usize..4,
    ) {
        run_case(n, &attacks, None, batch_size);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn a_concurrent_swapper_never_causes_a_deletion_outside_the_plan(
        n in 50usize..200,
        root in any::<bool>(),
        batch_size in prop_oneof![Just(16usize), Just(256)],
    ) {
        run_case(n, &[], Some(root), batch_size);
    }
}
