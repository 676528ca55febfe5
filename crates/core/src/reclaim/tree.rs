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
use crate::platform::{EntryStat, FileKind, MountId};

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

/// The most subdir fds [`walk_beneath`] holds open at once. Deeper, the fds of the levels nearest
/// the item are closed and each is opened again, through `..` of the level below it, when the walk
/// comes back to it: a chain of any depth is walked with a bounded number of fds and without
/// recursion (a chain of 100,000 dirs, possible with relative `mkdir`s, would overflow a stack).
/// Execute walks one item per thread of its pool, so a process holds about 10 fds per thread for
/// this whatever its items' depth (with 256 fds, macOS's default, and 16 threads: 160). Items are
/// rarely deeper than 8 levels; deeper ones pay one `openat` and one `fstat` per level on the way
/// back.
const MAX_HELD_FDS: usize = 8;

/// One dir of a [`walk_beneath`].
struct Level {
    /// Its fd; `None` for the item's own dir (the caller's fd) and for a level whose fd was closed
    /// to stay under [`MAX_HELD_FDS`].
    fd: Option<OwnedFd>,
    /// Its name in the level above (unused for the item's own dir).
    name: OsString,
    /// Its path, for messages.
    path: PathBuf,
    /// Its inode, checked when the dir is opened again.
    ino: u64,
    /// The names still to visit in it.
    names: Vec<OsString>,
}

/// What a visitor of [`walk_beneath`] does after an entry.
pub(super) enum Step {
    /// Go on with the next entry.
    Next,
    /// Walk into this dir (opened by the visitor, with [`open_child`]), then go on.
    Enter(OwnedFd),
    /// End the walk here.
    Stop,
}

/// Walks everything inside the dir `dir` (at `path`, for messages), depth first, iteratively, with
/// at most [`MAX_HELD_FDS`] subdir fds open (plus one while a dir is listed). `visit(parent fd,
/// name, path, lstat)` is called for each entry (entries gone before their `lstat` are skipped);
/// `leave(parent fd, name, path)` after each dir entered was walked to its end. A level whose fd
/// was closed is opened again through `..` of the level below it and must be the same inode on
/// the same device and mount, exactly what a held fd would be (a dir moved meanwhile is followed
/// either way).
///
/// # Errors
/// The visitor's and `leave`'s errors; [`ReclaimError::Stat`] when an entry cannot be stat'ed,
/// [`ReclaimError::ReadDir`] when a dir cannot be listed, [`ReclaimError::ChangedWhileDeleting`]
/// when a closed level is no longer the same dir.
pub(super) fn walk_beneath(
    dir: BorrowedFd<'_>,
    path: &Path,
    fence: &Fence,
    mut visit: impl FnMut(
        BorrowedFd<'_>,
        &std::ffi::OsStr,
        &Path,
        &EntryStat,
    ) -> Result<Step, ReclaimError>,
    mut leave: impl FnMut(BorrowedFd<'_>, &std::ffi::OsStr, &Path) -> Result<(), ReclaimError>,
) -> Result<(), ReclaimError> {
    let mut levels = vec![Level {
        fd: None,
        name: OsString::new(),
        path: path.to_path_buf(),
        ino: 0,
        names: list_dir(dir, path)?,
    }];
    let mut held = 0usize;
    loop {
        let depth = levels.len() - 1;
        let Some(name) = levels[depth].names.pop() else {
            // This level is walked: leave it, in the level above (opened again if need be).
            if depth == 0 {
                return Ok(());
            }
            let done = levels.pop().unwrap_or_else(|| unreachable!("depth > 0"));
            let above = depth - 1;
            if above > 0 && levels[above].fd.is_none() {
                let fd = reopen_parent(&done, &levels[above], fence)?;
                levels[above].fd = Some(fd);
                held += 1;
            }
            if done.fd.is_some() {
                held -= 1;
            }
            drop(done.fd);
            leave(fd_of(&levels, above, dir), &done.name, &done.path)?;
            continue;
        };
        let here = fd_of(&levels, depth, dir);
        let child_path = levels[depth].path.join(&name);
        let st = match crate::platform::stat_at(here, &name) {
            Ok(st) => st,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(ReclaimError::Stat {
                    path: child_path,
                    source,
                })
            }
        };
        let fd = match visit(here, &name, &child_path, &st)? {
            Step::Next => continue,
            Step::Stop => return Ok(()),
            Step::Enter(fd) => fd,
        };
        let names = list_dir(fd.as_fd(), &child_path)?;
        if held == MAX_HELD_FDS {
            // Close the fd held nearest the item; the walk opens it again on its way back.
            if let Some(l) = levels.iter_mut().skip(1).find(|l| l.fd.is_some()) {
                l.fd = None;
                held -= 1;
            }
        }
        held += 1;
        levels.push(Level {
            fd: Some(fd),
            name,
            path: child_path,
            ino: st.ino,
            names,
        });
    }
}

