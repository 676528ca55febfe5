//! The streaming scan: [`scan_root_each`] hands each finished item to a visitor and keeps only the
//! root's summary, so memory does not grow with the number of items.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, TryLockError};

use super::shard::Merged;
use super::stat::{stat_path, Stat};
use super::walk::{Acc, Walker};
use super::{in_pool, private_bytes_from, Classify, ScanProgress};
use crate::inventory::{IssueKind, Item, Measure, RootScan, ScanIssue};
use crate::platform::ScanStat;
use crate::roots::Root;
use crate::shapes::ShapeGroup;

/// Items a walk thread holds before handing them to the visitor at once.
const VISIT_BATCH: usize = 64;

/// Items a walk thread holds at most while the visitor is busy with another thread's batch; past
/// them it waits for the visitor.
const VISIT_BACKLOG: usize = 8 * VISIT_BATCH;

/// The scan of one root without its items: what [`scan_root_each`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSummary {
    /// The root scanned.
    pub root: Root,
    /// Totals of the whole root, the root dir itself included (equal to `du -s -x` of the root
    /// when the scan was not cancelled).
    pub total: Measure,
    /// Number of items handed to the visitor.
    pub items: u64,
    /// What could not be read (the totals leave it out), in path order.
    pub issues: Vec<ScanIssue>,
    /// Entries that vanished between listing and stat (a count).
    pub vanished: u64,
    /// Entries whose name is not valid UTF-8 (a count).
    pub non_utf8_names: u64,
    /// Entries on another device that were not crossed into (a count).
    pub other_device: u64,
    /// True when [`ScanProgress::cancel`] stopped the walk: totals and items are then partial.
    pub cancelled: bool,
}

impl RootSummary {
    /// The [`RootScan`] of this summary with `items` (expected in path order) as its items.
    pub fn with_items(self, items: Vec<Item>) -> RootScan {
        RootScan {
            root: self.root,
            total: self.total,
            items,
            issues: self.issues,
            vanished: self.vanished,
            non_utf8_names: self.non_utf8_names,
            other_device: self.other_device,
        }
    }
}

/// Scans one root, calling `visit` once per finished item (a claimed item, or an unattributed
/// top-level entry), in no particular order, and returns the root's summary: totals (equal to
/// `du -s -x` of the root, allocated and apparent), the item count, issues and counters. Items
/// are measured exactly as by [`super::scan_root_with`], which is this function collecting them.
///
/// Memory stays flat in the number of items: nothing of an item is kept once `visit` returned.
/// `visit` runs on the walk's threads, one call at a time (serialized by a lock), so a slow visitor
/// slows the walk; each walk thread hands its finished items over 64 at a time (and the rest
/// before this returns). `progress` counts entries and items as they go (also inside a big root) and is
/// checked for a cancel before each dir is listed ([`ScanProgress`]).
///
/// Never fails: a root that vanished gives an empty summary with one issue.
pub fn scan_root_each<C, F>(
    root: &Root,
    rules: &C,
    progress: &ScanProgress,
    mut visit: F,
) -> RootSummary
where
    C: Classify + ?Sized,
    F: FnMut(Item) + Send,
{
    let visit = |found: Found| {
        if let Found::Item(item) = found {
            visit(item);
        }
    };
    scan_root_found(root, rules, progress, false, visit)
}

/// What [`scan_root_each_found`] hands over.
#[derive(Debug, Clone)]
pub enum Found {
    /// A finished item, as [`scan_root_each`] hands it.
    Item(Item),
    /// The group the children of an unattributed top-level dir form
    /// ([`crate::shapes::Nested`]): its `within` names the dir. Handed over once the dir is
    /// walked, from the sums the walk made of its children (nothing is read again).
    Nested(ShapeGroup),
}

/// [`scan_root_each`], also grouping the children of each unattributed top-level dir by shape as
/// the walk sums them and handing over the group they form ([`Found::Nested`]), so a leak one
/// level down (`out/<digits4>-<digits2>-.../` x 500) is seen. Costs no extra read: the walk
/// lists and sums those children anyway; what it holds per dir being walked is bounded by
/// [`crate::shapes::NESTED_NAME_BUDGET`].
pub fn scan_root_each_found<C, F>(
    root: &Root,
    rules: &C,
    progress: &ScanProgress,
    visit: F,
) -> RootSummary
where
    C: Classify + ?Sized,
    F: FnMut(Found) + Send,
{
    scan_root_found(root, rules, progress, true, visit)
}

