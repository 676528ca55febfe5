//! The re-measure walk of one item just before deleting it: one pass that yields its allocated
//! bytes and its newest mtime, never following symlinks.

use std::collections::HashSet;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::RwLock;
use std::time::SystemTime;

use super::ReclaimError;

/// What one walk of an item found.
#[derive(Debug, Default)]
pub(super) struct Remeasure {
    /// Allocated bytes (`st_blocks * 512`) of entries with one link.
    pub single_link_bytes: u64,
    /// Non-dir entries with more than one link, or with one link left but seen with more by an
    /// earlier walk (its other link was deleted meanwhile), one per link met: the caller counts
    /// an inode as freed only when every one of its links was met in deleted items.
    pub multi_link: Vec<LinkSeen>,
    /// Newest mtime of any entry, the item itself included.
    pub newest_mtime: Option<SystemTime>,
    /// An entry on another device than the item (a mount point inside it).
    pub other_device: bool,
}

/// One link of a multi-link inode met by a walk.
#[derive(Debug, Clone, Copy)]
pub(super) struct LinkSeen {
    /// Device of the inode.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Allocated bytes of the inode (`st_blocks * 512`).
    pub allocated_bytes: u64,
    /// `st_nlink` when this walk stat'ed it.
    pub nlink: u64,
}

/// Inodes that any walk of one execute saw with more than one link. Shared by the parallel walks,
/// so an inode whose other link was deleted before this walk still counts once.
#[derive(Debug, Default)]
pub(super) struct LinkedInodes(RwLock<HashSet<(u64, u64)>>);

impl LinkedInodes {
    fn note(&self, key: (u64, u64)) {
        let mut set = self.0.write().unwrap_or_else(|e| e.into_inner());
        set.insert(key);
    }

    fn contains(&self, key: (u64, u64)) -> bool {
        let set = self.0.read().unwrap_or_else(|e| e.into_inner());
        !set.is_empty() && set.contains(&key)
    }
}

impl Remeasure {
    fn add(&mut self, md: &Metadata, item_dev: u64, linked: &LinkedInodes) {
        let bytes = md.blocks() * 512;
        let key = (md.dev(), md.ino());
        let multi = !md.is_dir()
            && if md.nlink() > 1 {
                linked.note(key);
                true
            } else {
                linked.contains(key)
            };
        if multi {
            self.multi_link.push(LinkSeen {
                dev: key.0,
                ino: key.1,
                allocated_bytes: bytes,
                nlink: md.nlink(),
            });
        } else {
            self.single_link_bytes += bytes;
        }
        if let Ok(m) = md.modified() {
            self.newest_mtime = Some(self.newest_mtime.map_or(m, |n| n.max(m)));
        }
        if md.dev() != item_dev {
            self.other_device = true;
        }
    }
}

/// Walks the item at `path` whose `lstat` is `top`. Entries that vanish during the walk are left
/// out (their parent's mtime shows the change).
///
/// # Errors
/// [`ReclaimError::ReadDir`] when a dir in the item cannot be listed and [`ReclaimError::Stat`]
/// when an entry cannot be stat'ed (other than `NotFound`): its age cannot be known.
pub(super) fn remeasure(
    path: &Path,
    top: &Metadata,
    linked: &LinkedInodes,
) -> Result<Remeasure, ReclaimError> {
    let mut out = Remeasure::default();
    out.add(top, top.dev(), linked);
    if top.is_dir() {
        walk_dir(path, top.dev(), linked, &mut out)?;
    }
    Ok(out)
}

fn walk_dir(
    dir: &Path,
    item_dev: u64,
    linked: &LinkedInodes,
    out: &mut Remeasure,
) -> Result<(), ReclaimError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(ReclaimError::ReadDir {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    for entry in entries {
        let entry = entry.map_err(|source| ReclaimError::ReadDir {
            path: dir.to_path_buf(),
            source,
        })?;
        // `DirEntry::metadata` does not follow symlinks (fstatat with AT_SYMLINK_NOFOLLOW).
        let md = match entry.metadata() {
            Ok(md) => md,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(ReclaimError::Stat {
                    path: entry.path(),
                    source,
                })
            }
        };
        out.add(&md, item_dev, linked);
        if md.is_dir() && md.dev() == item_dev {
            walk_dir(&entry.path(), item_dev, linked, out)?;
        }
    }
    Ok(())
}