/// Removes everything inside the dir `dir` (at `path`, for messages), depth first, with `unlinkat`
/// relative to each entry's parent fd; never follows a symlink (the link is removed) and stops at
/// a mount point or a dir replaced since it was stat'ed. Entries already gone are skipped. Any
/// depth, with a bounded number of fds ([`walk_beneath`]).
///
/// # Errors
/// [`ReclaimError::ChangedWhileDeleting`] at a mount point or a replaced dir;
/// [`ReclaimError::Remove`], [`ReclaimError::Stat`], [`ReclaimError::ReadDir`],
/// [`ReclaimError::Open`] for the failing entry.
pub(super) fn remove_contents(
    dir: BorrowedFd<'_>,
    path: &Path,
    fence: &Fence,
) -> Result<(), ReclaimError> {
    let mount = |path: &Path| ReclaimError::ChangedWhileDeleting {
        path: path.to_path_buf(),
        what: "a filesystem is mounted there",
    };
    walk_beneath(
        dir,
        path,
        fence,
        |here, name, child_path, st| {
            if fence.crossed_by(st) {
                return Err(mount(child_path));
            }
            if st.kind != FileKind::Dir {
                unlink(here, name, false, child_path)?;
                return Ok(Step::Next);
            }
            match open_child(here, name, child_path, st, fence)? {
                ChildDir::Open(fd) => Ok(Step::Enter(fd)),
                ChildDir::Gone => Ok(Step::Next),
                ChildDir::Mount => Err(mount(child_path)),
                ChildDir::Replaced => Err(ReclaimError::ChangedWhileDeleting {
                    path: child_path.to_path_buf(),
                    what: "replaced since it was listed",
                }),
            }
        },
        |parent, name, dir_path| unlink(parent, name, true, dir_path).map(drop),
    )
}

/// The fd of level `i`: the caller's `dir` for the item's own dir (level 0). Only the deepest level
/// and a level just opened again are asked for, and both hold their fd.
fn fd_of<'a>(levels: &'a [Level], i: usize, dir: BorrowedFd<'a>) -> BorrowedFd<'a> {
    match (i, levels[i].fd.as_ref()) {
        (0, _) => dir,
        (_, Some(fd)) => fd.as_fd(),
        (_, None) => unreachable!("level {i} is used with its fd closed"),
    }
}

