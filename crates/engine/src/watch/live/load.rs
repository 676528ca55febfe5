//! Loading a full scan into a root's state, item by item (so a streaming scan never has to hold its
//! item list), and recomputing the largest-item lists.

use std::cmp::Ordering;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use crate::inventory::{Item, Measure, RootScan, ScanIssue};

use super::groups::{DirEntryStat, TopList, TOP_ITEMS, TOP_UNATTRIBUTED};
use super::pages::Slots;
use super::store::{Names, ROOT_DIR};
use super::RootState;

impl RootState {
    /// Forgets the items before a full load; [`RootState::load_item`] then adds each scanned item
    /// and [`RootState::finish_load`] sets the totals.
    pub fn begin_load(&mut self) {
        let issues = std::mem::take(&mut self.issues);
        let unwatched = std::mem::take(&mut self.unwatched);
        self.clear();
        self.issues = issues;
        self.unwatched = unwatched;
        self.root_dev = std::fs::symlink_metadata(&self.root.canonical).map_or(0, |m| m.dev());
    }

    /// Adds one scanned item (a claimed item or an unattributed top-level entry). Totals per
    /// group follow; the largest-item lists are recomputed by [`RootState::finish_load`].
    pub fn load_item(&mut self, item: &Item) {
        let Some(rel) = self.root.relative(&item.path) else {
            tracing::warn!(path = %item.path.display(), "scanned item outside its root; left out");
            return;
        };
        let Some((dir, name)) = self.names.make_split(rel) else {
            return;
        };
        if self.names.find_item(&self.slots, dir, name).is_some() {
            tracing::warn!(path = %item.path.display(), "item scanned twice; kept once");
            return;
        }
        let rec = self.names.arena.push_item(dir, name);
        let (g, _) = self.group_or_insert(item.producer.as_deref());
        g.totals.items += 1;
        g.totals.measure.add(&item.measure);
        self.insert_slot(item, rec);
    }

    /// Ends a load: the root's totals and what the scan could not read, the own entries of the
    /// root dir and of every dir between it and an item (one `lstat` per distinct dir), the
    /// largest-item lists; frees spare capacity.
    pub fn finish_load(&mut self, total: Measure, issues: Vec<ScanIssue>, now: SystemTime) {
        for g in self.producers.values_mut() {
            g.top.stale = true;
        }
        self.unattributed.top.stale = true;
        self.refresh_tops();
        self.total = total;
        self.issues = issues;
        self.intern_bare_top_dirs();
        for id in 0..self.names.dirs.len() {
            let rel = self.names.dir_path(id as u32);
            let stat = DirEntryStat::of(&self.root.canonical.join(&rel));
            self.names.dirs[id].stat = if id as u32 == ROOT_DIR {
                stat
            } else {
                Some(stat.unwrap_or_default())
            };
        }
        self.record_dir_mtimes();
        self.names.shrink(&self.slots);
        self.extra.shrink_to_fit();
        self.pids.shrink_to_fit();
        self.scanned_at = Some(now);
        self.scans += 1;
    }

    /// Replaces the items and totals with a fresh scan (see [`RootState::begin_load`]); each item's
    /// path is freed as soon as it is loaded.
    pub fn load_scan(&mut self, scan: RootScan, now: SystemTime) {
        self.begin_load();
        let mut items = scan.items;
        items.reverse();
        while let Some(item) = items.pop() {
            self.load_item(&item);
            if items.len() < items.capacity() / 4 {
                items.shrink_to_fit();
            }
        }
        self.finish_load(scan.total, scan.issues, now);
    }

    /// Recomputes the largest-item lists marked stale (one pass over the items, only when some
    /// list is stale; a path is rebuilt only for an item that ties with or beats the last listed).
    pub fn refresh_tops(&mut self) {
        let any = self.unattributed.top.stale || self.producers.values().any(|g| g.top.stale);
        if !any {
            return;
        }
        // Per stale group (by producer slot index; `None`: unattributed): (bytes, slot id).
        let mut fresh: std::collections::HashMap<Option<Arc<str>>, Vec<(u64, u32)>> =
            Default::default();
        for id in self.live() {
            let producer = self.producer_of(id);
            let stale = match &producer {
                Some(p) => self.producers.get(p).is_some_and(|g| g.top.stale),
                None => self.unattributed.top.stale,
            };
            if !stale {
                continue;
            }
            let cap = if producer.is_some() {
                TOP_ITEMS
            } else {
                TOP_UNATTRIBUTED
            };
            let bytes = self.allocated_of(id);
            let list = fresh.entry(producer).or_default();
            let cand = (bytes, id);
            let fits = list.len() < cap
                || list
                    .last()
                    .is_some_and(|last| rank(&self.names, &self.slots, &cand, last).is_lt());
            if fits {
                let at = list.partition_point(|x| rank(&self.names, &self.slots, x, &cand).is_lt());
                list.insert(at, cand);
                list.truncate(cap);
            }
        }
        let mut fresh: std::collections::HashMap<Option<Arc<str>>, TopList> = fresh
            .into_iter()
            .map(|(k, v)| {
                let items = v
                    .into_iter()
                    .map(|(b, id)| (b, self.rel_path_of(id).into_boxed_path()))
                    .collect();
                (
                    k,
                    TopList {
                        items,
                        stale: false,
                    },
                )
            })
            .collect();
        for (id, g) in self.producers.iter_mut().filter(|(_, g)| g.top.stale) {
            g.top = fresh.remove(&Some(id.clone())).unwrap_or_default();
        }
        if self.unattributed.top.stale {
            self.unattributed.top = fresh.remove(&None).unwrap_or_default();
        }
    }
}

/// Largest first, ties by path (compared by name within one dir, else by the rebuilt paths).
fn rank(names: &Names, slots: &Slots, a: &(u64, u32), b: &(u64, u32)) -> Ordering {
    b.0.cmp(&a.0).then_with(|| {
        let (ra, rb) = (slots[a.1 as usize].rec, slots[b.1 as usize].rec);
        let ((da, na), (db, nb)) = (names.arena.item(ra), names.arena.item(rb));
        if da == db {
            names.arena.get(na).cmp(&names.arena.get(nb))
        } else {
            Path::cmp(&names.item_path(ra), &names.item_path(rb))
        }
    })
}
