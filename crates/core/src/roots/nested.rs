//! Nested roots: a root inside another root (a temp root inside a cache root, `other=/x` and
//! `other=/x/y`). Each root's own totals stay `du -s` of it; the totals over all roots count a
//! nested root's bytes once, in the outer root, whose scan already measured them (`du -x` of
//! the outer root walks into the inner one when both are on one device). A root inside another
//! on a different device (a mount) is not in the outer root's scan, so it counts.
//!
//! Attribution goes to the innermost root: [`mark_nested`] records in each root the roots inside
//! it ([`Root::nested`]), and a root's scan claims nothing at or below them, so an item under the
//! inner root is one item of the inner root only, and per-producer sums count it once. Its bytes
//! stay in the outer root's total, inside the item of the outer root that holds the inner root
//! (unattributed when that is a top-level entry, which reports leave out: it *is* another root).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::Root;

/// For each of `roots`, in order: true when its bytes count in totals over all roots, false when
/// it lies strictly inside another of `roots` on the same device (that root's scan counted them).
/// A root whose device cannot be read counts (it measured nothing, or nothing else did).
pub fn counted_in_totals<'a>(roots: impl IntoIterator<Item = &'a Root>) -> Vec<bool> {
    let roots: Vec<&Root> = roots.into_iter().collect();
    let dev = |r: &Root| std::fs::metadata(&r.canonical).ok().map(|m| m.dev());
    let devs: Vec<Option<u64>> = roots.iter().map(|r| dev(r)).collect();
    roots
        .iter()
        .zip(&devs)
        .map(|(inner, inner_dev)| {
            !roots.iter().zip(&devs).any(|(outer, outer_dev)| {
                inner.canonical != outer.canonical
                    && inner.canonical.starts_with(&outer.canonical)
                    && inner_dev.is_some()
                    && inner_dev == outer_dev
            })
        })
        .collect()
}

/// Sets [`Root::nested`] of each of `roots`: the canonical paths of the other roots strictly inside
/// it, relative to its canonical path, in path order (any device: a walk does not cross devices
/// anyway). Call it on the final list of roots before scanning; calling it again recomputes.
pub fn mark_nested(roots: &mut [Root]) {
    let canon: Vec<PathBuf> = roots.iter().map(|r| r.canonical.clone()).collect();
    for r in roots.iter_mut() {
        let mut nested: Vec<PathBuf> = canon
            .iter()
            .filter_map(|c| c.strip_prefix(&r.canonical).ok())
            .filter(|rel| rel.components().next().is_some())
            .map(Path::to_path_buf)
            .collect();
        nested.sort();
        nested.dedup();
        r.nested = nested;
    }
}
