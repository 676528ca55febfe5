//! Walking everything beneath an item's dir, relative to fds, at any depth with a bounded number
//! of them ([`walk_beneath`]): the re-measure before a deletion and the deletion itself
//! ([`remove_contents`]) both use it.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::measure::Fence;
use super::tree::{list_dir, open_child, unlink, ChildDir};
use super::ReclaimError;
use crate::platform::{EntryStat, FileKind};

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
    /// It was removed (or moved away) by someone else while the walk was below it: nothing is
    /// left to visit or leave in it.
    gone: bool,
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
/// either way). When `..` cannot be opened because the level below was removed meanwhile (macOS
/// answers ENOENT for `..` of a removed dir; Linux still resolves it), the level is opened again
/// by its names from the nearest level that holds its fd, each step checked the same way; a level
/// no longer found by its names was removed or moved away by someone else, and the walk goes on
/// without it (nothing in it is visited or left).
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
        gone: false,
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
            if done.fd.is_some() {
                held -= 1;
            }
            if above > 0 && levels[above].fd.is_none() && !levels[above].gone {
                let by_dotdot = match &done.fd {
                    Some(from) if !done.gone => reopen_parent(from.as_fd(), &levels[above], fence)?,
                    _ => None,
                };
                let fd = match by_dotdot {
                    Some(fd) => Some(fd),
                    None => reopen_by_names(&levels, above, dir, fence)?,
                };
                match fd {
                    Some(fd) => {
                        levels[above].fd = Some(fd);
                        held += 1;
                    }
                    None => {
                        levels[above].gone = true;
                        levels[above].names.clear();
                    }
                }
            }
            drop(done.fd);
            if !done.gone && !levels[above].gone {
                leave(fd_of(&levels, above, dir), &done.name, &done.path)?;
            }
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
            gone: false,
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

/// Opens `above` again through `..` of `from` (the fd of a level just emptied, below it),
/// checking that it is the same dir: same inode, same device and mount. `None` when `..` is not
/// found (macOS: the level below was removed meanwhile).
///
/// # Errors
/// [`ReclaimError::ChangedWhileDeleting`] when `..` is another dir now;
/// [`ReclaimError::Open`] or [`ReclaimError::Stat`] when it cannot be opened or stat'ed.
fn reopen_parent(
    from: BorrowedFd<'_>,
    above: &Level,
    fence: &Fence,
) -> Result<Option<OwnedFd>, ReclaimError> {
    open_checked(from, std::ffi::OsStr::new(".."), above, fence)
}

/// Opens level `target` again by names: from the nearest level above it that holds its fd (the
/// caller's `dir` at the top), one `openat` per closed level down to `target`, each checked to be
/// the same dir it was (inode, device, mount). `None` when a name is no longer found: someone
/// else removed or moved that dir.
///
/// # Errors
/// [`ReclaimError::ChangedWhileDeleting`] when a name now leads to another dir;
/// [`ReclaimError::Open`] or [`ReclaimError::Stat`] when one cannot be opened or stat'ed.
fn reopen_by_names(
    levels: &[Level],
    target: usize,
    dir: BorrowedFd<'_>,
    fence: &Fence,
) -> Result<Option<OwnedFd>, ReclaimError> {
    let start = (1..target)
        .rev()
        .find(|&i| levels[i].fd.is_some())
        .unwrap_or(0);
    let mut opened: Option<OwnedFd> = None;
    for level in &levels[start + 1..=target] {
        let from = match &opened {
            Some(fd) => fd.as_fd(),
            None => fd_of(levels, start, dir),
        };
        match open_checked(from, &level.name, level, fence)? {
            Some(fd) => opened = Some(fd),
            None => return Ok(None),
        }
    }
    Ok(opened)
}

