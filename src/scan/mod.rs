//! The scanner: a parallel walk of a root that measures every item.
//!
//! SKELETON — owned by the scan helper; the signatures below are the agreed interface.

use std::path::Path;
use std::time::SystemTime;

use crate::catalogue::Catalogue;
use crate::inventory::{Inventory, Item, RootScan};
use crate::roots::Root;

/// Scans every root and attributes items with `catalogue`. Never fails: unreadable parts are
/// reported in each [`RootScan`]'s `issues`.
pub fn scan(roots: &[Root], catalogue: &Catalogue, now: SystemTime) -> Inventory {
    Inventory {
        roots: roots.iter().map(|r| scan_root(r, catalogue)).collect(),
        scanned_at: now,
    }
}

/// Scans one root.
pub fn scan_root(root: &Root, catalogue: &Catalogue) -> RootScan {
    let _ = (root, catalogue);
    todo!("scan helper")
}

/// Measures one item (a path inside `root`) afresh, attributing it with `catalogue`; `Ok(None)` when it
/// no longer exists. For the watcher's incremental updates.
///
/// # Errors
/// The I/O error of `lstat` on `path` itself (other than `NotFound`).
pub fn measure_item(
    root: &Root,
    catalogue: &Catalogue,
    path: &Path,
) -> std::io::Result<Option<Item>> {
    let _ = (root, catalogue, path);
    todo!("scan helper")
}
