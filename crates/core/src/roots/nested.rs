//! Nested roots: a root inside another root (a temp root inside a cache root, `other=/x` and
//! `other=/x/y`). Each root's own totals stay `du -s` of it; the totals over all roots count a
//! nested root's bytes once, in the outer root, whose scan already measured them (`du -x` of
//! the outer root walks into the inner one when both are on one device). A root inside another
//! on a different device (a mount) is not in the outer root's scan, so it counts.

use std::os::unix::fs::MetadataExt;

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
