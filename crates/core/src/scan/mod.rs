//! The scanner: a parallel walk of a root that measures every item.
//!
//! Counting follows `du -x` exactly, so totals can be checked against it:
//! - every entry counts, dirs and symlinks included: allocated bytes are `st_blocks * 512` (as
//!   `du -B1`), apparent bytes are `st_size` (as `du -b`);
//! - freeable bytes are allocated bytes less what regular files share with other files (APFS
//!   clones, reflinks), asked per file only on roots whose file system can share blocks
//!   ([`crate::platform::can_share_blocks`]: one extra `getattrlist` or `open` + `FIEMAP` per
//!   file there, none elsewhere), for every file of a `code-sign-clones` root and for files of at
//!   least [`PRIVATE_BYTES_MIN_FILE`] in other roots (smaller ones count as their own);
//! - symlinks are never followed (`lstat`); a symlink counts its own entry only;
//! - a non-directory with `st_nlink > 1` counts once per scan, at the first link seen;
//! - entries on another device than the root are neither counted nor entered
//!   ([`RootScan::other_device`]);
//! - a dir that cannot be listed still counts its own entry and is reported as a [`ScanIssue`];
//!   an entry that cannot be `lstat`ed is reported and not counted (`du` does the same);
//! - an entry that vanishes between listing and `lstat` is counted in [`RootScan::vanished`].
//!
//! Attribution: an entry at most [`Classify::max_depth`] deep that a rule claims is an item
//! (measured whole, no classification inside). Each top-level entry no rule claims is an
//! unattributed item measuring only what lies outside claimed items inside it, unless a rule's
//! `structure` globs match it ([`Classify::structure_of`]): then it is measured the same way but
//! attributed to that rule (a dir its items live in, never an item to reclaim). So a root's total
//! is the sum of its items plus the root dir's own entry. In a `container-temp` root every item's
//! `captures.bundle` is the container's bundle id ([`Root::container_bundle`]).
//!
//! Walk: each dir is opened relative to its parent's fd (`openat(O_NOFOLLOW | O_DIRECTORY)`),
//! listed through it and its entries `lstat`ed relative to it, so no path is built per entry
//! (only per item or issue); a dir replaced by a symlink after its `lstat` counts as vanished.
//!
//! Memory: [`scan_root_each`] hands each finished item to a visitor and keeps only the root's
//! summary, and a big dir is listed and walked 1024 entries at a time, so a scan's
//! memory does not grow with its items (`benches/bench.sh` measures it); [`Tally`] sums what a report
//! needs on the fly. [`scan_root_with`] and [`scan`] collect and sort the items (about 350 bytes
//! each) for callers that need the list. [`ScanProgress`] counts entries inside a root and
//! carries a cancel.

mod contains;
mod dir_chain;
mod order;
mod progress;
mod shard;
mod stat;
mod streaming;
mod sums;
mod tally;
mod walk;

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::SystemTime;

use crate::catalogue::Catalogue;
use crate::inventory::{Captures, Inventory, Item, RootScan, ScanIssue};
use crate::roots::{Root, RootKind};

pub(crate) use self::order::path_order;
pub use self::progress::ScanProgress;
pub use self::streaming::{scan_root_each, scan_root_each_found, Found, RootSummary};
pub use self::tally::{Tally, Unattributed, UnattributedGroup};
use self::walk::Walker;

/// A rule's claim on a path: which producer, and what its name regex captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The producer's rule id.
    pub producer: String,
    /// Values captured from the item's name.
    pub captures: Captures,
}

/// What the scanner asks of a catalogue. [`Catalogue`] implements it; tests and tools may pass
/// their own rules.
pub trait Classify: Sync {
    /// The deepest level (number of path components below the root) at which a rule for roots of
    /// `kind` can claim an entry; 0 when none applies.
    fn max_depth(&self, kind: RootKind) -> usize;
    /// The claim on `rel` itself (a path relative to a root of `kind`), if a rule claims it.
    fn classify(&self, kind: RootKind, rel: &Path) -> Option<Claim>;
    /// The item `rel` (any path inside a root of `kind`) belongs to: the shortest claimed prefix
    /// of `rel` (relative to the root) and its claim; `None` when no prefix is claimed.
    fn item_of(&self, kind: RootKind, rel: &Path) -> Option<(PathBuf, Claim)>;
    /// The producer whose `structure` globs match `rel`, a top-level entry no rule claims (a dir
    /// the producer's items live in, e.g. `com.apple.gpuarchiver`): the entry is attributed to it
    /// instead of being unattributed. `None` by default.
    fn structure_of(&self, _kind: RootKind, _rel: &Path) -> Option<String> {
        None
    }
    /// [`Classify::classify`] where `has(name)` says whether the entry `name` exists directly
    /// inside `rel` (a rule's `contains` signature). The default ignores it.
    fn classify_in(
        &self,
        kind: RootKind,
        rel: &Path,
        _has: &dyn Fn(&str) -> bool,
    ) -> Option<Claim> {
        self.classify(kind, rel)
    }
    /// [`Classify::item_of`] for a path inside `root`, reading `contains` signatures from disk.
    /// The default ignores them.
    fn item_of_in(&self, root: &Root, rel: &Path) -> Option<(PathBuf, Claim)> {
        self.item_of(root.kind, rel)
    }
}