fn scan_root_found<C, F>(
    root: &Root,
    rules: &C,
    progress: &ScanProgress,
    nested: bool,
    visit: F,
) -> RootSummary
where
    C: Classify + ?Sized,
    F: FnMut(Found) + Send,
{
    let mut summary = RootSummary {
        root: root.clone(),
        total: Measure::default(),
        items: 0,
        issues: Vec::new(),
        vanished: 0,
        non_utf8_names: 0,
        other_device: 0,
        cancelled: false,
    };
    let md = match stat_path(&root.canonical) {
        Stat::Found(md) => ScanStat::of(&md),
        Stat::Vanished => {
            summary.issues.push(ScanIssue {
                path: root.canonical.clone(),
                kind: IssueKind::Io,
                message: "root vanished: lstat: no such file or directory".to_owned(),
            });
            return summary;
        }
        Stat::Failed(issue) => {
            summary.issues.push(issue);
            return summary;
        }
    };
    // The visitor and the number of items handed to it, under one lock, taken once per
    // `VISIT_BATCH` items a walk thread finished (so 700k items do not contend 700k times).
    // A walk thread that finds the visitor busy with another thread's batch (a tally grouping
    // names) walks on and hands its items over later, rather than idling on the lock; only past
    // `VISIT_BACKLOG` held items does it wait.
    let visit = Mutex::new((visit, 0u64));
    let hand_over = |items: &mut Vec<Item>, wait: bool| {
        let mut v = match visit.try_lock() {
            Ok(v) => v,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) if !wait => return,
            Err(TryLockError::WouldBlock) => visit.lock().unwrap_or_else(|p| p.into_inner()),
        };
        for item in items.drain(..) {
            v.1 += 1;
            (v.0)(Found::Item(item));
        }
    };
    let pending: Merged<Vec<Item>> = Merged::default();
    let sink = |item: Item| {
        pending.with(|items| {
            items.push(item);
            if items.len() >= VISIT_BATCH {
                hand_over(items, items.len() >= VISIT_BACKLOG);
            }
        });
    };
    // Rare (one per top-level dir holding a group): handed over at once.
    let nested_sink = |_: &OsStr, g: ShapeGroup| {
        let mut v = visit.lock().unwrap_or_else(|p| p.into_inner());
        (v.0)(Found::Nested(g));
    };
    let mut walker = Walker::new(
        root.kind,
        rules,
        md.dev,
        private_bytes_from(root),
        &sink,
        progress,
        root.container_bundle(),
    )
    .with_nested(&root.nested);
    if nested {
        walker = walker.with_nested_groups(&nested_sink);
    }
    let own = walker.own(&md, || root.canonical.clone());
    let top_rel = Some(Path::new("")).filter(|_| walker.max_depth() > 0);
    let loose = if md.is_dir() {
        let stalled = |s: &super::progress::Stall| {
            tracing::warn!(
                root = %root.canonical.display(),
                entries = s.entries,
                dirs = ?s.dirs,
                "the scan counted no new entry for {}",
                humantime::format_duration(s.for_)
            );
        };
        let walk = || in_pool(|| walker.contents(&root.canonical, top_rel, 0));
        super::progress::watch_stalls(progress, super::progress::STALL_AFTER, stalled, walk)
    } else {
        Acc::default()
    };
    pending.each(|items| hand_over(items, true));
    summary.vanished = walker.vanished.load(Ordering::Relaxed);
    summary.non_utf8_names = walker.non_utf8_names.load(Ordering::Relaxed);
    summary.other_device = walker.other_device.load(Ordering::Relaxed);
    summary.items = visit.lock().unwrap_or_else(|p| p.into_inner()).1;
    let (items_total, mut issues) = walker.into_found();
    issues.sort_by(|a, b| a.path.cmp(&b.path));
    summary.total = own.merge(items_total).merge(loose).into_measure(md.born);
    summary.issues = issues;
    summary.cancelled = progress.is_cancelled();
    summary
}
