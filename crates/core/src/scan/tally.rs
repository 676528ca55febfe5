//! [`Tally`]: what a report of a scan needs, summed while the items stream past: per-producer
//! totals and the largest unattributed entries (a bounded heap), never the item list.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::PathBuf;

use crate::inventory::{Item, Measure, ProducerTotals};
use crate::roots::{Root, RootKind};

/// One of the largest unattributed top-level entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unattributed {
    /// The entry's absolute path.
    pub path: PathBuf,
    /// The kind of the root it lies in.
    pub root_kind: RootKind,
    /// Its sizes (only what no rule claims inside it).
    pub measure: Measure,
}

impl Unattributed {
    /// Report order: largest allocated bytes first, ties by path.
    fn report_order(&self, other: &Unattributed) -> Ordering {
        other
            .measure
            .allocated_bytes
            .cmp(&self.measure.allocated_bytes)
            .then_with(|| self.path.cmp(&other.path))
    }
}

/// Heap entry: the greatest is the one to drop first (last in report order).
#[derive(Debug, PartialEq, Eq)]
struct Worst(Unattributed);

impl Ord for Worst {
    fn cmp(&self, other: &Worst) -> Ordering {
        self.0.report_order(&other.0)
    }
}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Worst) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Per-producer totals and the `top` largest unattributed entries of the items added, in memory
/// bounded by the number of producers plus `top` (not by the number of items).
#[derive(Debug)]
pub struct Tally {
    /// Per producer, in the order first seen (a few dozen at most: searched in place, the last
    /// one found first, as items of one producer tend to come in runs).
    producers: Vec<ProducerTotals>,
    last: usize,
    top: usize,
    largest: BinaryHeap<Worst>,
}

impl Tally {
    /// An empty tally keeping the `top` largest unattributed entries.
    pub fn new(top: usize) -> Tally {
        Tally {
            producers: Vec::new(),
            last: 0,
            top,
            largest: BinaryHeap::with_capacity(top.saturating_add(1).min(1 << 16)),
        }
    }

    /// Adds one item of `root`: to its producer's totals, or (unattributed) to the largest
    /// entries when it is among the `top` largest so far. Copies the path only then. An
    /// unattributed item that is another root nested in `root` ([`Root::is_nested_root`]) is left
    /// out: that root's own items report its contents.
    pub fn add(&mut self, root: &Root, item: &Item) {
        match item.producer.as_deref() {
            Some(id) => {
                let at = match self.producers.get(self.last) {
                    Some(t) if t.id == id => Some(self.last),
                    _ => self.producers.iter().position(|t| t.id == id),
                };
                match at {
                    Some(at) => {
                        let t = &mut self.producers[at];
                        t.items += 1;
                        t.measure.add(&item.measure);
                        self.last = at;
                    }
                    None => {
                        self.last = self.producers.len();
                        self.producers.push(ProducerTotals {
                            id: id.to_owned(),
                            items: 1,
                            measure: item.measure,
                        });
                    }
                }
            }
            // A top-level entry that is another root: that root reports what is in it.
            None if root.is_nested_root(&item.path) => {}
            None => self.add_unattributed(root.kind, item),
        }
    }

    fn add_unattributed(&mut self, root_kind: RootKind, item: &Item) {
        if self.top == 0 {
            return;
        }
        if self.largest.len() >= self.top {
            let beats_worst = self.largest.peek().is_some_and(|w| {
                let worst = &w.0.measure.allocated_bytes;
                item.measure.allocated_bytes > *worst
                    || (item.measure.allocated_bytes == *worst && item.path < w.0.path)
            });
            if !beats_worst {
                return;
            }
            self.largest.pop();
        }
        self.largest.push(Worst(Unattributed {
            path: item.path.clone(),
            root_kind,
            measure: item.measure,
        }));
    }

    /// Totals per producer id, largest allocated first (ties by id), as
    /// [`crate::inventory::Inventory::producers`] orders them.
    pub fn producers(&self) -> Vec<ProducerTotals> {
        let mut v: Vec<ProducerTotals> = self.producers.clone();
        v.sort_by(|a, b| {
            b.measure
                .allocated_bytes
                .cmp(&a.measure.allocated_bytes)
                .then_with(|| a.id.cmp(&b.id))
        });
        v
    }

    /// The largest unattributed entries (at most `top`), largest allocated first, ties by path.
    pub fn unattributed(&self) -> Vec<Unattributed> {
        let mut v: Vec<Unattributed> = self.largest.iter().map(|w| w.0.clone()).collect();
        v.sort_by(Unattributed::report_order);
        v
    }
}
