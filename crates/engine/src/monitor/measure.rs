//! The blocking file walks of an update: re-measuring dirty items and finding the claimed items
//! below a new dir. Run in `spawn_blocking`.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::catalogue::Catalogue;
use crate::inventory::Item;
use crate::roots::Root;
use crate::shapes::ShapeGroup;
use crate::watch::live::DirEntryStat;

/// What [`measure_batch`] found for one path: the item (`None`: gone, or not an item), for a
/// top-level dir the own entries its measure counted (see [`measure_batch`]), and the group its
/// children form, if any ([`crate::scan::EntryMeasure::nested`]).
pub(super) type Measured = (PathBuf, Option<Item>, Vec<Counted>, Vec<ShapeGroup>);

/// An own entry a measure counted: the dir (relative to the root), its `lstat` as counted, and
/// whether it becomes a baseline even when the state holds no such dir yet (the top-level dir,
/// and the dirs between it and a path of the batch). The others only replace a baseline the state
/// already keeps: a re-measure of a big unattributed tree never adds its dirs to the state.
pub(super) type Counted = (PathBuf, DirEntryStat, bool);

/// Measures the items (and the claimed items found below `discover`). For an unattributed
/// top-level dir it also returns the own entries that measure counted and that later changes are
/// compared with (see `RootState::restat_ancestors`): the dir itself and every unclaimed dir in it
/// whose entries were classified (`julia/com.apple.gpuarchiver`), as paths relative to the root,
/// exactly as the walk `lstat`ed and counted them ([`crate::scan::measure_entry_with`]). A later
/// re-stat would not do: a dir still growing while it is measured then disagrees with the measure
/// and its growth in between is lost (a regression, three times: a top-level dir, a structure dir
/// below one, then one growing through three measures in a row). Blocking.
pub(super) fn measure_batch(
    root: &Root,
    catalogue: &Catalogue,
    items: &[PathBuf],
    discover: &[PathBuf],
) -> Vec<Measured> {
    let mut wanted: BTreeSet<PathBuf> = items.iter().cloned().collect();
    let max_depth = catalogue.max_depth(root.kind);
    for dir in discover {
        find_claimed(root, catalogue, dir, max_depth, &mut wanted);
    }
    let mut out = Vec::with_capacity(wanted.len());
    for path in &wanted {
        let res = crate::scan::measure_entry_with(root, catalogue, path);
        after_measure(path);
        match res {
            Ok(Some(m)) => {
                let needed = match root.relative(path) {
                    Some(rel) if !m.dirs.is_empty() => baseline_dirs(root, rel, &wanted),
                    _ => BTreeSet::new(),
                };
                let own = m
                    .dirs
                    .into_iter()
                    .map(|d| {
                        let stat = DirEntryStat {
                            allocated_bytes: d.allocated_bytes,
                            apparent_bytes: d.apparent_bytes,
                        };
                        let keep = needed.contains(&d.rel);
                        (d.rel, stat, keep)
                    })
                    .collect();
                out.push((path.clone(), m.item, own, m.nested));
            }
            Ok(None) => out.push((path.clone(), None, Vec::new(), Vec::new())),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot measure item; keeping its last figures");
            }
        }
    }
    out
}

/// A hook run after each measure of [`measure_batch`], with the measured path (see
/// [`set_after_measure_hook`]).
type Hook = Arc<dyn Fn(&Path) + Send + Sync>;

static AFTER_MEASURE: RwLock<Option<Hook>> = RwLock::new(None);

/// Test seam: `hook` runs on the measuring thread right after each item a re-measure measured
/// (before its figures reach the state), e.g. to grow a dir between the measure and what follows
/// it. `None` removes it. Process-wide: a test filters the paths by its own tree.
#[doc(hidden)]
pub fn set_after_measure_hook(hook: Option<Hook>) {
    *AFTER_MEASURE.write().unwrap_or_else(|p| p.into_inner()) = hook;
}

fn after_measure(path: &Path) {
    let hook = AFTER_MEASURE
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some(hook) = hook {
        hook(path);
    }
}

/// The top-level entry `top` (relative to the root) and the dirs between it and the paths of
/// `wanted` below it, relative to the root: the own entries its measure counted that must become
/// baselines. O(paths of `wanted` below `top`).
fn baseline_dirs(root: &Root, top: &Path, wanted: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
    let mut dirs = BTreeSet::from([top.to_path_buf()]);
    let abs = root.canonical.join(top);
    for p in wanted.range((Bound::Excluded(abs.clone()), Bound::Unbounded)) {
        if !p.starts_with(&abs) {
            break;
        }
        if let Some(rel) = root.relative(p) {
            dirs.extend(
                crate::watch::map::ancestors_of(rel)
                    .into_iter()
                    .filter(|d| d.components().count() >= 2),
            );
        }
    }
    dirs
}

/// Adds to `out` every path below `dir` (down to `max_depth` components from the root) that a rule
/// claims. Never follows symlinks. Blocking.
fn find_claimed(
    root: &Root,
    catalogue: &Catalogue,
    dir: &Path,
    max_depth: usize,
    out: &mut BTreeSet<PathBuf>,
) {
    let Some(rel) = root.relative(dir) else {
        return;
    };
    if rel.components().count() >= max_depth {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            tracing::debug!(path = %dir.display(), error = %e, "cannot list a new dir");
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(rel) = root.relative(&path) else {
            continue;
        };
        let has = |name: &str| std::fs::symlink_metadata(path.join(name)).is_ok();
        if catalogue.classify_with(root.kind, rel, &has).is_some() {
            out.insert(root.canonical.join(rel));
        } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
            find_claimed(root, catalogue, &path, max_depth, out);
        }
    }
}
