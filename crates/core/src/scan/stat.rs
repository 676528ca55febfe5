//! The filesystem boundary of the scanner: `lstat` of a path, what an I/O error means for a scan,
//! and the set of hard-linked inodes already counted. (Listed entries are `lstat`ed relative to
//! their dir's fd: [`crate::platform::scan_stat_at`].)

use std::collections::HashSet;
use std::fs::Metadata;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use crate::inventory::{IssueKind, ScanIssue};
use crate::platform::ScanStat;

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
    pub(crate) fn first_sight(&self, st: &ScanStat) -> bool {
        if st.is_dir() || st.nlink <= 1 {
            return true;
        }
        let key = (st.dev, st.ino);
        let shard = &self.shards[(st.ino % SHARDS) as usize];
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
    fn a_path_deleted_before_its_stat_is_vanished_not_an_issue() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("kept"), b"xy").unwrap();
        match stat_path(&dir.path().join("kept")) {
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
        let st = |p: &Path| ScanStat::of(&std::fs::symlink_metadata(p).unwrap());
        let md_a = st(&a);
        let md_b = st(&dir.path().join("b"));
        let md_c = st(&dir.path().join("c"));
        assert!(links.first_sight(&md_a));
        assert!(!links.first_sight(&md_b));
        assert!(!links.first_sight(&md_a));
        assert!(links.first_sight(&md_c));
        assert!(links.first_sight(&md_c));
    }
}
