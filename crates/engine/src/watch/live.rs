//! The incremental inventory of one root: items keyed by their path relative to the root, totals
//! per root and per producer kept by deltas, and the largest items per producer kept as they change.
//!
//! Items are held compactly ([`store`], [`slot`], [`pages`]): names interned once in an arena (a
//! name's common prefix such as `gpuarchiver-` as a 1-byte id), the dirs between the root and the
//! items as ids (parent id + name), and per item one 36-byte slot of integers (sizes, counts, times
//! as nanoseconds, inode, producer and bundle as small indices) in pages of 4096 slots, found
//! through a hash table keyed by (parent dir id, name). What does not fit a slot (an owner pid, a
//! size past its field, another device...) goes to side tables, exactly. No item holds a
//! `PathBuf`; a path is rebuilt from the ids when an item is handed out. About 53 bytes per item (a
//! `gpuarchiver-XXXXXX` dir: 36 of slot, 9 of arena record with its dir id, about 7.5 of hash
//! table at 700k items) instead of about 400.
//!
//! An update costs O(1) expected (a hash lookup and a slot write) plus O(depth) for its dirs. The
//! only O(items) work is a (re)load ([`RootState::begin_load`] .. [`RootState::finish_load`]), the
//! export of the claimed items for a reclaim plan or the periodic figures
//! ([`RootState::for_each_claimed`], in chunks, never the whole list at once), the removal of a dir
//! that holds items, and, rarely, [`RootState::refresh_tops`] after one of a producer's largest
//! items shrank or went away.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::dto::WatchMode;
use crate::inventory::{Item, Measure, ScanIssue};
use crate::roots::Root;

use super::map::ancestors_of;

mod arena;
mod codec;
mod export;
mod groups;
mod load;
mod pages;
mod poll;
mod slot;
mod store;
mod structure;

use groups::{shift, sub};
pub use groups::{DirEntryStat, Group, GroupMember, TopList, Totals, TOP_ITEMS, TOP_UNATTRIBUTED};
use pages::Slots;
pub use poll::{PollReport, PollScope};
use slot::Extra;
use store::{Names, ROOT_DIR};

