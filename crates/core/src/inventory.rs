//! What a scan found: items grouped by root and by producer.
//!
//! An *item* is the unit of attribution and reclaim: a path that a catalogue rule claims (e.g. one
//! `gpuarchiver-XXXXXX` dir), or, for what no rule claims, a top-level entry of a root
//! ("unattributed": its sizes count only what lies outside claimed items inside it), so unknown growth
//! stays visible.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::roots::Root;

/// Sizes and times of a subtree (an item, or a whole root).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measure {
    /// Bytes allocated on disk (`st_blocks * 512`), as `du -k` counts them (×1024), hard links once.
    pub allocated_bytes: u64,
    /// Apparent bytes (`st_size` of every entry, dirs and symlinks included), as `du -b` counts them.
    pub apparent_bytes: u64,
    /// Bytes that deleting the subtree would free: [`Measure::allocated_bytes`] less the blocks its
    /// regular files share with files elsewhere (APFS clones, reflink copies), where the file system
    /// can tell ([`crate::platform::private_bytes`]): every file in `code-sign-clones` roots, files
    /// of at least [`crate::scan::PRIVATE_BYTES_MIN_FILE`] elsewhere; equal to `allocated_bytes`
    /// where it cannot or nothing is shared. Blocks shared only among files of the same subtree count as shared, so
    /// this is a lower bound for such subtrees. Never above `allocated_bytes`.
    #[serde(default)]
    pub freeable_bytes: u64,
    /// Number of non-directory entries (regular files, symlinks, sockets, ...).
    pub files: u64,
    /// Number of directories, the subtree's top dir included when it is a dir.
    pub dirs: u64,
    /// The newest mtime of any entry in the subtree, files and dirs. `None` for an empty measure.
    pub newest_mtime: Option<SystemTime>,
    /// Birth time of the subtree's top entry where the OS has one (`statx` / `st_birthtime`), else the
    /// oldest mtime seen in the subtree.
    pub birth_time: Option<SystemTime>,
}

impl Measure {
    /// `self` less `part` (a subtree less some of its contents, such as a dir less the group one
    /// level down inside it): counts and bytes subtracted, the times of `self` kept.
    pub fn less(&self, part: &Measure) -> Measure {
        Measure {
            allocated_bytes: self.allocated_bytes.saturating_sub(part.allocated_bytes),
            apparent_bytes: self.apparent_bytes.saturating_sub(part.apparent_bytes),
            freeable_bytes: self.freeable_bytes.saturating_sub(part.freeable_bytes),
            files: self.files.saturating_sub(part.files),
            dirs: self.dirs.saturating_sub(part.dirs),
            ..*self
        }
    }

    /// Adds `other` into `self`: sums counts, keeps the newest mtime and the oldest birth time.
    pub fn add(&mut self, other: &Measure) {
        self.allocated_bytes += other.allocated_bytes;
        self.apparent_bytes += other.apparent_bytes;
        self.freeable_bytes += other.freeable_bytes;
        self.files += other.files;
        self.dirs += other.dirs;
        self.newest_mtime = max_opt(self.newest_mtime, other.newest_mtime);
        self.birth_time = match (self.birth_time, other.birth_time) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Number of entries (files + dirs).
    pub fn entries(&self) -> u64 {
        self.files + self.dirs
    }
}

fn max_opt(a: Option<SystemTime>, b: Option<SystemTime>) -> Option<SystemTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Values a rule's `name_regex` captured from an item's name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captures {
    /// Owner process id (`pid` capture).
    pub pid: Option<u32>,
    /// Creation time encoded in the name (`ts` capture: epoch seconds, or milliseconds when > 10^11).
    pub ts: Option<SystemTime>,
    /// Bundle id or executable name (`bundle` capture).
    pub bundle: Option<String>,
}

/// One item: a claimed path or an unattributed top-level entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// Absolute path, under the root's canonical path.
    pub path: PathBuf,
    /// The id of the rule that claims it; `None` for an unattributed top-level entry.
    pub producer: Option<String>,
    /// What the rule's regex captured from the name.
    pub captures: Captures,
    /// Sizes of the subtree (for unattributed entries: only what no rule claims inside).
    pub measure: Measure,
    /// True when the item itself is a symlink (reclaim removes the link, never the target).
    pub is_symlink: bool,
    /// Device id of the item (`st_dev`).
    pub dev: u64,
    /// Inode number of the item (`st_ino`).
    pub ino: u64,
}