impl Classify for Catalogue {
    fn max_depth(&self, kind: RootKind) -> usize {
        Catalogue::max_depth(self, kind)
    }

    fn classify(&self, kind: RootKind, rel: &Path) -> Option<Claim> {
        self.classify_in(kind, rel, &|_| false)
    }

    fn classify_in(&self, kind: RootKind, rel: &Path, has: &dyn Fn(&str) -> bool) -> Option<Claim> {
        Catalogue::claim_with(self, kind, rel, has).map(|(rule, captures)| Claim {
            producer: rule.id.clone(),
            captures,
        })
    }

    fn item_of_in(&self, root: &Root, rel: &Path) -> Option<(PathBuf, Claim)> {
        Catalogue::item_of_in(self, root, rel).map(|m| {
            let claim = Claim {
                producer: m.rule.id.clone(),
                captures: m.captures,
            };
            (m.item, claim)
        })
    }

    fn item_of(&self, kind: RootKind, rel: &Path) -> Option<(PathBuf, Claim)> {
        Catalogue::item_of(self, kind, rel).map(|m| {
            let claim = Claim {
                producer: m.rule.id.clone(),
                captures: m.captures,
            };
            (m.item, claim)
        })
    }

    fn structure_of(&self, kind: RootKind, rel: &Path) -> Option<String> {
        Catalogue::structure_of(self, kind, rel).map(|r| r.id.clone())
    }
}

/// Stack size of the scan threads: recursion follows the tree's depth, and paths can nest about
/// 2000 levels before `PATH_MAX` stops them.
const SCAN_STACK_BYTES: usize = 64 << 20;

/// Scan threads per CPU.
const SCAN_THREADS_PER_CPU: usize = 3;

/// Runs `f` in the scanner's thread pool ([`SCAN_THREADS_PER_CPU`] per CPU, deep stacks). A caller already on a
/// rayon pool's thread keeps its own pool (so tools can choose the thread count); if the scanner's
/// pool could not be started, `f` runs on the caller's thread.
pub(super) fn in_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        // Threads wait on the filesystem as much as they compute, so more threads than CPUs keep
        // the CPUs busy (measured: 4 threads beat 2 on a 2-CPU box; diskus uses 3 per CPU too).
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(SCAN_THREADS_PER_CPU * cpus)
            .thread_name(|i| format!("cachewatch-scan-{i}"))
            .stack_size(SCAN_STACK_BYTES)
            .build()
            .ok()
    });
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Runs `f` with the scans it makes walking on `threads` threads (deep stacks, as the scanner's
/// own pool) instead of [`SCAN_THREADS_PER_CPU`] per CPU: `cachewatch scan --threads`, and tests
/// of the walk under every thread count. If such a pool cannot be started, `f` runs with the
/// scanner's own pool.
pub fn with_scan_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("cachewatch-scan-{i}"))
        .stack_size(SCAN_STACK_BYTES)
        .build();
    match pool {
        Ok(p) => p.install(f),
        Err(e) => {
            tracing::warn!("cannot start {threads} scan threads ({e}); using the default pool");
            f()
        }
    }
}

/// Scans every root and attributes items with `catalogue`. Never fails: unreadable parts are
/// reported in each [`RootScan`]'s `issues`. `now` is recorded as the inventory's scan time.
pub fn scan(roots: &[Root], catalogue: &Catalogue, now: SystemTime) -> Inventory {
    scan_with(roots, catalogue, now)
}

/// [`scan`] with any [`Classify`] implementation.
///
/// Roots inside others are marked first ([`crate::roots::mark_nested`]), so an item is an item
/// of the innermost root holding it only.
pub fn scan_with<C: Classify + ?Sized>(roots: &[Root], rules: &C, now: SystemTime) -> Inventory {
    let mut roots = roots.to_vec();
    crate::roots::mark_nested(&mut roots);
    Inventory {
        roots: roots.iter().map(|r| scan_root_with(r, rules)).collect(),
        scanned_at: now,
    }
}

