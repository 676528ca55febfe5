//! Everything execute does to the filesystem, relative to file descriptors: each root is opened
//! once (and locked), each item is reached from its root's fd one dir at a time without following
//! symlinks or crossing mounts ([`crate::platform::open_dir_beneath`]), and a subtree is removed
//! with `unlinkat` relative to its parent's fd. A path swapped for a symlink, or an ancestor
//! exchanged with another dir, after the check cannot redirect a deletion outside the dir the
//! check saw.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::measure::Fence;
use super::ReclaimError;
use crate::platform::{EntryStat, MountId};

/// How often a busy root lock is tried again while waiting.
const LOCK_RETRY: Duration = Duration::from_millis(50);

/// A root opened once for a whole execute, locked against other reclaims.
#[derive(Debug)]
pub(super) struct RootDir {
    /// The canonical path it was opened at.
    pub path: PathBuf,
    /// `O_DIRECTORY | O_NOFOLLOW` fd of the root; holds the `flock`.
    pub fd: OwnedFd,
    /// Device and mount of the root.
    pub fence: Fence,
}

impl RootDir {
    /// Opens `path` (its last component must not be a symlink), `Ok(None)` when it is gone.
    ///
    /// # Errors
    /// [`ReclaimError::OpenRoot`] when it cannot be opened as a directory.
    pub fn open(path: &Path) -> Result<Option<RootDir>, ReclaimError> {
        let err = |source: std::io::Error| ReclaimError::OpenRoot {
            root: path.to_path_buf(),
            source,
        };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(err(e.into())),
        };
        let st = crate::platform::stat_fd(fd.as_fd()).map_err(err)?;
        let mount = crate::platform::mount_id(fd.as_fd()).map_err(err)?;
        Ok(Some(RootDir {
            path: path.to_path_buf(),
            fd,
            fence: Fence { dev: st.dev, mount },
        }))
    }

    /// Takes an exclusive `flock` on the root's own fd (no file is created in the user's dir),
    /// waiting up to `wait` for another reclaim to release it. Released when the fd closes.
    ///
    /// # Errors
    /// [`ReclaimError::Busy`] when still held after `wait`; [`ReclaimError::Lock`] when `flock`
    /// fails otherwise.
    pub fn lock(&self, wait: Duration) -> Result<(), ReclaimError> {
        let start = Instant::now();
        let mut told = false;
        loop {
            match rustix::fs::flock(&self.fd, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(()),
                Err(Errno::WOULDBLOCK) if start.elapsed() < wait => {
                    if !told {
                        told = true;
                        tracing::info!(
                            root = %self.path.display(),
                            wait_ms = wait.as_millis() as u64,
                            "another reclaim holds the root; waiting for it"
                        );
                    }
                    std::thread::sleep(LOCK_RETRY.min(wait.saturating_sub(start.elapsed())));
                }
                Err(Errno::WOULDBLOCK) => {
                    return Err(ReclaimError::Busy {
                        root: self.path.clone(),
                        waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                    })
                }
                Err(e) => {
                    return Err(ReclaimError::Lock {
                        root: self.path.clone(),
                        source: e.into(),
                    })
                }
            }
        }
    }
}

/// An item's parent dir (opened beneath the root) and its own name and `lstat` through that fd.
pub(super) struct Located {
    /// The parent dir (the root's own fd when the item lies directly in the root).
    pub parent: Option<OwnedFd>,
    /// The item's name in the parent.
    pub name: OsString,
    /// `lstat` of the item through the parent fd.
    pub stat: EntryStat,
}

/// Where walking to an item ended.
pub(super) enum Walk {
    /// Found: parent fd, name and stat.
    Found(Located),
    /// A component or the item itself is gone.
    Gone,
    /// A component on the way is now a symlink, not a dir, or a mount point (the OS error says
    /// which).
    Diverted(std::io::Error),
}

/// The item's path relative to its root: plain components, at least one.
///
/// # Errors
/// [`ReclaimError::BadPath`] for a path that is relative or has `.`/`..`;
/// [`ReclaimError::OutsideRoot`] when it is not strictly inside `root`.
pub(super) fn relative<'a>(path: &'a Path, root: &Path) -> Result<&'a Path, ReclaimError> {
    let plain = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain {
        return Err(ReclaimError::BadPath {
            path: path.to_path_buf(),
        });
    }
    match path.strip_prefix(root) {
        Ok(rel) if root.is_absolute() && rel.components().next().is_some() => Ok(rel),
        _ => Err(ReclaimError::OutsideRoot {
            path: path.to_path_buf(),
            root: root.to_path_buf(),
        }),
    }
}