/// Opens `above` again through `..` of `below` (a level just emptied, its fd still open), checking
/// that it is the same dir: same inode, same device and mount.
///
/// # Errors
/// [`ReclaimError::ChangedWhileDeleting`] when `..` is another dir now;
/// [`ReclaimError::Open`] or [`ReclaimError::Stat`] when it cannot be opened or stat'ed.
fn reopen_parent(below: &Level, above: &Level, fence: &Fence) -> Result<OwnedFd, ReclaimError> {
    let Some(from) = below.fd.as_ref() else {
        unreachable!("a level below a closed one holds its fd");
    };
    let open = |source: Errno| ReclaimError::Open {
        path: above.path.clone(),
        source: source.into(),
    };
    let fd = rustix::fs::openat(
        from,
        "..",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(open)?;
    let stat = |source| ReclaimError::Stat {
        path: above.path.clone(),
        source,
    };
    let st = crate::platform::stat_fd(fd.as_fd()).map_err(stat)?;
    let mount = crate::platform::mount_id(fd.as_fd()).map_err(stat)?;
    if st.ino != above.ino || st.dev != fence.dev || mount != fence.mount {
        return Err(ReclaimError::ChangedWhileDeleting {
            path: above.path.clone(),
            what: "moved while its contents were removed",
        });
    }
    Ok(fd)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn open_dir(at: BorrowedFd<'_>, name: &str) -> OwnedFd {
        rustix::fs::openat(
            at,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    /// A chain of 3,000 dirs (a path of 6,000 bytes, past `PATH_MAX`: made with `mkdirat` one
    /// level at a time), a file every 100 levels, 40 files and a symlink to a file outside at the
    /// bottom: everything inside the item's dir goes (a hand count of what is left: nothing), the
    /// item's dir stays, the link's target outside stays.
    #[test]
    fn a_chain_deeper_than_path_max_and_the_fds_held_is_removed_whole() {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        let item = t.path().join("item");
        std::fs::create_dir(&item).unwrap();
        let top = open_dir(rustix::fs::CWD, item.to_str().unwrap());
        let mut at = open_dir(top.as_fd(), ".");
        for level in 0..3000 {
            rustix::fs::mkdirat(&at, "d", Mode::from_raw_mode(0o755)).unwrap();
            if level % 100 == 0 {
                let f = rustix::fs::openat(
                    &at,
                    "f",
                    OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o644),
                )
                .unwrap();
                rustix::io::write(&f, b"data").unwrap();
            }
            at = open_dir(at.as_fd(), "d");
        }
        for i in 0..40 {
            let name = format!("f{i}");
            rustix::fs::openat(
                &at,
                name.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )
            .unwrap();
        }
        rustix::fs::symlinkat(outside.to_str().unwrap(), &at, "link").unwrap();
        drop(at);
        let st = crate::platform::stat_fd(top.as_fd()).unwrap();
        let fence = Fence {
            dev: st.dev,
            mount: crate::platform::mount_id(top.as_fd()).unwrap(),
        };
        remove_contents(top.as_fd(), &item, &fence).unwrap();
        assert_eq!(std::fs::read_dir(&item).unwrap().count(), 0);
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
    }

    /// A level whose fd was closed is opened again through `..` of the level below it only while
    /// that is still the same dir: once the level below was moved under another dir, its `..` is
    /// another inode and the error names the level.
    #[test]
    fn a_closed_level_is_opened_again_only_while_it_is_the_same_dir() {
        let t = tempfile::tempdir().unwrap();
        let item = t.path().join("item");
        std::fs::create_dir_all(item.join("a/d")).unwrap();
        let top = open_dir(rustix::fs::CWD, item.to_str().unwrap());
        let st = crate::platform::stat_fd(top.as_fd()).unwrap();
        let fence = Fence {
            dev: st.dev,
            mount: crate::platform::mount_id(top.as_fd()).unwrap(),
        };
        let mut levels = Vec::new();
        let a = open_dir(top.as_fd(), "a");
        let a_ino = crate::platform::stat_fd(a.as_fd()).unwrap().ino;
        levels.push(Level {
            fd: None,
            name: "a".into(),
            path: item.join("a"),
            ino: a_ino,
            names: Vec::new(),
        });
        let d = open_dir(a.as_fd(), "d");
        let d_ino = crate::platform::stat_fd(d.as_fd()).unwrap().ino;
        let below = Level {
            fd: Some(d),
            name: "d".into(),
            path: item.join("a/d"),
            ino: d_ino,
            names: Vec::new(),
        };
        // Same dir: opened again.
        let again = reopen_parent(&below, &levels[0], &fence).unwrap();
        assert_eq!(crate::platform::stat_fd(again.as_fd()).unwrap().ino, a_ino);
        // `a/d` moved under another dir: its `..` is no longer `a`.
        std::fs::create_dir(item.join("other")).unwrap();
        std::fs::rename(item.join("a/d"), item.join("other/d")).unwrap();
        let err = reopen_parent(&below, &levels[0], &fence).unwrap_err();
        assert!(
            matches!(&err, ReclaimError::ChangedWhileDeleting { path, .. } if *path == item.join("a")),
            "{err:?}"
        );
    }
}