/// Why part of a scan could not be measured. Never fatal: counted and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IssueKind {
    /// A dir that could not be listed or an entry that could not be stat'ed (EACCES, EPERM).
    PermissionDenied,
    /// Any other I/O error.
    Io,
}

/// One part of a scan that was skipped, with its path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanIssue {
    /// The path that could not be read.
    pub path: PathBuf,
    /// What went wrong, as a category.
    pub kind: IssueKind,
    /// The OS error text.
    pub message: String,
}

/// The scan of one root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootScan {
    /// The root scanned.
    pub root: Root,
    /// Totals of the whole root, the root dir itself included (equal to `du -s` of the root).
    pub total: Measure,
    /// Claimed items and unattributed top-level entries, in path order.
    pub items: Vec<Item>,
    /// What could not be read (the totals leave it out).
    pub issues: Vec<ScanIssue>,
    /// Entries that vanished between listing and stat: not an error, counted here.
    pub vanished: u64,
    /// Entries whose name is not valid UTF-8 (measured normally; counted so JSON output can warn).
    pub non_utf8_names: u64,
    /// Entries on another device that were not crossed into.
    pub other_device: u64,
}

/// Everything a scan found, per root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// One entry per scanned root, in the order given.
    pub roots: Vec<RootScan>,
    /// When the scan started.
    pub scanned_at: SystemTime,
}

/// Totals of one producer over all roots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerTotals {
    /// Rule id.
    pub id: String,
    /// Number of items.
    pub items: u64,
    /// Summed sizes of its items (`measure.freeable_bytes`: what deleting them all would free).
    pub measure: Measure,
}

impl Inventory {
    /// Every item of every root, with the root it belongs to.
    pub fn items(&self) -> impl Iterator<Item = (&Root, &Item)> {
        self.roots
            .iter()
            .flat_map(|r| r.items.iter().map(move |i| (&r.root, i)))
    }

    /// Totals per producer id, largest allocated first (ties by id). Unattributed items are left out.
    pub fn producers(&self) -> Vec<ProducerTotals> {
        let mut map: std::collections::BTreeMap<&str, ProducerTotals> = Default::default();
        for (_, item) in self.items() {
            if let Some(id) = item.producer.as_deref() {
                let t = map.entry(id).or_insert_with(|| ProducerTotals {
                    id: id.to_owned(),
                    items: 0,
                    measure: Measure::default(),
                });
                t.items += 1;
                t.measure.add(&item.measure);
            }
        }
        let mut v: Vec<_> = map.into_values().collect();
        v.sort_by(|a, b| {
            b.measure
                .allocated_bytes
                .cmp(&a.measure.allocated_bytes)
                .then_with(|| a.id.cmp(&b.id))
        });
        v
    }

    /// Unattributed top-level entries of all roots, largest allocated first; an entry that is
    /// another root nested in its root ([`Root::is_nested_root`]) is left out (that root's items
    /// report its contents).
    pub fn unattributed(&self) -> Vec<(&Root, &Item)> {
        let mut v: Vec<_> = self
            .items()
            .filter(|(r, i)| i.producer.is_none() && !r.is_nested_root(&i.path))
            .collect();
        v.sort_by(|a, b| {
            b.1.measure
                .allocated_bytes
                .cmp(&a.1.measure.allocated_bytes)
                .then_with(|| a.1.path.cmp(&b.1.path))
        });
        v
    }

    /// The item at exactly `path` (canonical form), if any.
    pub fn find_item(&self, path: &Path) -> Option<(&Root, &Item)> {
        self.items().find(|(_, i)| i.path == path)
    }
}
