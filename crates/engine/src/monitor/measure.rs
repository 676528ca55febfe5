//! The blocking file walks of an update: re-measuring dirty items and finding the claimed items
//! below a new dir. Run in `spawn_blocking`.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use crate::catalogue::Catalogue;
use crate::inventory::Item;
use crate::roots::Root;
use crate::watch::state::DirEntryStat;

/// What [`measure_batch`] found for one path: the item (`None`: gone, or not an item) and, for a
/// top-level dir, the own entries its measure counted (see [`measure_batch`]).
pub(super) type Measured = (PathBuf, Option<Item>, Vec<(PathBuf, DirEntryStat)>);

/// Measures the items (and the claimed items found below `discover`). For a top-level entry it
/// also returns the `lstat` of the own entries that measure counted and that later changes are
/// compared with (see `RootState::restat_ancestors`): the entry itself and every dir between it
/// and a claimed item of the batch (`julia/com.apple.gpuarchiver`), as paths relative to the root.
/// They are stat'ed before and after the measure, and the entry is measured again (up to 3 times)
/// when the two differ, so a dir growing while it is measured cannot leave a wrong baseline (a
/// regression, twice: a top-level dir, then a structure dir below one, created after the first
/// scan lost the growth between its measure and its first re-stat). Blocking.
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
        let dirs = match root.relative(path) {
            Some(rel) if rel.components().count() == 1 => baseline_dirs(root, rel, &wanted),
            _ => Vec::new(),
        };
        let stat_all = || -> Vec<Option<DirEntryStat>> {
            dirs.iter()
                .map(|d| DirEntryStat::of(&root.canonical.join(d)))
                .collect()
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let before = stat_all();
            let res = crate::scan::measure_item(root, catalogue, path);
            let after = stat_all();
            if before != after && tries < 3 {
                continue;
            }
            match res {
                Ok(item) => {
                    let own = if before == after {
                        dirs.iter()
                            .zip(before)
                            .filter_map(|(d, s)| Some((d.clone(), s?)))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    out.push((path.clone(), item, own));
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot measure item; keeping its last figures");
                }
            }
            break;
        }
    }
    out
}

/// The top-level entry `top` (relative to the root) and the dirs between it and the paths of
/// `wanted` below it (relative to the root, `top` first): the own entries its measure counts
/// that later changes below it are compared with. O(paths of `wanted` below `top`).
fn baseline_dirs(root: &Root, top: &Path, wanted: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mut dirs = BTreeSet::new();
    let abs = root.canonical.join(top);
    for p in wanted.range((Bound::Excluded(abs.clone()), Bound::Unbounded)) {
        if !p.starts_with(&abs) {
            break;
        }
        let Some(rel) = root.relative(p) else {
            continue;
        };
        dirs.extend(
            crate::watch::map::ancestors_of(rel)
                .into_iter()
                .filter(|d| d.components().count() >= 2),
        );
    }
    std::iter::once(top.to_path_buf()).chain(dirs).collect()
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
        if catalogue.classify(root.kind, rel).is_some() {
            out.insert(root.canonical.join(rel));
        } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
            find_claimed(root, catalogue, &path, max_depth, out);
        }
    }
}
