//! The filesystem boundary of the scanner: `lstat` of one entry, what an I/O error means for a scan,
//! and the set of hard-linked inodes already counted.

use std::collections::HashSet;
use std::fs::{DirEntry, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::inventory::{IssueKind, ScanIssue};

/// What `lstat` of one entry gave.
#[derive(Debug)]
pub(crate) enum Stat {
    /// The entry's own metadata (symlinks not followed).
    Found(Metadata),
    /// The entry vanished between listing and stat (`NotFound`): counted, not an issue.
    Vanished,
    /// The entry could not be stat'ed: reported, left out of the totals.
    Failed(ScanIssue),
}

/// `lstat` of a listed entry, relative to its dir's fd (`statx`/`fstatat` on Linux).
pub(crate) fn stat_entry(entry: &DirEntry) -> Stat {
    match entry.metadata() {
        Ok(md) => Stat::Found(md),
        Err(e) => match failure(&entry.path(), "lstat", e) {
            Some(issue) => Stat::Failed(issue),
            None => Stat::Vanished,
        },
    }
}

/// `lstat` of a path (the root, or an item the watcher asks about).
pub(crate) fn stat_path(path: &Path) -> Stat {
    match std::fs::symlink_metadata(path) {
        Ok(md) => Stat::Found(md),
        Err(e) => match failure(path, "lstat", e) {
            Some(issue) => Stat::Failed(issue),
            None => Stat::Vanished,
        },
    }
}

/// Turns an I/O error of `op` on `path` into a scan issue; `None` when it means the entry vanished
/// (`NotFound`), which is counted rather than reported.
pub(crate) fn failure(path: &Path, op: &str, e: io::Error) -> Option<ScanIssue> {
    let kind = match e.kind() {
        io::ErrorKind::NotFound => return None,
        io::ErrorKind::PermissionDenied => IssueKind::PermissionDenied,
        _ => IssueKind::Io,
    };
    Some(ScanIssue {
        path: path.to_path_buf(),
        kind,
        message: format!("{op}: {e}"),
    })
}

/// The birth time of an entry where the OS records one (`statx` btime on Linux, `st_birthtime` on
/// macOS); `None` elsewhere (then callers use the oldest mtime of the subtree).
pub(crate) fn birth_time(md: &Metadata) -> Option<SystemTime> {
    md.created().ok()
}

/// Hard-linked inodes (non-directories with `st_nlink > 1`) already counted in this scan, keyed by
/// `(st_dev, st_ino)`, so each is counted once (`du` semantics). Sharded to keep lock contention low.
pub(crate) struct LinkSet {
    shards: Vec<Mutex<HashSet<(u64, u64)>>>,
}

const SHARDS: u64 = 16;

impl LinkSet {
    pub(crate) fn new() -> LinkSet {
        LinkSet {
            shards: (0..SHARDS).map(|_| Mutex::new(HashSet::new())).collect(),
        }
    }

    /// True when this entry's bytes are to be counted: it is a dir, has one link, or is the first
    /// link of its inode seen in this scan.
    pub(crate) fn first_sight(&self, md: &Metadata) -> bool {
        if md.is_dir() || md.nlink() <= 1 {
            return true;
        }
        let key = (md.dev(), md.ino());
        let shard = &self.shards[(md.ino() % SHARDS) as usize];
        // A poisoned shard only means another walker thread panicked mid-insert; the set is still
        // usable for counting.
        let mut set = shard.lock().unwrap_or_else(|p| p.into_inner());
        set.insert(key)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn entry_deleted_between_listing_and_stat_is_vanished_not_an_issue() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("gone"), b"x").unwrap();
        std::fs::write(dir.path().join("kept"), b"xy").unwrap();
        let mut entries: Vec<DirEntry> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        entries.sort_by_key(|e| e.file_name());
        std::fs::remove_file(dir.path().join("gone")).unwrap();
        assert!(matches!(stat_entry(&entries[0]), Stat::Vanished));
        match stat_entry(&entries[1]) {
            Stat::Found(md) => assert_eq!(md.len(), 2),
            other => panic!("expected kept to be found, got {other:?}"),
        }
        assert!(matches!(
            stat_path(&dir.path().join("gone")),
            Stat::Vanished
        ));
    }

    #[test]
    fn errors_other_than_not_found_become_issues_naming_the_path() {
        let p = Path::new("/x/y");
        let denied = io::Error::from_raw_os_error(libc::EACCES);
        let issue = failure(p, "read dir", denied).unwrap();
        assert_eq!(issue.kind, IssueKind::PermissionDenied);
        assert_eq!(issue.path, p);
        assert!(issue.message.starts_with("read dir: "), "{}", issue.message);
        let eio = io::Error::from_raw_os_error(libc::EIO);
        assert_eq!(failure(p, "lstat", eio).unwrap().kind, IssueKind::Io);
        let enoent = io::Error::from_raw_os_error(libc::ENOENT);
        assert!(failure(p, "lstat", enoent).is_none());
    }

    #[test]
    fn a_hard_linked_inode_is_counted_once_a_single_link_always() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, b"data").unwrap();
        std::fs::hard_link(&a, dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("c"), b"single").unwrap();
        let links = LinkSet::new();
        let md_a = std::fs::symlink_metadata(&a).unwrap();
        let md_b = std::fs::symlink_metadata(dir.path().join("b")).unwrap();
        let md_c = std::fs::symlink_metadata(dir.path().join("c")).unwrap();
        assert!(links.first_sight(&md_a));
        assert!(!links.first_sight(&md_b));
        assert!(!links.first_sight(&md_a));
        assert!(links.first_sight(&md_c));
        assert!(links.first_sight(&md_c));
    }
}
