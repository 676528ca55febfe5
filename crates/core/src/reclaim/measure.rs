//! The re-measure walk of one item just before deleting it: one pass, relative to the item's dir
//! fd, that yields its allocated bytes and its newest mtime, never following symlinks and never
//! descending into a mount.

use std::collections::{HashMap, HashSet};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::SystemTime;

use super::beneath::{walk_beneath, Step};
use super::tree::{open_child, ChildDir};
use super::{DeletedItem, ReclaimError};
use crate::platform::{EntryStat, FileKind, MountId};

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
    /// Newest access time of any file (not dir: listing a dir, as every scan does, marks it read)
    /// inside the item: a cache's last use.
    pub newest_atime: Option<SystemTime>,
    /// The first mount point met inside the item (another device or mount id); the walk stops
    /// there.
    pub mount_inside: Option<PathBuf>,
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
    fn add(&mut self, st: &EntryStat, linked: &LinkedInodes) {
        let key = (st.dev, st.ino);
        let multi = st.kind != FileKind::Dir
            && if st.nlink > 1 {
                linked.note(key);
                true
            } else {
                linked.contains(key)
            };
        if multi {
            self.multi_link.push(LinkSeen {
                dev: key.0,
                ino: key.1,
                allocated_bytes: st.allocated_bytes,
                nlink: st.nlink,
            });
        } else {
            self.single_link_bytes += st.allocated_bytes;
        }
        if let Some(m) = st.mtime {
            self.newest_mtime = Some(self.newest_mtime.map_or(m, |n| n.max(m)));
        }
        if let (FileKind::Other, Some(a)) = (st.kind, st.atime) {
            self.newest_atime = Some(self.newest_atime.map_or(a, |n| n.max(a)));
        }
    }
}

/// The item's device and mount: anything inside on another one is a mount point.
#[derive(Debug, Clone)]
pub(super) struct Fence {
    /// Device of the item.
    pub dev: u64,
    /// Mount of the item.
    pub mount: MountId,
}

impl Fence {
    /// True when `st` lies on another device or mount than the item.
    pub fn crossed_by(&self, st: &EntryStat) -> bool {
        st.dev != self.dev || st.mount.as_ref().is_some_and(|m| *m != self.mount)
    }
}

/// Walks the item whose `lstat` is `top`: `dir` is its open dir fd (`None` for a file or symlink),
/// `path` its path (for messages). Entries that vanish during the walk are left out (their
/// parent's mtime shows the change).
///
/// # Errors
/// [`ReclaimError::ReadDir`] when a dir in the item cannot be listed, [`ReclaimError::Stat`] when
/// an entry cannot be stat'ed and [`ReclaimError::Open`] when a dir inside cannot be opened (other
/// than `NotFound`): its age cannot be known.
pub(super) fn remeasure(
    dir: Option<BorrowedFd<'_>>,
    path: &Path,
    top: &EntryStat,
    fence: &Fence,
    linked: &LinkedInodes,
) -> Result<Remeasure, ReclaimError> {
    let mut out = Remeasure::default();
    out.add(top, linked);
    if let Some(dir) = dir {
        walk_dir(dir, path, fence, linked, &mut out)?;
    }
    Ok(out)
}

/// [`remeasure`]'s walk below the item's dir: any depth, a bounded number of fds
/// ([`walk_beneath`]).
fn walk_dir(
    dir: BorrowedFd<'_>,
    path: &Path,
    fence: &Fence,
    linked: &LinkedInodes,
    out: &mut Remeasure,
) -> Result<(), ReclaimError> {
    walk_beneath(
        dir,
        path,
        fence,
        |here, name, child_path, st| {
            if fence.crossed_by(st) {
                out.mount_inside = Some(child_path.to_path_buf());
                return Ok(Step::Stop);
            }
            out.add(st, linked);
            if st.kind != FileKind::Dir {
                return Ok(Step::Next);
            }
            match open_child(here, name, child_path, st, fence)? {
                ChildDir::Open(fd) => Ok(Step::Enter(fd)),
                ChildDir::Gone => Ok(Step::Next),
                ChildDir::Mount => {
                    out.mount_inside = Some(child_path.to_path_buf());
                    Ok(Step::Stop)
                }
                ChildDir::Replaced => Err(ReclaimError::Stat {
                    path: child_path.to_path_buf(),
                    source: std::io::Error::other("replaced while it was being measured"),
                }),
            }
        },
        |_, _, _| Ok(()),
    )
}

/// Adds to each deleted item the bytes of the multi-link inodes it freed: an inode whose links
/// met in deleted items number at least the highest `st_nlink` any walk saw (the first walk of it
/// ran before any of those links went), counted in the first item (in `deleted`'s order) holding
/// one of its links.
pub(super) fn add_freed_links(deleted: &mut [(usize, DeletedItem, Vec<LinkSeen>)]) {
    // (dev, ino) -> (links met, highest nlink seen)
    let mut links: HashMap<(u64, u64), (u64, u64)> = HashMap::new();
    for l in deleted.iter().flat_map(|(_, _, ls)| ls) {
        let e = links.entry((l.dev, l.ino)).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.max(l.nlink);
    }
    let mut counted: HashSet<(u64, u64)> = HashSet::new();
    for (_, d, ls) in deleted.iter_mut() {
        for l in ls.iter() {
            let key = (l.dev, l.ino);
            let all_met = links.get(&key).is_some_and(|(met, nlink)| met >= nlink);
            if all_met && counted.insert(key) {
                d.allocated_bytes += l.allocated_bytes;
            }
        }
    }
}
