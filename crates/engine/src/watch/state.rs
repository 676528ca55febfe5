//! The incremental inventory of one root: items keyed by their path relative to the root, totals
//! per root and per producer kept by deltas, and the largest items per producer kept as they change.
//!
//! Per item the state holds the relative path (one allocation), the producer id as a shared
//! `Arc<str>`, the captures only when the rule captured something, and the sizes: an update costs
//! O(log items), not a walk of every item. The only O(items) work is [`RootState::load_scan`] (a
//! rescan), [`RootState::to_root_scan`] (the periodic reclaimable figures) and, rarely,
//! [`RootState::refresh_tops`] after one of a producer's largest items shrank or went away.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::inventory::{Captures, Item, Measure, RootScan, ScanIssue};
use crate::roots::Root;
use crate::snapshot::WatchMode;

use super::map::ancestors_of;

mod export;
mod groups;

use groups::{shift, sub};
pub use groups::{DirEntryStat, Entry, Group, TopList, Totals, TOP_ITEMS, TOP_UNATTRIBUTED};

/// One root as the watcher keeps it.
#[derive(Debug, Clone)]
pub struct RootState {
    /// The root.
    pub root: Root,
    /// Items (claimed items and unattributed top-level entries) by path relative to the root.
    entries: BTreeMap<Box<Path>, Entry>,
    /// Per producer id: totals and largest items, kept by deltas.
    producers: BTreeMap<Arc<str>, Group>,
    /// The unattributed top-level entries: totals and largest ones.
    unattributed: Group,
    /// Totals of the root: the root dir's own entry plus every item, updated by deltas.
    pub total: Measure,
    /// The own entries of the root dir (key `""`) and of the dirs between it and claimed items.
    pub dirs: HashMap<Box<Path>, DirEntryStat>,
    /// What the last scan could not read.
    pub issues: Vec<ScanIssue>,
    /// How the root is watched.
    pub mode: WatchMode,
    /// Why it is not watched by events, if so.
    pub watch_error: Option<String>,
    /// True while the root dir does not exist (removed; waiting for it to come back).
    pub gone: bool,
    /// When the last full scan of this root finished.
    pub scanned_at: Option<SystemTime>,
    /// Full scans of this root so far, the first one included.
    pub scans: u64,
}

impl RootState {
    /// An empty state for `root`, before its first scan.
    pub fn new(root: Root) -> RootState {
        RootState {
            root,
            entries: BTreeMap::new(),
            producers: BTreeMap::new(),
            unattributed: Group::default(),
            total: Measure::default(),
            dirs: HashMap::new(),
            issues: Vec::new(),
            mode: WatchMode::Events,
            watch_error: None,
            gone: false,
            scanned_at: None,
            scans: 0,
        }
    }

    /// Number of items (claimed + unattributed).
    pub fn item_count(&self) -> usize {
        self.entries.len()
    }

    /// Items by path relative to the root, in path order.
    pub fn entries(&self) -> impl Iterator<Item = (&Path, &Entry)> {
        self.entries.iter().map(|(p, e)| (&**p, e))
    }

    /// The item at `rel` (relative to the root).
    pub fn entry(&self, rel: &Path) -> Option<&Entry> {
        self.entries.get(rel)
    }

    /// Per producer id: totals and largest items (run [`RootState::refresh_tops`] first for exact
    /// lists).
    pub fn producers(&self) -> &BTreeMap<Arc<str>, Group> {
        &self.producers
    }

    /// The unattributed entries: totals and largest ones.
    pub fn unattributed(&self) -> &Group {
        &self.unattributed
    }

    /// The item at `rel` as an [`Item`] (absolute path).
    pub fn item_at(&self, rel: &Path, e: &Entry) -> Item {
        Item {
            path: self.root.canonical.join(rel),
            producer: e.producer.as_deref().map(str::to_owned),
            captures: e.captures.as_deref().cloned().unwrap_or_default(),
            measure: e.measure,
            is_symlink: e.is_symlink,
            dev: e.dev,
            ino: e.ino,
        }
    }

    /// The compact form of `item`, sharing the producer id with the items already held.
    fn entry_of(&mut self, item: Item) -> Entry {
        let producer = item
            .producer
            .map(|id| match self.producers.get_key_value(id.as_str()) {
                Some((k, _)) => k.clone(),
                None => Arc::from(id),
            });
        Entry {
            producer,
            captures: (item.captures != Captures::default()).then(|| Box::new(item.captures)),
            measure: item.measure,
            is_symlink: item.is_symlink,
            dev: item.dev,
            ino: item.ino,
        }
    }