/// Walks from `root` to the item at `rel` (see [`relative`]) and stats it through its parent fd.
///
/// # Errors
/// [`ReclaimError::Open`] when a dir on the way cannot be opened for another reason than being
/// gone, a symlink, a non-dir or a mount; [`ReclaimError::Stat`] when the item cannot be stat'ed.
pub(super) fn locate(root: &RootDir, rel: &Path, path: &Path) -> Result<Walk, ReclaimError> {
    let name = rel.file_name().map(OsString::from).unwrap_or_default();
    let parent = match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        None => None,
        Some(dirs) => match crate::platform::open_dir_beneath(root.fd.as_fd(), dirs) {
            Ok(fd) => Some(fd),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Walk::Gone),
            Err(e) if diverted(&e) => return Ok(Walk::Diverted(e)),
            Err(source) => {
                return Err(ReclaimError::Open {
                    path: root.path.join(dirs),
                    source,
                })
            }
        },
    };
    let dir = parent.as_ref().map_or(root.fd.as_fd(), AsFd::as_fd);
    match crate::platform::stat_at(dir, &name) {
        Ok(stat) => Ok(Walk::Found(Located { parent, name, stat })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Walk::Gone),
        Err(source) => Err(ReclaimError::Stat {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// True for the errors of a path that no longer is a plain dir path beneath its root: a symlink
/// (`ELOOP`), not a dir (`ENOTDIR`), a mount point or an escape (`EXDEV`).
pub(super) fn diverted(e: &std::io::Error) -> bool {
    matches!(
        Errno::from_io_error(e),
        Some(Errno::LOOP | Errno::NOTDIR | Errno::XDEV)
    )
}

/// The names in the dir `dir` (`.` and `..` left out), read through a fresh fd of `.` (a `dup`
/// would share the read offset of earlier listings).
///
/// # Errors
/// [`ReclaimError::ReadDir`] naming `path`.
pub(super) fn list_dir(dir: BorrowedFd<'_>, path: &Path) -> Result<Vec<OsString>, ReclaimError> {
    let err = |e: Errno| ReclaimError::ReadDir {
        path: path.to_path_buf(),
        source: e.into(),
    };
    let mut entries = rustix::fs::Dir::read_from(dir).map_err(err)?;
    let mut names = Vec::new();
    while let Some(entry) = entries.read() {
        let entry = entry.map_err(err)?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsString::from(std::ffi::OsStr::from_bytes(name)));
        }
    }
    Ok(names)
}

/// What opening a subdir found.
pub(super) enum ChildDir {
    /// Opened, and it is the dir that was stat'ed.
    Open(OwnedFd),
    /// Gone meanwhile.
    Gone,
    /// A mount point (another device or mount id, or `openat2` refused to cross it).
    Mount,
    /// No longer the dir that was stat'ed (replaced by another dir, a symlink or a file).
    Replaced,
}

/// Opens the subdir `name` of `dir` whose `lstat` was `st`, checking through the new fd that it is
/// the same inode on the same mount.
///
/// # Errors
/// [`ReclaimError::Open`] naming `path` for other failures.
pub(super) fn open_child(
    dir: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    path: &Path,
    st: &EntryStat,
    fence: &Fence,
) -> Result<ChildDir, ReclaimError> {
    let fd = match crate::platform::open_dir_beneath(dir, Path::new(name)) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ChildDir::Gone),
        Err(e) if Errno::from_io_error(&e) == Some(Errno::XDEV) => return Ok(ChildDir::Mount),
        Err(e) if diverted(&e) => return Ok(ChildDir::Replaced),
        Err(source) => {
            return Err(ReclaimError::Open {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let open = crate::platform::stat_fd(fd.as_fd()).map_err(|source| ReclaimError::Stat {
        path: path.to_path_buf(),
        source,
    })?;
    let mount: MountId =
        crate::platform::mount_id(fd.as_fd()).map_err(|source| ReclaimError::Stat {
            path: path.to_path_buf(),
            source,
        })?;
    if open.dev != fence.dev || mount != fence.mount {
        return Ok(ChildDir::Mount);
    }
    if open.ino != st.ino {
        return Ok(ChildDir::Replaced);
    }
    Ok(ChildDir::Open(fd))
}

/// `unlinkat(dir, name)` (`AT_REMOVEDIR` for a dir); `Ok(false)` when it was already gone.
///
/// # Errors
/// [`ReclaimError::Remove`] naming `path`.
pub(super) fn unlink(
    dir: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    is_dir: bool,
    path: &Path,
) -> Result<bool, ReclaimError> {
    let flags = if is_dir {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    match rustix::fs::unlinkat(dir, name, flags) {
        Ok(()) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(ReclaimError::Remove {
            path: path.to_path_buf(),
            source: e.into(),
        }),
    }
}
