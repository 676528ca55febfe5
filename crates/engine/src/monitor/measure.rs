//! The blocking file walks of an update: re-measuring dirty items and finding the claimed items
//! below a new dir. Run in `spawn_blocking`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::catalogue::Catalogue;
use crate::inventory::Item;
use crate::roots::Root;
use crate::watch::state::DirEntryStat;

/// Measures the items (and the claimed items found below `discover`). For a top-level entry it
/// also returns the `lstat` of its own entry as that measure counted it: the entry is stat'ed before
/// and after the measure, and measured again (up to 3 times) when the two differ, so a dir growing
/// while it is measured cannot leave a wrong baseline (a regression: a top-level dir created after
/// the first scan lost the growth between its measure and its first re-stat). Blocking.
pub(super) fn measure_batch(
    root: &Root,
    catalogue: &Catalogue,
    items: &[PathBuf],
    discover: &[PathBuf],
) -> Vec<(PathBuf, Option<Item>, Option<DirEntryStat>)> {
    let mut wanted: BTreeSet<PathBuf> = items.iter().cloned().collect();
    let max_depth = catalogue.max_depth(root.kind);
    for dir in discover {
        find_claimed(root, catalogue, dir, max_depth, &mut wanted);
    }
    let mut out = Vec::with_capacity(wanted.len());
    for path in wanted {
        let top_level = root
            .relative(&path)
            .is_some_and(|r| r.components().count() == 1);
        let mut tries = 0;
        loop {
            tries += 1;
            let before = top_level.then(|| DirEntryStat::of(&path)).flatten();
            let res = crate::scan::measure_item(root, catalogue, &path);
            let after = top_level.then(|| DirEntryStat::of(&path)).flatten();
            if before != after && tries < 3 {
                continue;
            }
            match res {
                Ok(item) => out.push((path, item, before.filter(|_| before == after))),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot measure item; keeping its last figures");
                }
            }
            break;
        }
    }
    out
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