/// Scans one root: its total (equal to `du -s -x` of it, allocated and apparent), its items in path
/// order, and what could not be read. Never fails: a root that vanished gives an empty scan with
/// one issue. Holds every item: [`scan_root_each`] streams them instead.
pub fn scan_root(root: &Root, catalogue: &Catalogue) -> RootScan {
    scan_root_with(root, catalogue)
}

/// [`scan_root`] with any [`Classify`] implementation: [`scan_root_each`] collecting the items,
/// then sorting them in path order.
pub fn scan_root_with<C: Classify + ?Sized>(root: &Root, rules: &C) -> RootScan {
    let mut items = Vec::new();
    let summary = scan_root_each(root, rules, &ScanProgress::new(), |item| items.push(item));
    let skip = root.canonical.as_os_str().len();
    items.sort_unstable_by(|a, b| path_order(&a.path, &b.path, skip));
    summary.with_items(items)
}

/// Files of at least this many allocated bytes have their private bytes asked for on file systems
/// that share blocks, outside `code-sign-clones` roots: one call per file roughly doubles a scan's
/// cost (measured on XFS: 17.5 us per file), and big files carry the bytes that matter.
pub const PRIVATE_BYTES_MIN_FILE: u64 = 1 << 20;

/// The smallest file (allocated bytes) whose private bytes the walk of `root` asks for: every file
/// in a `code-sign-clones` root (whole app bundles are cloned there), [`PRIVATE_BYTES_MIN_FILE`]
/// elsewhere, none (`u64::MAX`) where the file system cannot share blocks.
pub(super) fn private_bytes_from(root: &Root) -> u64 {
    if !crate::platform::can_share_blocks(&root.canonical) {
        u64::MAX
    } else if root.kind == RootKind::CodeSignClones {
        1
    } else {
        PRIVATE_BYTES_MIN_FILE
    }
}

/// One item measured afresh, with what could not be read inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemScan {
    /// The item (its path is under the root's canonical path).
    pub item: Item,
    /// Parts of the item that could not be read (left out of its measure).
    pub issues: Vec<ScanIssue>,
    /// Entries that vanished while it was measured.
    pub vanished: u64,
}

/// Measures one item (a path inside `root`) afresh, attributing it with `catalogue`; `Ok(None)` when it
/// no longer exists. For the watcher's incremental updates.
///
/// `path` may be any path inside the item (either spelling of the root): the item is the claimed
/// prefix of `path`, or else the top-level entry it lies under (unattributed, measured without
/// what rules claim inside it).
///
/// # Errors
/// The I/O error of `lstat` on `path` itself (other than `NotFound`).
pub fn measure_item(
    root: &Root,
    catalogue: &Catalogue,
    path: &Path,
) -> std::io::Result<Option<Item>> {
    Ok(measure_item_with(root, catalogue, path)?.map(|s| s.item))
}

/// [`measure_item`] with any [`Classify`] implementation, also returning what could not be read.
///
/// # Errors
/// As [`measure_entry_with`].
pub fn measure_item_with<C: Classify + ?Sized>(
    root: &Root,
    rules: &C,
    path: &Path,
) -> io::Result<Option<ItemScan>> {
    Ok(measure_entry_with(root, rules, path)?.and_then(|m| {
        let (issues, vanished) = (m.issues, m.vanished);
        m.item.map(|item| ItemScan {
            item,
            issues,
            vanished,
        })
    }))
}

/// The own entry of a dir as a walk counted it (from the same `lstat`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirOwn {
    /// The dir's path relative to the root.
    pub rel: PathBuf,
    /// `st_blocks * 512`, in bytes.
    pub allocated_bytes: u64,
    /// `st_size`, in bytes.
    pub apparent_bytes: u64,
}

impl DirOwn {
    fn of(rel: &Path, own: &sums::Acc) -> DirOwn {
        DirOwn {
            rel: rel.to_path_buf(),
            allocated_bytes: own.allocated_bytes,
            apparent_bytes: own.apparent_bytes,
        }
    }
}

