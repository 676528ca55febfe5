//! Whether a root's canonical path still leads to a real dir: looked at with `lstat` only, the
//! root and every dir on its way, so a root swapped for a symbolic link (or a parent swapped for
//! one) is seen as such and never followed. The root's identity (device and inode) tells a dir
//! swapped for another dir at the same path: the watches are then on the old one
//! ([`swapped`]).

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use crate::dto::RootStatus;

/// A root dir's device and inode numbers.
pub type Identity = (u64, u64);

/// What is at a root's canonical path now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Presence {
    /// What the path leads to.
    pub status: RootStatus,
    /// The dir's device and inode when `status` is [`RootStatus::Ok`].
    pub identity: Option<Identity>,
}

/// Looks at `canonical` (a root's canonical path: no link on its way when the root was made)
/// without following any link: [`RootStatus::ReplacedByLink`] when it or a dir above it is a
/// symbolic link now, [`RootStatus::Missing`] when it is not there (or cannot be looked at),
/// [`RootStatus::NotADir`] for anything else than a dir. A handful of `lstat`s.
pub fn probe(canonical: &Path) -> Presence {
    let gone = |status| Presence {
        status,
        identity: None,
    };
    // Ancestors first: a link above the root makes every later answer about another tree.
    for dir in canonical.ancestors().skip(1) {
        if dir.as_os_str().is_empty() || dir == Path::new("/") {
            continue;
        }
        match std::fs::symlink_metadata(dir) {
            Ok(md) if md.file_type().is_symlink() => return gone(RootStatus::ReplacedByLink),
            Ok(md) if md.is_dir() => {}
            Ok(_) => return gone(RootStatus::Missing),
            Err(_) => return gone(RootStatus::Missing),
        }
    }
    match std::fs::symlink_metadata(canonical) {
        Ok(md) if md.file_type().is_symlink() => gone(RootStatus::ReplacedByLink),
        Ok(md) if md.is_dir() => Presence {
            status: RootStatus::Ok,
            identity: Some((md.dev(), md.ino())),
        },
        Ok(_) => gone(RootStatus::NotADir),
        Err(_) => gone(RootStatus::Missing),
    }
}

/// True when `now` is another dir than `was` on the same device: the root dir was replaced (moved
/// away or removed, another made or moved in). A file system mounted over the root changes the
/// device instead: that is an administrator's act, not a swap, and is left as it was (the scans
/// read through the mount).
pub fn swapped(was: Option<Identity>, now: Option<Identity>) -> bool {
    match (was, now) {
        (Some((dev, ino)), Some((dev2, ino2))) => dev == dev2 && ino != ino2,
        _ => false,
    }
}

/// What the snapshot says of a root in `status` (its `watch_error`), and the alert's text.
pub fn explain(status: RootStatus) -> &'static str {
    match status {
        RootStatus::Ok => "the root dir is there",
        RootStatus::Missing => {
            "the root dir was removed; its figures are zero and watching resumes when it comes back"
        }
        RootStatus::ReplacedByLink => {
            "the root dir was replaced by a symbolic link (or a dir on its path was), which is \
             never followed; its figures are zero and watching resumes when a real dir is back"
        }
        RootStatus::NotADir => {
            "the root path is no longer a dir; its figures are zero and watching resumes when a \
             dir is back"
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_dir_a_link_a_file_and_nothing_are_told_apart_without_following() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let md = std::fs::metadata(&root).unwrap();
        let p = probe(&root);
        assert_eq!(p.status, RootStatus::Ok);
        assert_eq!(p.identity, Some((md.dev(), md.ino())));

        // Swapped for a link to a real dir: a link, not the dir it leads to.
        let other = base.join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::rename(&root, base.join("old")).unwrap();
        std::os::unix::fs::symlink(&other, &root).unwrap();
        assert_eq!(probe(&root).status, RootStatus::ReplacedByLink);
        // A link above the root: the path leads elsewhere.
        let parent = base.join("parent");
        std::fs::create_dir_all(parent.join("root")).unwrap();
        let inner = parent.join("root");
        assert_eq!(probe(&inner).status, RootStatus::Ok);
        std::fs::rename(&parent, base.join("parent-old")).unwrap();
        std::os::unix::fs::symlink(base.join("parent-old"), &parent).unwrap();
        assert_eq!(probe(&inner).status, RootStatus::ReplacedByLink);

        std::fs::remove_file(&root).unwrap();
        assert_eq!(probe(&root).status, RootStatus::Missing);
        std::fs::write(&root, b"x").unwrap();
        assert_eq!(probe(&root).status, RootStatus::NotADir);
        // Another dir at the same path: another identity.
        std::fs::remove_file(&root).unwrap();
        std::fs::create_dir(&root).unwrap();
        let again = probe(&root);
        assert_eq!(again.status, RootStatus::Ok);
        assert_ne!(again.identity, p.identity);
        assert!(swapped(p.identity, again.identity));
        assert!(!swapped(p.identity, p.identity));
        let (dev, ino) = again.identity.unwrap();
        assert!(!swapped(Some((dev, ino)), Some((dev + 1, ino + 1))));
        assert!(!swapped(None, again.identity));
    }
}