    /// The path of `path` relative to the root (either spelling); `None` outside it.
    fn rel_of(&self, path: &Path) -> Option<Box<Path>> {
        self.root.relative(path).map(Box::from)
    }

    /// Replaces the items and totals with a fresh scan, and records the own entries of the root dir
    /// and of every dir between it and a claimed item (one `lstat` per distinct dir).
    pub fn load_scan(&mut self, scan: RootScan, now: SystemTime) {
        self.entries.clear();
        self.producers.clear();
        self.unattributed = Group::default();
        for item in scan.items {
            let Some(rel) = self.rel_of(&item.path) else {
                tracing::warn!(path = %item.path.display(), "scanned item outside its root; left out");
                continue;
            };
            let e = self.entry_of(item);
            let g = match &e.producer {
                Some(id) => self.producers.entry(id.clone()).or_default(),
                None => &mut self.unattributed,
            };
            g.totals.items += 1;
            g.totals.measure.add(&e.measure);
            self.entries.insert(rel, e);
        }
        for g in self.producers.values_mut() {
            g.top.stale = true;
        }
        self.unattributed.top.stale = true;
        self.refresh_tops();
        self.total = scan.total;
        self.issues = scan.issues;
        self.dirs.clear();
        self.dirs.insert(
            Box::from(Path::new("")),
            DirEntryStat::of(&self.root.canonical).unwrap_or_default(),
        );
        let mut wanted: Vec<PathBuf> = Vec::new();
        for (rel, e) in &self.entries {
            if e.producer.is_some() {
                wanted.extend(ancestors_of(rel).into_iter().skip(1));
            }
        }
        wanted.sort();
        wanted.dedup();
        for rel in wanted {
            let stat = DirEntryStat::of(&self.root.canonical.join(&rel)).unwrap_or_default();
            self.dirs.insert(rel.into_boxed_path(), stat);
        }
        self.scanned_at = Some(now);
        self.scans += 1;
        self.gone = !self.root.canonical.is_dir();
    }

