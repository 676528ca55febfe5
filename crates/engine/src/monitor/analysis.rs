//! The figures that need the process table: reclaimable bytes and items at the current threshold
//! (a dry `reclaim::plan`) and orphan bytes (owner pid in the name dead or reused, by the same
//! owner rule the plan applies: [`crate::owner::item_verdict`]), per producer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::inventory::{Inventory, RootScan};
use crate::owner;
use crate::process::{ProcessProbe, SystemProbe};
use crate::reclaim::{self, KeepReason, Policy};
use crate::watch::state::RootState;

/// Reclaim figures of one producer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerFigures {
    /// Allocated bytes of items whose owner pid (in the name, for a rule with `owner.pid_in_name`)
    /// is dead or reused ([`crate::owner::OwnerVerdict::is_orphan`], the plan's owner rule with its
    /// start-time slack). Items whose name yields no pid are never counted.
    pub orphan_bytes: u64,
    /// Allocated bytes a reclaim at the threshold would delete.
    pub reclaimable_bytes: u64,
    /// Items a reclaim at the threshold would delete.
    pub reclaimable_items: u64,
}

/// Reclaim figures of every producer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// By producer id.
    pub producers: BTreeMap<String, ProducerFigures>,
    /// The earliest time an item kept only for being too young reaches its needed age (the
    /// figures are stale from then on, with no file event); `None` when no item waits for age.
    pub next_crossing: Option<SystemTime>,
}

/// Claimed items handed to one dry plan: bounds the memory of a refresh (the items of a chunk and
/// their plan) whatever the size of the inventory.
const CHUNK: usize = 8192;

/// A probe refreshed once for a whole refresh: the plan of each chunk would refresh it again.
struct Refreshed<'a>(&'a dyn ProcessProbe);

impl ProcessProbe for Refreshed<'_> {
    fn process(&self, pid: u32) -> Option<crate::process::ProcessInfo> {
        self.0.process(pid)
    }
    fn is_running(&self, name: &str) -> bool {
        self.0.is_running(name)
    }
    fn open_file_under(&self, dir: &std::path::Path) -> Option<crate::process::OpenFile> {
        self.0.open_file_under(dir)
    }
    fn refresh(&self) {}
    fn refresh_open_files(&self) {}
}

impl Analysis {
    /// Computes the figures for the claimed items of `roots`: a dry plan naming every producer
    /// that has items (so manual rules count too; `never` and `system` rules plan nothing), and the
    /// owner verdict of every item of a known rule. The items are handed out and planned in chunks
    /// of [`CHUNK`], so the memory used does not grow with the inventory (the time does: one pass
    /// over the items). Blocking (reads the process table once).
    pub fn compute(
        roots: &[RootState],
        catalogue: &Catalogue,
        threshold: Duration,
        protected: Vec<PathBuf>,
        now: SystemTime,
    ) -> Analysis {
        let probe = SystemProbe::new();
        Analysis::compute_with(roots, catalogue, threshold, protected, &probe, now)
    }

    /// [`Analysis::compute`] against `probe` (refreshed once, before any lookup).
    pub fn compute_with(
        roots: &[RootState],
        catalogue: &Catalogue,
        threshold: Duration,
        protected: Vec<PathBuf>,
        probe: &dyn ProcessProbe,
        now: SystemTime,
    ) -> Analysis {
        let mut out = Analysis::default();
        let mut ids: Vec<String> = roots
            .iter()
            .flat_map(|st| st.producers().keys().map(|id| id.to_string()))
            .collect();
        ids.sort();
        ids.dedup();
        if ids.is_empty() {
            return out;
        }
        let policy = Policy {
            older_than: threshold,
            producers: ids,
            protected,
        };
        probe.refresh();
        let probe = Refreshed(probe);
        // Every root is named in each chunk's inventory, so an item holding another root is kept.
        let empty: Vec<RootScan> = roots
            .iter()
            .map(|st| RootScan {
                root: st.root.clone(),
                total: st.total,
                items: Vec::new(),
                issues: Vec::new(),
                vanished: 0,
                non_utf8_names: 0,
                other_device: 0,
            })
            .collect();
        for (i, st) in roots.iter().enumerate() {
            st.for_each_claimed(CHUNK, |items| {
                let mut inv = Inventory {
                    roots: empty.clone(),
                    scanned_at: now,
                };
                inv.roots[i].items = items;
                out.add(&inv, catalogue, &policy, &probe, now);
            });
        }
        out
    }

    /// Adds the figures of the items of `inv`.
    fn add(
        &mut self,
        inv: &Inventory,
        catalogue: &Catalogue,
        policy: &Policy,
        probe: &dyn ProcessProbe,
        now: SystemTime,
    ) {
        let plan = reclaim::plan(inv, catalogue, policy, probe, now);
        for (_, item) in inv.items() {
            let Some(id) = item.producer.as_deref() else {
                continue;
            };
            let fig = self.producers.entry(id.to_owned()).or_default();
            let orphan = catalogue
                .rule(id)
                .is_some_and(|rule| owner::item_verdict(probe, rule, item).is_orphan());
            if orphan {
                fig.orphan_bytes += item.measure.allocated_bytes;
            }
        }
        let crossing = plan
            .kept
            .iter()
            .filter_map(|k| match k.reason {
                KeepReason::TooYoung {
                    age_secs,
                    needed_secs,
                } => Some(now + Duration::from_secs(needed_secs.saturating_sub(age_secs))),
                _ => None,
            })
            .min();
        self.next_crossing = match (self.next_crossing, crossing) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for p in &plan.items {
            let fig = self.producers.entry(p.producer.clone()).or_default();
            fig.reclaimable_bytes += p.allocated_bytes;
            fig.reclaimable_items += 1;
        }
    }
}

/// The owner and app guards (the process table) are re-read at least this often, so a process that
/// starts or exits changes the figures with no file event.
pub(super) const GUARD_INTERVAL: Duration = Duration::from_secs(10);
/// Whatever the reason, the figures are recomputed at most once per this many times the cost of
/// the last computation (at most 1/20 of a core on a large inventory), and never twice in a second.
const COST_FACTOR: u32 = 20;
const MIN_GAP: Duration = Duration::from_secs(1);

/// Whether the monitor's tick recomputes the figures: never before, or (after at least
/// `COST_FACTOR` × `cost` and a second since the last one, `since_last`) when the inventory
/// changed (`stale`), an item crossed the threshold by the clock (`now` past
/// [`Analysis::next_crossing`]), or [`GUARD_INTERVAL`] passed.
pub(super) fn refresh_due(
    analysis: &Analysis,
    stale: bool,
    since_last: Option<Duration>,
    cost: Duration,
    now: SystemTime,
) -> bool {
    let Some(since) = since_last else {
        return true;
    };
    if since < (cost * COST_FACTOR).max(MIN_GAP) {
        return false;
    }
    stale || since >= GUARD_INTERVAL || analysis.next_crossing.is_some_and(|t| now >= t)
}
