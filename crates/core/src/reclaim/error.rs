//! [`ReclaimError`]: what can go wrong re-checking or deleting one item, or opening a plan's roots.

use std::path::PathBuf;

use super::ReclaimErrorEntry;

/// Errors of one item's re-check or deletion.
#[derive(Debug, thiserror::Error)]
pub enum ReclaimError {
    /// The plan's id does not match its contents: it was edited or corrupted.
    #[error("plan id {found:?} does not match its items (expected {expected:?}); make a new plan")]
    PlanMismatch {
        /// The id the plan carries.
        found: String,
        /// The id its contents hash to.
        expected: String,
    },
    /// The path is not a plain absolute path with a final name (`..`, a root, empty).
    #[error("refusing {path:?}: not an absolute path ending in a plain name")]
    BadPath {
        /// The path.
        path: PathBuf,
    },
    /// The item's path does not lie strictly inside its root.
    #[error("refusing {path:?}: it is not strictly inside its root {root:?}; make a new plan")]
    OutsideRoot {
        /// The path in the plan.
        path: PathBuf,
        /// The root.
        root: PathBuf,
    },
    /// A root of the plan cannot be opened as a directory (not following a symlink).
    #[error("cannot open the root {root:?} as a directory: {source}; check that it exists and is not a symlink")]
    OpenRoot {
        /// The root.
        root: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Another reclaim holds the lock of a root for longer than the wait allowed.
    #[error(
        "another reclaim is running on the root {root:?} (waited {waited_ms} ms for it); nothing \
         was deleted: try again when it has finished"
    )]
    Busy {
        /// The root.
        root: PathBuf,
        /// How long this execute waited, milliseconds.
        waited_ms: u64,
    },
    /// Taking the lock of a root failed otherwise.
    #[error("cannot lock the root {root:?} (flock): {source}")]
    Lock {
        /// The root.
        root: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Opening a dir on the way to the item, or inside it, failed (not a symlink nor a mount: those
    /// keep the item).
    #[error("cannot open {path:?} (beneath its root, not following symlinks): {source}")]
    Open {
        /// The dir.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// While deleting, a dir inside the item turned out to be a mount point or was replaced since
    /// it was stat'ed; the deletion stopped there (part of the item may be gone).
    #[error(
        "stopped deleting at {path:?}: {what}; the rest of the item was left in place, check it \
         and reclaim again"
    )]
    ChangedWhileDeleting {
        /// The entry.
        path: PathBuf,
        /// What changed (`a filesystem is mounted there`, `replaced since it was listed`).
        what: &'static str,
    },
    /// `lstat` of the item or an entry in it failed.
    #[error("cannot stat {path:?}: {source}")]
    Stat {
        /// The entry.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Listing a dir inside the item failed (so its age cannot be checked).
    #[error("cannot list {path:?}: {source}")]
    ReadDir {
        /// The dir.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Deleting the item failed (part of it may be gone).
    #[error("cannot delete {path:?}: {source}")]
    Remove {
        /// The item.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl ReclaimError {
    /// This error as a report entry for `path` (the item, or the root for a refused plan).
    pub fn entry(&self, path: &std::path::Path) -> ReclaimErrorEntry {
        ReclaimErrorEntry {
            path: path.to_path_buf(),
            message: self.to_string(),
        }
    }
}