/// One root as the watcher keeps it.
#[derive(Debug, Clone)]
pub struct RootState {
    /// The root.
    pub root: Root,
    /// Interned names and dirs, and the index of the slots.
    names: Names,
    /// One per item; removed items leave a free slot ([`slot::FREE`]) for the next one.
    slots: Slots,
    /// Free slot ids.
    free: Vec<u32>,
    /// What did not fit in a slot, by slot id.
    extra: HashMap<u32, Box<Extra>>,
    /// The pid an item's name captured, by slot id (few items have one).
    pids: HashMap<u32, u32>,
    /// Producer ids by slot index.
    ids: Vec<Arc<str>>,
    /// Bundle names by slot index - 1, and their indices.
    bundles: Vec<Box<str>>,
    bundle_ids: HashMap<Box<str>, u16>,
    /// The device of the root dir (items on it keep their `dev` implicit).
    root_dev: u64,
    /// Per producer id: totals and largest items, kept by deltas.
    producers: BTreeMap<Arc<str>, Group>,
    /// The unattributed top-level entries: totals and largest ones.
    unattributed: Group,
    /// The groups the children of an unattributed top-level dir and of its subdirs form (one and
    /// two levels down, as the scan finds them: [`crate::shapes::Nested`]), by the dir they lie
    /// in (relative to the root); set by the scan and by each re-measure of the top-level dir.
    /// At most [`crate::shapes::MAX_SHAPES`].
    nested: BTreeMap<std::ffi::OsString, crate::shapes::ShapeGroup>,
    /// Totals of the root: the root dir's own entry plus every item, updated by deltas.
    pub total: Measure,
    /// What the last scan could not read.
    pub issues: Vec<ScanIssue>,
    /// How the root is watched.
    pub mode: WatchMode,
    /// Why it is not watched by events, if so.
    pub watch_error: Option<String>,
    /// Paths below the root that are not watched by events although the rest of the root is (their
    /// watch failed, e.g. unreadable): each is re-listed and its changed items re-measured at every
    /// poll ([`RootState::poll_dirs`]).
    pub unwatched: Vec<PathBuf>,
    /// Whether the root's path still leads to the real dir watched: anything else is a gone root
    /// (figures zeroed, not watched, waiting for a real dir to come back).
    pub status: crate::dto::RootStatus,
    /// The root dir's device and inode when it was last scanned: a dir swapped for another at the
    /// same path is rescanned ([`crate::watch::presence`]).
    pub identity: Option<crate::watch::presence::Identity>,
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
            names: Names::default(),
            slots: Slots::default(),
            free: Vec::new(),
            extra: HashMap::new(),
            pids: HashMap::new(),
            ids: Vec::new(),
            bundles: Vec::new(),
            bundle_ids: HashMap::new(),
            root_dev: 0,
            producers: BTreeMap::new(),
            unattributed: Group::default(),
            nested: BTreeMap::new(),
            total: Measure::default(),
            issues: Vec::new(),
            mode: WatchMode::Events,
            watch_error: None,
            unwatched: Vec::new(),
            status: crate::dto::RootStatus::Ok,
            identity: None,
            scanned_at: None,
            scans: 0,
        }
    }

    /// True while the root's path does not lead to the real dir watched ([`RootState::status`]).
    pub fn gone(&self) -> bool {
        self.status != crate::dto::RootStatus::Ok
    }

    /// Number of items (claimed + unattributed).
    pub fn item_count(&self) -> usize {
        self.names.items()
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

    /// The slot of the item at `rel` (relative to the root).
    fn find(&self, rel: &Path) -> Option<u32> {
        let (dir, name) = self.names.find_split(rel)?;
        self.names.find_item(&self.slots, dir, name)
    }

    /// The item at `rel` (relative to the root), with its absolute path.
    pub fn item_at(&self, rel: &Path) -> Option<Item> {
        self.find(rel).map(|id| self.item_of(id))
    }

    /// The sizes of the item at `rel` (relative to the root).
    pub fn measure_at(&self, rel: &Path) -> Option<Measure> {
        self.find(rel).map(|id| self.measure_of(id))
    }

    /// The own entry last recorded for the dir at `rel` (`""`: the root dir).
    pub fn dir_stat(&self, rel: &Path) -> Option<DirEntryStat> {
        let id = self.names.find_dir_path(rel)?;
        self.names.dirs[id as usize].stat
    }

    /// Records `stat` as the own entry of the dir at `rel` (the baseline later changes below it are
    /// compared with, see [`RootState::restat_ancestors`]).
    pub fn set_dir_stat(&mut self, rel: &Path, stat: Option<DirEntryStat>) {
        if let Some(id) = self.names.make_dir_path(rel) {
            self.names.dirs[id as usize].stat = stat;
        }
    }

    /// Records `stat` as the own entry of the dir at `rel` when the state already holds that dir
    /// (as [`RootState::set_dir_stat`], but never adds a dir). O(depth).
    pub fn replace_dir_stat(&mut self, rel: &Path, stat: DirEntryStat) {
        if let Some(id) = self.names.find_dir_path(rel) {
            self.names.dirs[id as usize].stat = Some(stat);
        }
    }

    /// The path of `path` relative to the root (either spelling); `None` outside it.
    fn rel_of(&self, path: &Path) -> Option<PathBuf> {
        self.root.relative(path).map(Path::to_path_buf)
    }

    /// Sets the item at `rel` to `new` (`None`: removes it), keeping the totals of the root, of
    /// the producers and the largest-item lists.
    fn set(&mut self, rel: &Path, new: Option<&Item>) {
        let old_id = self.find(rel);
        let old = old_id.map(|id| (self.producer_of(id), self.measure_of(id)));
        let new_key = new.map(|it| it.producer.as_deref());
        if let Some((old_producer, old_measure)) = &old {
            sub(&mut self.total, old_measure);
            let same_group = new_key == Some(old_producer.as_deref());
            let new_bytes = new
                .filter(|_| same_group)
                .map(|e| e.measure.allocated_bytes);
            let (g, cap) = self.group_mut(old_producer.as_deref());
            if let Some(g) = g {
                g.totals.items = g.totals.items.saturating_sub(1);
                sub(&mut g.totals.measure, old_measure);
                g.top.update(rel, new_bytes, cap);
            }
            if let Some(id) = old_producer {
                if self.producers.get(id).is_some_and(|g| g.totals.items == 0) {
                    self.producers.remove(id);
                }
            }
        }
        let Some(new) = new else {
            if let Some(id) = old_id {
                self.free_slot(id);
            }
            return;
        };
        self.total.add(&new.measure);
        let same_group = old
            .as_ref()
            .is_some_and(|(p, _)| p.as_deref() == new.producer.as_deref());
        let (g, cap) = self.group_or_insert(new.producer.as_deref());
        g.totals.items += 1;
        g.totals.measure.add(&new.measure);
        if !same_group {
            g.top.update(rel, Some(new.measure.allocated_bytes), cap);
        }
        match old_id {
            Some(id) => {
                let rec = self.slots[id as usize].rec;
                self.write_slot(id, new, rec);
            }
            None => {
                if let Some((dir, name)) = self.names.make_split(rel) {
                    let rec = self.names.arena.push_item(dir, name);
                    self.insert_slot(new, rec);
                }
            }
        }
    }

    fn group_mut(&mut self, producer: Option<&str>) -> (Option<&mut Group>, usize) {
        match producer {
            Some(id) => (self.producers.get_mut(id), TOP_ITEMS),
            None => (Some(&mut self.unattributed), TOP_UNATTRIBUTED),
        }
    }

    fn group_or_insert(&mut self, producer: Option<&str>) -> (&mut Group, usize) {
        match producer {
            Some(id) => {
                let key = match self.ids.iter().find(|x| &***x == id) {
                    Some(k) => k.clone(),
                    None => Arc::from(id),
                };
                (self.producers.entry(key).or_default(), TOP_ITEMS)
            }
            None => (&mut self.unattributed, TOP_UNATTRIBUTED),
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
                self.uncount_direct_own(&rel);
                self.set(&rel, None);
                if let Some(dir) = self.names.find_dir_path(&rel).filter(|&d| d != ROOT_DIR) {
                    // A dir holding items went away: every item below it goes too (O(items)).
                    self.forget_dir_stats(dir);
                    let below: Vec<PathBuf> = self
                        .live()
                        .filter(|&id| {
                            let item_dir = self.names.item_dir(self.slots[id as usize].rec);
                            self.names.is_under(item_dir, dir)
                        })
                        .map(|id| self.rel_path_of(id))
                        .collect();
                    for p in below {
                        self.set(&p, None);
                    }
                }
            }
            Some(item) => {
                // A structure dir counted directly now holds its entry in its measure.
                self.uncount_direct_own(&rel);
                self.set(&rel, Some(&item));
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
            let old = self.dir_stat(&dir);
            let (now, old) = match (now, old) {
                (Some(now), Some(old)) => (now, old),
                (now, old) => {
                    // New since the last scan (its own entry was counted when the item holding it
                    // was measured, or is counted now if no item holds it), or gone.
                    self.count_new_or_gone_top(&dir, old, now);
                    self.set_dir_stat(&dir, now);
                    continue;
                }
            };
            if now == old {
                continue;
            }
            self.move_dir_change(&dir, old, now);
        }
    }

    /// The unattributed top-level items (absolute paths) holding a dir, between them and a path of
    /// `paths` (absolute), with no recorded own entry (new since the last scan): that entry was
    /// counted by the last measure of the top-level item at a size no longer known, so the item is
    /// measured again with it (`measure_batch` returns it as counted). O(depth) per path.
    pub fn tops_to_rebase(&self, paths: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for path in paths {
            let Some(rel) = self.rel_of(path) else {
                continue;
            };
            // `""`, the top-level dir, then the dirs below it.
            let dirs = ancestors_of(&rel);
            if dirs.len() < 3 || dirs[2..].iter().all(|d| self.dir_stat(d).is_some()) {
                continue;
            }
            if self
                .find(&dirs[1])
                .is_some_and(|id| self.producer_of(id).is_none())
            {
                out.push(self.root.canonical.join(&dirs[1]));
            }
        }
        out
    }

    /// The own entry of the dir at `dir` went from `old` to `now`: the change goes where that
    /// entry is counted. The root dir and a top-level dir with no item of its own (structure,
    /// counted directly) are counted in the root total; a dir inside a top-level item (an
    /// unattributed one, or a structure dir that is its rule's item because it holds something
    /// unclaimed), in that item, and so in the total, and a later measure of the item replaces it
    /// whole. A dir below a top-level entry that is no item (yet) is counted nowhere: only its
    /// baseline moves, and the measure that makes that entry an item counts the dir and sets the
    /// baseline. (Shifting the total there counted the change twice once that measure came: a
    /// root 8 KiB over `du` after a dir's growth.)
    fn move_dir_change(&mut self, dir: &Path, old: DirEntryStat, now: DirEntryStat) {
        let d_alloc = now.allocated_bytes as i64 - old.allocated_bytes as i64;
        let d_apparent = now.apparent_bytes as i64 - old.apparent_bytes as i64;
        let mut parts = dir.components();
        match (parts.next(), parts.next()) {
            (None, _) => shift(&mut self.total, d_alloc, d_apparent),
            (Some(first), below) => {
                let top = Path::new(first.as_os_str());
                match self.item_at(top) {
                    Some(mut item) => {
                        // `set` moves the item's old sizes out of the root total and its new
                        // ones in.
                        shift(&mut item.measure, d_alloc, d_apparent);
                        self.set(top, Some(&item));
                    }
                    None if below.is_none() => shift(&mut self.total, d_alloc, d_apparent),
                    None => {}
                }
            }
        }
        self.set_dir_stat(dir, Some(now));
    }

    /// Forgets every item and total (the root was removed).
    pub fn clear(&mut self) {
        self.names = Names::default();
        self.slots = Slots::default();
        self.free = Vec::new();
        self.extra = HashMap::new();
        self.pids = HashMap::new();
        self.bundles.clear();
        self.bundle_ids.clear();
        self.producers.clear();
        self.unattributed = Group::default();
        self.nested.clear();
        self.total = Measure::default();
        self.issues.clear();
        self.unwatched.clear();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