/// `openat(from, name)` as a dir (no symlink followed), checked to be `level`'s dir: same inode,
/// device and mount. `None` when `name` is not found.
fn open_checked(
    from: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    level: &Level,
    fence: &Fence,
) -> Result<Option<OwnedFd>, ReclaimError> {
    let fd = match rustix::fs::openat(
        from,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(source) => {
            return Err(ReclaimError::Open {
                path: level.path.clone(),
                source: source.into(),
            })
        }
    };
    let stat = |source| ReclaimError::Stat {
        path: level.path.clone(),
        source,
    };
    let st = crate::platform::stat_fd(fd.as_fd()).map_err(stat)?;
    let mount = crate::platform::mount_id(fd.as_fd()).map_err(stat)?;
    if st.ino != level.ino || st.dev != fence.dev || mount != fence.mount {
        return Err(ReclaimError::ChangedWhileDeleting {
            path: level.path.clone(),
            what: "moved while its contents were removed",
        });
    }
    Ok(Some(fd))
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
            gone: false,
        });
        let d = open_dir(a.as_fd(), "d");
        let d_ino = crate::platform::stat_fd(d.as_fd()).unwrap().ino;
        let below = Level {
            fd: Some(d),
            name: "d".into(),
            path: item.join("a/d"),
            ino: d_ino,
            names: Vec::new(),
            gone: false,
        };
        // Same dir: opened again.
        let from = below.fd.as_ref().unwrap().as_fd();
        let again = reopen_parent(from, &levels[0], &fence).unwrap().unwrap();
        assert_eq!(crate::platform::stat_fd(again.as_fd()).unwrap().ino, a_ino);
        // `a/d` moved under another dir: its `..` is no longer `a`.
        std::fs::create_dir(item.join("other")).unwrap();
        std::fs::rename(item.join("a/d"), item.join("other/d")).unwrap();
        let err = reopen_parent(from, &levels[0], &fence).unwrap_err();
        assert!(
            matches!(&err, ReclaimError::ChangedWhileDeleting { path, .. } if *path == item.join("a")),
            "{err:?}"
        );
    }

    fn level(path: &Path, fd: Option<OwnedFd>) -> Level {
        Level {
            ino: std::fs::metadata(path)
                .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
                .unwrap(),
            fd,
            name: path.file_name().unwrap().into(),
            path: path.to_path_buf(),
            names: Vec::new(),
            gone: false,
        }
    }

    /// A closed level is opened again by its names from the nearest level that holds its fd (not
    /// from the top: the dirs above that one were renamed), each step checked by inode; a name
    /// that now leads to another dir is an error naming that level; a removed one is `None`.
    #[test]
    fn a_closed_level_is_opened_again_by_names_from_the_nearest_held_level() {
        let t = tempfile::tempdir().unwrap();
        let item = t.path().join("item");
        std::fs::create_dir_all(item.join("a/b/c/d")).unwrap();
        let top = open_dir(rustix::fs::CWD, item.to_str().unwrap());
        let st = crate::platform::stat_fd(top.as_fd()).unwrap();
        let fence = Fence {
            dev: st.dev,
            mount: crate::platform::mount_id(top.as_fd()).unwrap(),
        };
        let root = Level {
            fd: None,
            name: OsString::new(),
            path: item.clone(),
            ino: st.ino,
            names: Vec::new(),
            gone: false,
        };
        let a_fd = open_dir(top.as_fd(), "a");
        let levels = vec![
            root,
            level(&item.join("a"), Some(a_fd)),
            level(&item.join("a/b"), None),
            level(&item.join("a/b/c"), None),
        ];
        let c_ino = levels[3].ino;
        // `a` renamed: from the top `a` is not found, from the held fd of `a` c is.
        std::fs::rename(item.join("a"), item.join("a2")).unwrap();
        let c = reopen_by_names(&levels, 3, top.as_fd(), &fence)
            .unwrap()
            .unwrap();
        assert_eq!(crate::platform::stat_fd(c.as_fd()).unwrap().ino, c_ino);
        // Without a held level the walk starts at the top, where `a` is gone: None.
        let mut unheld = levels;
        unheld[1].fd = None;
        assert!(reopen_by_names(&unheld, 3, top.as_fd(), &fence)
            .unwrap()
            .is_none());
        std::fs::rename(item.join("a2"), item.join("a")).unwrap();
        assert!(reopen_by_names(&unheld, 3, top.as_fd(), &fence)
            .unwrap()
            .is_some());
        // `b` replaced by another dir of the same name: an error naming `b`.
        std::fs::rename(item.join("a/b"), item.join("b-old")).unwrap();
        std::fs::create_dir_all(item.join("a/b/c")).unwrap();
        let err = reopen_by_names(&unheld, 3, top.as_fd(), &fence).unwrap_err();
        assert!(
            matches!(&err, ReclaimError::ChangedWhileDeleting { path, .. } if *path == item.join("a/b")),
            "{err:?}"
        );
        // `c` removed (with what was in it): None.
        std::fs::remove_dir_all(item.join("a/b")).unwrap();
        std::fs::rename(item.join("b-old"), item.join("a/b")).unwrap();
        std::fs::remove_dir_all(item.join("a/b/c")).unwrap();
        assert!(reopen_by_names(&unheld, 3, top.as_fd(), &fence)
            .unwrap()
            .is_none());
    }

    /// A concurrent remover deletes a subtree above the held fds while the walk is at the
    /// bottom of a chain deeper than them: the walk goes on and the item's dir ends empty (a hand
    /// count: nothing left), whether `..` of a removed dir resolves (Linux) or not (macOS: by
    /// names, the removed levels are skipped).
    #[test]
    fn a_subtree_removed_by_someone_else_during_the_walk_does_not_fail_it() {
        let t = tempfile::tempdir().unwrap();
        let item = t.path().join("item");
        let deep: PathBuf =
            (0..MAX_HELD_FDS + 6).fold(item.clone(), |p, i| p.join(format!("l{i}")));
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f"), b"x").unwrap();
        std::fs::write(item.join("l0/l1/g"), b"y").unwrap();
        let top = open_dir(rustix::fs::CWD, item.to_str().unwrap());
        let st = crate::platform::stat_fd(top.as_fd()).unwrap();
        let fence = Fence {
            dev: st.dev,
            mount: crate::platform::mount_id(top.as_fd()).unwrap(),
        };
        let removed_by_other = item.join("l0/l1/l2");
        let mut removed = false;
        walk_beneath(
            top.as_fd(),
            &item,
            &fence,
            |here, name, child_path, st| {
                if st.kind != FileKind::Dir {
                    if child_path == deep.join("f") && !removed {
                        // The other remover, while this walk holds fds only of the deepest levels.
                        std::fs::remove_dir_all(&removed_by_other).unwrap();
                        removed = true;
                        return Ok(Step::Next);
                    }
                    unlink(here, name, false, child_path)?;
                    return Ok(Step::Next);
                }
                match open_child(here, name, child_path, st, &fence)? {
                    ChildDir::Open(fd) => Ok(Step::Enter(fd)),
                    _ => Ok(Step::Next),
                }
            },
            |parent, name, dir_path| unlink(parent, name, true, dir_path).map(drop),
        )
        .unwrap();
        assert!(removed);
        assert_eq!(std::fs::read_dir(&item).unwrap().count(), 0);
    }
}