/// What [`measure_entry_with`] found at an existing entry of a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMeasure {
    /// The item; `None` for a top-level structure dir holding only claimed items (not an item,
    /// as in a full scan: its own entry is in `dirs`).
    pub item: Option<Item>,
    /// When the entry is an unattributed top-level dir: its own entry and that of every unclaimed
    /// dir in it whose entries were classified (less than [`Classify::max_depth`] deep), exactly
    /// as the measure counted them, from the walk's own `lstat`s (never a later re-stat, which a
    /// dir still growing would make disagree with the measure). Empty for a claimed item. In no
    /// order.
    pub dirs: Vec<DirOwn>,
    /// Parts that could not be read (left out of the measure).
    pub issues: Vec<ScanIssue>,
    /// Entries that vanished while it was measured.
    pub vanished: u64,
    /// When the entry is an unattributed top-level dir: the groups its children and its
    /// subdirs' children form (one and two levels down, [`crate::shapes::Nested`]), as a full
    /// scan finds them; empty when none.
    pub nested: Vec<crate::shapes::ShapeGroup>,
}

/// [`measure_item_with`], also returning the own entries of the dirs the measure counted
/// ([`EntryMeasure::dirs`]: the watcher's baselines for later changes below them) and a
/// structure dir that is no item. `Ok(None)` when the entry no longer exists or is on another
/// device than the root.
///
/// # Errors
/// `InvalidInput` when `path` is not inside `root`; the error of `lstat` on the item or the root
/// (other than `NotFound`, which gives `Ok(None)`), with the path in its message.
pub fn measure_entry_with<C: Classify + ?Sized>(
    root: &Root,
    rules: &C,
    path: &Path,
) -> io::Result<Option<EntryMeasure>> {
    let rel = root
        .relative(path)
        .filter(|r| r.components().next().is_some())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{path:?} is not inside root {:?}", root.canonical),
            )
        })?;
    // Nothing inside a root nested in this one is this root's item (`Root::nested`).
    let claimed = rules
        .item_of_in(root, rel)
        .filter(|(item_rel, _)| !root.in_nested(item_rel));
    let (item_rel, claim) = match claimed {
        Some((item_rel, claim)) => (item_rel, Some(claim)),
        None => match rel.components().next() {
            Some(Component::Normal(top)) => (PathBuf::from(top), None),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{path:?} is not a plain path inside root {:?}",
                        root.canonical
                    ),
                ))
            }
        },
    };
    let item_path = root.canonical.join(&item_rel);
    let Some(root_md) = lstat_or_none(&root.canonical)? else {
        return Ok(None);
    };
    let Some(md) = lstat_or_none(&item_path)? else {
        return Ok(None);
    };
    if md.dev() != root_md.dev() {
        return Ok(None);
    }
    let found = std::sync::Mutex::new(Vec::new());
    let sink = |item: Item| found.lock().unwrap_or_else(|p| p.into_inner()).push(item);
    let progress = ScanProgress::new();
    let nested = std::sync::Mutex::new(Vec::new());
    let nested_sink = |_: &std::ffi::OsStr, g: crate::shapes::ShapeGroup| {
        nested.lock().unwrap_or_else(|p| p.into_inner()).push(g);
    };
    let walker = Walker::new(
        root.kind,
        rules,
        root_md.dev(),
        private_bytes_from(root),
        &sink,
        &progress,
        root.container_bundle(),
    )
    .with_nested(&root.nested)
    .with_nested_groups(&nested_sink)
    .record_dirs();
    let depth = item_rel.components().count();
    let inner_rel =
        Some(item_rel.as_path()).filter(|_| claim.is_none() && depth < walker.max_depth());
    let st = crate::platform::ScanStat::of(&md);
    let mut dirs = Vec::new();
    if claim.is_none() && md.is_dir() {
        // The walk counts the entry at this very `lstat`.
        dirs.push(DirOwn {
            rel: item_rel.clone(),
            allocated_bytes: st.blocks * 512,
            apparent_bytes: st.size,
        });
    }
    in_pool(|| walker.item(&item_path, &st, claim, inner_rel, depth));
    dirs.extend(walker.take_dirs());
    let vanished = walker.vanished.load(Ordering::Relaxed);
    // Claimed items inside an unattributed one were recorded first; the item itself comes last. A
    // structure dir (`com.apple.gpuarchiver` holding only claimed items) records no item of its
    // own: then it is not an item, as in a full scan.
    let (_, issues) = walker.into_found();
    let mut items = found.into_inner().unwrap_or_else(|p| p.into_inner());
    let item = items.pop().filter(|i| i.path == item_path);
    let nested = nested.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(Some(EntryMeasure {
        item,
        dirs,
        issues,
        vanished,
        nested,
    }))
}

fn lstat_or_none(path: &Path) -> io::Result<Option<std::fs::Metadata>> {
    match std::fs::symlink_metadata(path) {
        Ok(md) => Ok(Some(md)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io::Error::new(e.kind(), format!("lstat {path:?}: {e}"))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
