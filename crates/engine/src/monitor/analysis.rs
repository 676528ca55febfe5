//! The figures that need the process table: reclaimable bytes and items at the current threshold
//! (a dry `reclaim::plan`) and orphan bytes (owner pid in the name dead or reused, by the same
//! owner rule the plan applies: [`crate::owner::item_verdict`]), per producer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::inventory::Inventory;
use crate::owner;
use crate::process::{ProcessProbe, SystemProbe};
use crate::reclaim::{self, Policy};

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
}

impl Analysis {
    /// Computes the figures for `inv`: a dry plan naming every producer that has items (so manual
    /// rules count too; `never` and `system` rules plan nothing), and the owner verdict of every
    /// item of a known rule. Blocking (reads the process table).
    pub fn compute(
        inv: &Inventory,
        catalogue: &Catalogue,
        threshold: Duration,
        protected: Vec<PathBuf>,
        now: SystemTime,
    ) -> Analysis {
        let probe = SystemProbe::new();
        Analysis::compute_with(inv, catalogue, threshold, protected, &probe, now)
    }

    /// [`Analysis::compute`] against `probe` (refreshed once, by the plan, before any lookup).
    pub fn compute_with(
        inv: &Inventory,
        catalogue: &Catalogue,
        threshold: Duration,
        protected: Vec<PathBuf>,
        probe: &dyn ProcessProbe,
        now: SystemTime,
    ) -> Analysis {
        let mut out = Analysis::default();
        let mut ids: Vec<String> = inv
            .items()
            .filter_map(|(_, item)| item.producer.clone())
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
        let plan = reclaim::plan(inv, catalogue, &policy, probe, now);
        for (_, item) in inv.items() {
            let Some(id) = item.producer.as_deref() else {
                continue;
            };
            let fig = out.producers.entry(id.to_owned()).or_default();
            let orphan = catalogue
                .rule(id)
                .is_some_and(|rule| owner::item_verdict(probe, rule, item).is_orphan());
            if orphan {
                fig.orphan_bytes += item.measure.allocated_bytes;
            }
        }
        for p in &plan.items {
            let fig = out.producers.entry(p.producer.clone()).or_default();
            fig.reclaimable_bytes += p.allocated_bytes;
            fig.reclaimable_items += 1;
        }
        out
    }
}
