//! Mapping an event path to the item it changes.

use std::path::{Component, Path, PathBuf};

use crate::catalogue::Catalogue;
use crate::roots::Root;

/// Prefix of the marker files [`crate::monitor::MonitorHandle::flush`] writes into a root to learn
/// that every event delivered before it was read. Paths starting with it are never items.
pub const FLUSH_MARKER_PREFIX: &str = ".cachewatch-flush-";

/// What an event path touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An item (claimed or an unattributed top-level entry), as its absolute canonical path.
    Item {
        /// Canonical path of the item.
        path: PathBuf,
        /// The item's path relative to the root.
        rel: PathBuf,
        /// True when a catalogue rule claims it.
        claimed: bool,
    },
    /// The root dir itself.
    Root,
    /// A flush marker of ours, with its token (the part after the prefix).
    Marker(String),
    /// Outside this root.
    Outside,
}

/// Maps `path` (either spelling of the root) to what it touches: the shortest prefix a rule of
/// `catalogue` claims (`Catalogue::item_of`), else the root's top-level entry.
pub fn target_of(root: &Root, catalogue: &Catalogue, path: &Path) -> Target {
    let Some(rel) = root.relative(path) else {
        return Target::Outside;
    };
    let first = match rel.components().next() {
        None => return Target::Root,
        Some(Component::Normal(first)) => first,
        Some(_) => return Target::Outside,
    };
    if let Some(token) = first
        .to_str()
        .and_then(|s| s.strip_prefix(FLUSH_MARKER_PREFIX))
    {
        return Target::Marker(token.to_owned());
    }
    // Inside a root nested in this one nothing is claimed by this one (`Root::nested`).
    match catalogue
        .item_of_in(root, rel)
        .filter(|m| !root.in_nested(&m.item))
    {
        Some(m) => Target::Item {
            path: root.canonical.join(&m.item),
            rel: m.item,
            claimed: true,
        },
        None => Target::Item {
            path: root.canonical.join(first),
            rel: PathBuf::from(first),
            claimed: false,
        },
    }
}

/// The dirs between the root and the item at `rel` (the root dir itself as `""` first, then each
/// ancestor of `rel`, `rel` excluded), as paths relative to the root.
pub fn ancestors_of(rel: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = rel.ancestors().skip(1).map(Path::to_path_buf).collect();
    out.reverse();
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_run_from_the_root_down() {
        assert_eq!(
            ancestors_of(Path::new("a/b/c")),
            vec![PathBuf::from(""), PathBuf::from("a"), PathBuf::from("a/b")]
        );
        assert_eq!(ancestors_of(Path::new("a")), vec![PathBuf::from("")]);
    }
}