    /// Recomputes the largest-item lists marked stale (one pass over the items, only when some
    /// list is stale).
    pub fn refresh_tops(&mut self) {
        let any = self.unattributed.top.stale || self.producers.values().any(|g| g.top.stale);
        if !any {
            return;
        }
        let mut fresh: HashMap<Option<&str>, Vec<(u64, Box<Path>)>> = HashMap::new();
        for (rel, e) in &self.entries {
            let stale = match &e.producer {
                Some(id) => self.producers.get(id).is_some_and(|g| g.top.stale),
                None => self.unattributed.top.stale,
            };
            if !stale {
                continue;
            }
            let cap = if e.producer.is_some() {
                TOP_ITEMS
            } else {
                TOP_UNATTRIBUTED
            };
            let list = fresh.entry(e.producer.as_deref()).or_default();
            list.push((e.measure.allocated_bytes, rel.clone()));
            // Keep the buffer small: cut back to the largest `cap` now and then.
            if list.len() >= cap * 64 {
                list.select_nth_unstable_by(cap - 1, TopList::rank);
                list.truncate(cap);
            }
        }
        let mut fresh: HashMap<Option<String>, Vec<(u64, Box<Path>)>> = fresh
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_by(TopList::rank);
                v.truncate(if k.is_some() {
                    TOP_ITEMS
                } else {
                    TOP_UNATTRIBUTED
                });
                (k.map(str::to_owned), v)
            })
            .collect();
        for (id, g) in self.producers.iter_mut().filter(|(_, g)| g.top.stale) {
            g.top = TopList {
                items: fresh.remove(&Some(id.to_string())).unwrap_or_default(),
                stale: false,
            };
        }
        if self.unattributed.top.stale {
            self.unattributed.top = TopList {
                items: fresh.remove(&None).unwrap_or_default(),
                stale: false,
            };
        }
    }

    /// Sets the item at `rel` to `new` (`None`: removes it), keeping the totals of the root, of
    /// the producers and the largest-item lists. Returns the entry it replaced.
    fn set(&mut self, rel: &Path, new: Option<Entry>) -> Option<Entry> {
        let old = self.entries.remove(rel);
        let new_key = new.as_ref().map(|e| e.producer.clone());
        if let Some(old) = &old {
            sub(&mut self.total, &old.measure);
            let same_group = new_key.as_ref() == Some(&old.producer);
            let new_bytes = new
                .as_ref()
                .filter(|_| same_group)
                .map(|e| e.measure.allocated_bytes);
            let (g, cap) = self.group_mut(&old.producer);
            if let Some(g) = g {
                g.totals.items = g.totals.items.saturating_sub(1);
                sub(&mut g.totals.measure, &old.measure);
                g.top.update(rel, new_bytes, cap);
            }
            if let Some(id) = &old.producer {
                if self.producers.get(id).is_some_and(|g| g.totals.items == 0) {
                    self.producers.remove(id);
                }
            }
        }
        if let Some(new) = new {
            self.total.add(&new.measure);
            let same_group = old.as_ref().is_some_and(|o| o.producer == new.producer);
            let g = match &new.producer {
                Some(id) => self.producers.entry(id.clone()).or_default(),
                None => &mut self.unattributed,
            };
            g.totals.items += 1;
            g.totals.measure.add(&new.measure);
            if !same_group {
                let cap = if new.producer.is_some() {
                    TOP_ITEMS
                } else {
                    TOP_UNATTRIBUTED
                };
                g.top.update(rel, Some(new.measure.allocated_bytes), cap);
            }
            self.entries.insert(Box::from(rel), new);
        }
        old
    }

    fn group_mut(&mut self, producer: &Option<Arc<str>>) -> (Option<&mut Group>, usize) {
        match producer {
            Some(id) => (self.producers.get_mut(id), TOP_ITEMS),
            None => (Some(&mut self.unattributed), TOP_UNATTRIBUTED),
        }
    }

    /// Sets the item at `path` (absolute, either spelling of the root) to `item` (`None`: it is
    /// gone, and so is every item below it), adjusting the totals by the difference. Returns the
    /// change in allocated bytes.
    pub fn apply(&mut self, path: &Path, item: Option<Item>) -> i64 {
        let before = self.total.allocated_bytes as i64;
        let Some(rel) = self.rel_of(path) else {
            tracing::warn!(path = %path.display(), "item outside its root; left out");
            return 0;
        };
        match item {
            None => {
                let below: Vec<Box<Path>> = self
                    .entries
                    .range::<Path, _>((Bound::Included(&*rel), Bound::Unbounded))
                    .take_while(|(p, _)| p.starts_with(&rel))
                    .map(|(p, _)| p.clone())
                    .collect();
                for p in below {
                    self.set(&p, None);
                }
            }
            Some(item) => {
                let e = self.entry_of(item);
                self.set(&rel, Some(e));
            }
        }
        self.total.allocated_bytes as i64 - before
    }

    /// Re-reads the own entries of the dirs between the root and the item at `rel` (the root dir
    /// included) and moves their size changes into the totals and into the unattributed top-level
    /// item that holds them. Only dirs recorded by the last scan or seen before are compared; new
    /// ones are recorded.
    pub fn restat_ancestors(&mut self, rel: &Path) {
        for dir in ancestors_of(rel) {
            let now = DirEntryStat::of(&self.root.canonical.join(&dir));
            let old = self.dirs.get(dir.as_path()).copied();
            let (now, old) = match (now, old) {
                (Some(now), Some(old)) => (now, old),
                (Some(now), None) => {
                    // New since the last scan: its own entry was counted when the item holding
                    // it was measured.
                    self.dirs.insert(dir.into_boxed_path(), now);
                    continue;
                }
                (None, _) => {
                    self.dirs.remove(dir.as_path());
                    continue;
                }
            };
            if now == old {
                continue;
            }
            let d_alloc = now.allocated_bytes as i64 - old.allocated_bytes as i64;
            let d_apparent = now.apparent_bytes as i64 - old.apparent_bytes as i64;
            shift(&mut self.total, d_alloc, d_apparent);
            if let Some(first) = dir.components().next() {
                let top = Path::new(first.as_os_str());
                if let Some(mut e) = self.entries.get(top).cloned() {
                    if e.producer.is_none() {
                        // `set` moves the item's old sizes out of the root total and its new
                        // ones in; the shift above already counted the change there.
                        shift(&mut self.total, -d_alloc, -d_apparent);
                        shift(&mut e.measure, d_alloc, d_apparent);
                        self.set(top, Some(e));
                    }
                }
            }
            self.dirs.insert(dir.into_boxed_path(), now);
        }
    }

    /// Forgets every item and total (the root was removed).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.producers.clear();
        self.unattributed = Group::default();
        self.total = Measure::default();
        self.dirs.clear();
        self.issues.clear();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
