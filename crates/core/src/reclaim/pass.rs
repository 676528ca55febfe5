//! [`PlanPass`]: the decisions of [`super::plan`] over items handed in chunks, in any order, with
//! one set of guards for the whole pass: the mount table read once, the scan's unreadable paths
//! given up front, and the newest-clone guard applied over every clone of an app at once (the
//! items of `code-sign-clones` roots, a few dozen app copies at most, are held back and decided
//! at [`PlanPass::finish`]). The live monitor plans its compact inventory this way, chunk by
//! chunk, so it never holds every item as an [`Item`].

use std::path::PathBuf;
use std::time::SystemTime;

use super::{KeptItem, NewestCloneGuard, PlannedItem, Planner, Policy};
use crate::catalogue::Catalogue;
use crate::inventory::Item;
use crate::process::ProcessProbe;
use crate::roots::{Root, RootKind};

/// One decision of a pass: the item planned, or kept with why.
pub type Decision = Result<PlannedItem, KeptItem>;

/// A plan's decisions made one item at a time over chunks of an inventory (see the module docs).
pub struct PlanPass<'a> {
    planner: Planner<'a>,
    probe: &'a dyn ProcessProbe,
    /// Claimed items of `code-sign-clones` roots, decided at [`PlanPass::finish`].
    clones: Vec<(Root, Item)>,
}

impl<'a> PlanPass<'a> {
    /// A pass over items of `roots` (every root of the inventory: no item may be or hold one)
    /// under `policy` at `now`. Calls `probe.refresh()` once and reads the mount table once;
    /// `unreadable` are the paths the scans could not read (an item at or above one is kept).
    pub fn new<'r>(
        roots: impl IntoIterator<Item = &'r Root>,
        catalogue: &'a Catalogue,
        policy: &Policy,
        probe: &'a dyn ProcessProbe,
        now: SystemTime,
        unreadable: impl IntoIterator<Item = PathBuf>,
    ) -> PlanPass<'a> {
        let mut planner = Planner::new(roots, catalogue, policy, probe, now);
        planner.guards.add_unreadable(unreadable);
        PlanPass {
            planner,
            probe,
            clones: Vec::new(),
        }
    }

    /// This pass checking that each item it would plan can be deleted whole by the effective user
    /// ([`Planner::checking_access`]): for a plan shown or executed, not for periodic figures.
    pub fn checking_access(mut self) -> PlanPass<'a> {
        self.planner = self.planner.checking_access();
        self
    }

    /// The planner (its policy with the full protected list, its roots).
    pub fn planner(&self) -> &Planner<'a> {
        &self.planner
    }

    /// The decision on `item` of `root` as [`Planner::decide`] makes it, except that a claimed
    /// item of a `code-sign-clones` root is held back (`None` now) and decided by
    /// [`PlanPass::finish`] once every clone is known. Does not deduplicate.
    pub fn decide(&mut self, root: &Root, item: &Item) -> Option<Decision> {
        if root.kind == RootKind::CodeSignClones && item.producer.is_some() {
            self.clones.push((root.clone(), item.clone()));
            return None;
        }
        self.planner.decide(root, item)
    }

    /// Decides the held-back clones with the newest-clone guard built over all of them, calling
    /// `f` with each decision (and the item it is about), and returns the planner.
    pub fn finish(mut self, mut f: impl FnMut(&Item, Decision)) -> Planner<'a> {
        let clones = std::mem::take(&mut self.clones);
        if !clones.is_empty() {
            let newest = NewestCloneGuard::of_items(clones.iter().map(|(r, i)| (r, i)), self.probe);
            self.planner.guards.set_newest(newest);
            for (root, item) in &clones {
                if let Some(d) = self.planner.decide(root, item) {
                    f(item, d);
                }
            }
        }
        self.planner
    }
}
