//! The incremental inventory of one root: items keyed by path, totals kept by deltas.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::inventory::{Item, Measure, RootScan, ScanIssue};
use crate::roots::Root;
use crate::snapshot::WatchMode;

use super::map::ancestors_of;

/// The own entry of a directory between the root and an item (its `lstat` sizes), kept so that a
/// change below it updates the totals without walking its siblings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirEntryStat {
    /// `st_blocks * 512`.
    pub allocated_bytes: u64,
    /// `st_size`.
    pub apparent_bytes: u64,
}

impl DirEntryStat {
    /// `lstat` of `path`; `None` when it cannot be read (gone or denied).
    pub fn of(path: &Path) -> Option<DirEntryStat> {
        let md = std::fs::symlink_metadata(path).ok()?;
        Some(DirEntryStat {
            allocated_bytes: md.blocks() * 512,
            apparent_bytes: md.size(),
        })
    }
}

/// One root as the watcher keeps it.
#[derive(Debug, Clone)]
pub struct RootState {
    /// The root.
    pub root: Root,
    /// Items by canonical path (claimed items and unattributed top-level entries).
    pub items: BTreeMap<PathBuf, Item>,
    /// Totals of the root: the root dir's own entry plus every item, updated by deltas.
    pub total: Measure,
    /// The own entries of the root dir (key `""`) and of the dirs between it and claimed items.
    pub dirs: HashMap<PathBuf, DirEntryStat>,
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
            items: BTreeMap::new(),
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

    /// Replaces the items and totals with a fresh scan, and records the own entries of the root dir
    /// and of every dir between it and a claimed item (one `lstat` per distinct dir).
    pub fn load_scan(&mut self, scan: RootScan, now: SystemTime) {
        self.items = scan
            .items
            .into_iter()
            .map(|i| (i.path.clone(), i))
            .collect();
        self.total = scan.total;
        self.issues = scan.issues;
        self.dirs.clear();
        self.dirs.insert(
            PathBuf::new(),
            DirEntryStat::of(&self.root.canonical).unwrap_or_default(),
        );
        let mut wanted: Vec<PathBuf> = Vec::new();
        for item in self.items.values() {
            if item.producer.is_none() {
                continue;
            }
            if let Some(rel) = self.root.relative(&item.path) {
                wanted.extend(ancestors_of(rel).into_iter().skip(1));
            }
        }
        wanted.sort();
        wanted.dedup();
        for rel in wanted {
            let stat = DirEntryStat::of(&self.root.canonical.join(&rel)).unwrap_or_default();
            self.dirs.insert(rel, stat);
        }
        self.scanned_at = Some(now);
        self.scans += 1;
        self.gone = !self.root.canonical.is_dir();
    }

    /// Sets the item at `path` to `item` (`None`: it is gone, and so is every item below it),
    /// adjusting the totals by the difference. Returns the change in allocated bytes.
    pub fn apply(&mut self, path: &Path, item: Option<Item>) -> i64 {
        let before = self.total.allocated_bytes as i64;
        if item.is_none() {
            let below: Vec<PathBuf> = self
                .items
                .range(path.to_path_buf()..)
                .take_while(|(p, _)| p.starts_with(path))
                .map(|(p, _)| p.clone())
                .collect();
            for p in below {
                if let Some(old) = self.items.remove(&p) {
                    sub(&mut self.total, &old.measure);
                }
            }
        } else if let Some(old) = self.items.remove(path) {
            sub(&mut self.total, &old.measure);
        }
        if let Some(item) = item {
            self.total.add(&item.measure);
            self.items.insert(item.path.clone(), item);
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
            let old = self.dirs.get(&dir).copied();
            let (now, old) = match (now, old) {
                (Some(now), Some(old)) => (now, old),
                (Some(now), None) => {
                    // New since the last scan: its own entry was counted when the item holding
                    // it was measured.
                    self.dirs.insert(dir, now);
                    continue;
                }
                (None, _) => {
                    self.dirs.remove(&dir);
                    continue;
                }
            };
            if now == old {
                continue;
            }
            self.dirs.insert(dir.clone(), now);
            let d_alloc = now.allocated_bytes as i64 - old.allocated_bytes as i64;
            let d_apparent = now.apparent_bytes as i64 - old.apparent_bytes as i64;
            shift(&mut self.total, d_alloc, d_apparent);
            if let Some(first) = dir.components().next() {
                let top = self.root.canonical.join(first);
                if let Some(item) = self.items.get_mut(&top) {
                    if item.producer.is_none() {
                        shift(&mut item.measure, d_alloc, d_apparent);
                    }
                }
            }
        }
    }

    /// Forgets every item and total (the root was removed).
    pub fn clear(&mut self) {
        self.items.clear();
        self.total = Measure::default();
        self.dirs.clear();
        self.issues.clear();
    }

    /// The whole root as a [`RootScan`] (for a dry reclaim plan or a one-off summary).
    pub fn to_root_scan(&self) -> RootScan {
        RootScan {
            root: self.root.clone(),
            total: self.total,
            items: self.items.values().cloned().collect(),
            issues: self.issues.clone(),
            vanished: 0,
            non_utf8_names: 0,
            other_device: 0,
        }
    }
}

/// Takes `other`'s counts out of `m` (saturating); times are left as they are.
fn sub(m: &mut Measure, other: &Measure) {
    m.allocated_bytes = m.allocated_bytes.saturating_sub(other.allocated_bytes);
    m.apparent_bytes = m.apparent_bytes.saturating_sub(other.apparent_bytes);
    m.files = m.files.saturating_sub(other.files);
    m.dirs = m.dirs.saturating_sub(other.dirs);
}

fn shift(m: &mut Measure, d_alloc: i64, d_apparent: i64) {
    m.allocated_bytes = m.allocated_bytes.saturating_add_signed(d_alloc);
    m.apparent_bytes = m.apparent_bytes.saturating_add_signed(d_apparent);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::inventory::Captures;
    use crate::roots::RootKind;

    fn item(path: &Path, producer: Option<&str>, allocated_bytes: u64, files: u64) -> Item {
        Item {
            path: path.to_path_buf(),
            producer: producer.map(str::to_owned),
            captures: Captures::default(),
            measure: Measure {
                allocated_bytes,
                apparent_bytes: allocated_bytes / 2,
                files,
                dirs: 1,
                newest_mtime: None,
                birth_time: None,
            },
            is_symlink: false,
            dev: 0,
            ino: 0,
        }
    }

    #[test]
    fn totals_follow_adds_replacements_and_removals() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(RootKind::Cache, dir.path()).unwrap();
        let mut st = RootState::new(root.clone());
        let a = root.canonical.join("g/a");
        let b = root.canonical.join("g/b");
        assert_eq!(st.apply(&a, Some(item(&a, Some("p"), 4096, 2))), 4096);
        assert_eq!(st.apply(&b, Some(item(&b, Some("p"), 8192, 3))), 8192);
        assert_eq!(st.apply(&a, Some(item(&a, Some("p"), 12288, 5))), 8192);
        assert_eq!(st.total.allocated_bytes, 12288 + 8192);
        assert_eq!(st.total.files, 8);
        // Removing a dir drops every item below it.
        assert_eq!(st.apply(&root.canonical.join("g"), None), -(12288 + 8192));
        assert!(st.items.is_empty());
        assert_eq!(st.total, Measure::default());
    }
}
