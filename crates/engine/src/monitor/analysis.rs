//! The figures that need the process table: reclaimable bytes and items at the current threshold
//! (a dry `reclaim::plan`) and orphan bytes (owner pid in the name dead), per producer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::inventory::Inventory;
use crate::process::{ProcessProbe, SystemProbe};
use crate::reclaim::{self, Policy};

/// Reclaim figures of one producer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerFigures {
    /// Allocated bytes of items whose owner pid (in the name) is dead or reused.
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
    /// rules count too; `never` and `system` rules plan nothing), and the owner-pid check of every
    /// item whose name carries a pid. Blocking (reads the process table).
    pub fn compute(
        inv: &Inventory,
        catalogue: &Catalogue,
        threshold: Duration,
        protected: Vec<PathBuf>,
        now: SystemTime,
    ) -> Analysis {
        let probe = SystemProbe::snapshot();
        let mut out = Analysis::default();
        let mut ids: Vec<String> = Vec::new();
        for (_, item) in inv.items() {
            let Some(id) = item.producer.as_deref() else {
                continue;
            };
            let fig = out.producers.entry(id.to_owned()).or_default();
            if owner_dead(&probe, item) {
                fig.orphan_bytes += item.measure.allocated_bytes;
            }
            ids.push(id.to_owned());
        }
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
        let plan = reclaim::plan(inv, catalogue, &policy, &probe, now);
        for p in &plan.items {
            let fig = out.producers.entry(p.producer.clone()).or_default();
            fig.reclaimable_bytes += p.allocated_bytes;
            fig.reclaimable_items += 1;
        }
        out
    }
}

/// True when the item's name carries an owner pid and that process is gone, or runs but started
/// after the item was born (the pid was reused).
pub fn owner_dead(probe: &dyn ProcessProbe, item: &crate::inventory::Item) -> bool {
    let Some(pid) = item.captures.pid else {
        return false;
    };
    match probe.process(pid) {
        None => true,
        Some(p) => item.measure.birth_time.is_some_and(|b| p.start_time > b),
    }
}
