//! The plan's check that the effective user may delete an item whole: removing an entry needs
//! write and search permission on the dir holding it, so an item can go only when its parent dir
//! and every dir inside it are writable and searchable by the effective user (a root-owned dir
//! with mode 0755 inside a user's item is not). Asked of the kernel (`faccessat(AT_EACCESS)`, so
//! ACLs, read-only mounts and immutable flags count), dir by dir, fd-relative and never through a
//! symlink: a dir is opened with `O_NOFOLLOW | O_DIRECTORY` from its parent's fd, and only entries
//! `lstat` (or the listing) says are dirs are checked and entered.
//!
//! A sticky dir (mode `o+t`, as `/tmp`) lets the effective user remove only the entries it owns
//! (unless it owns the dir, or is root): an item in a sticky parent must be the user's own, and
//! inside an item every entry of a sticky dir the user does not own must be the user's own.
//!
//! Only a prediction: execute deletes through the OS, which refuses what it refuses; this keeps
//! the dry run equal to what execute can do, so an item is not half deleted.

use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{
    accessat, fstat, openat, statat, Access, AtFlags, Dir, FileType, Mode, OFlags, Stat, CWD,
};
use rustix::process::{geteuid, Uid};

/// The dir the effective user cannot remove entries from (not writable or not searchable) that
/// stops `path` from being deleted whole: its parent dir, or `path` itself or a dir inside it when
/// `path` is a dir (not a symlink). `None` when every one allows it, or when `path` is gone or
/// cannot be read (the scan's unreadable paths and execute's re-checks cover those).
///
/// `parent` remembers the last parent dir checked and its answer (items of a producer share their
/// parent, so a plan asks once per run of items under one parent). `dirs` is the item's count of
/// dirs as measured (itself included): with none (a file) only its parent is asked about, with
/// one (a dir holding no dir) only it and its parent, without listing it; the walk of a dir that
/// gained a subdir since is execute's to refuse (its re-check sees the newer mtime first).
pub(super) fn first_not_deletable(path: &Path, dirs: u64, parent: &ParentMemo) -> Option<PathBuf> {
    let wx = Access::WRITE_OK | Access::EXEC_OK;
    let me = geteuid();
    let dir = path.parent()?;
    let answer = parent.answer(dir, me);
    if answer.refused {
        return Some(dir.to_path_buf());
    }
    if dirs == 0 && !answer.sticky {
        return None;
    }
    let st = statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if answer.sticky && st.st_uid != me.as_raw() {
        return Some(dir.to_path_buf());
    }
    // Only a dir (never through a symlink) has anything inside to check.
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return None;
    }
    if denied(accessat(CWD, path, wx, AtFlags::EACCESS)) {
        return Some(path.to_path_buf());
    }
    if dirs <= 1 && !sticky_for(&st, me) {
        return None;
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let top = Arc::new(openat(CWD, path, flags, Mode::empty()).ok()?);
    // Dirs listed, depth first; a subdir is opened when its turn comes (from its parent's fd,
    // kept open until then), so open fds follow the depth, not the width.
    let mut pending: Vec<(Arc<OwnedFd>, CString, PathBuf)> = Vec::new();
    let mut next = Some((top, path.to_path_buf()));
    while let Some((fd, dir_path)) = next.take() {
        let sticky = fstat(&*fd).is_ok_and(|s| sticky_for(&s, me));
        if let Ok(listing) = Dir::read_from(&*fd) {
            for entry in listing.flatten() {
                let name = entry.file_name();
                let bytes = name.to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                let own = || statat(&*fd, name, AtFlags::SYMLINK_NOFOLLOW).ok();
                if sticky && own().is_some_and(|s| s.st_uid != me.as_raw()) {
                    return Some(dir_path);
                }
                let is_dir = match entry.file_type() {
                    FileType::Directory => true,
                    FileType::Unknown => own()
                        .is_some_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory),
                    _ => false,
                };
                if !is_dir {
                    continue;
                }
                let child_path = dir_path.join(OsStr::from_bytes(bytes));
                if denied(accessat(&*fd, name, wx, AtFlags::EACCESS)) {
                    return Some(child_path);
                }
                pending.push((fd.clone(), name.to_owned(), child_path));
            }
        }
        drop(fd);
        while next.is_none() {
            let (parent, name, child_path) = pending.pop()?;
            if let Ok(child) = openat(&*parent, name.as_c_str(), flags, Mode::empty()) {
                next = Some((Arc::new(child), child_path));
            }
        }
    }
    None
}

/// True when `st` is a sticky dir whose entries the effective user `me` may remove only if it
/// owns them: it does not own the dir and is not root.
fn sticky_for(st: &Stat, me: Uid) -> bool {
    let sticky = Mode::from_raw_mode(st.st_mode).contains(Mode::SVTX);
    sticky
        && FileType::from_raw_mode(st.st_mode) == FileType::Directory
        && !me.is_root()
        && st.st_uid != me.as_raw()
}

/// What [`ParentMemo`] knows of a parent dir.
#[derive(Debug, Clone, Copy, Default)]
struct ParentAnswer {
    /// The effective user may not remove entries from it (not writable or not searchable).
    refused: bool,
    /// It is sticky and not the user's own: only the user's own entries can be removed.
    sticky: bool,
}

/// The last parent dir [`first_not_deletable`] asked about, and its answer.
#[derive(Debug, Default)]
pub(super) struct ParentMemo(Mutex<Option<(PathBuf, ParentAnswer)>>);

impl ParentMemo {
    /// What the effective user `me` may remove from `dir` (asked once per new `dir`).
    fn answer(&self, dir: &Path, me: Uid) -> ParentAnswer {
        let mut last = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &*last {
            Some((d, answer)) if d == dir => *answer,
            _ => {
                let wx = Access::WRITE_OK | Access::EXEC_OK;
                let answer = ParentAnswer {
                    refused: denied(accessat(CWD, dir, wx, AtFlags::EACCESS)),
                    sticky: statat(CWD, dir, AtFlags::empty()).is_ok_and(|s| sticky_for(&s, me)),
                };
                *last = Some((dir.to_path_buf(), answer));
                answer
            }
        }
    }
}

/// True when the answer is a refusal (`EACCES`, `EPERM`, `EROFS`); other errors (the entry
/// vanished, ...) are not this check's business.
fn denied(r: rustix::io::Result<()>) -> bool {
    use rustix::io::Errno;
    matches!(r, Err(e) if e == Errno::ACCESS || e == Errno::PERM || e == Errno::ROFS)
}
