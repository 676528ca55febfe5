//! The plan's check that the effective user may delete an item whole: removing an entry needs
//! write and search permission on the dir holding it, so an item can go only when its parent dir
//! and every dir inside it are writable and searchable by the effective user (a root-owned dir
//! with mode 0755 inside a user's item is not). Asked of the kernel (`faccessat(AT_EACCESS)`, so
//! ACLs, read-only mounts and immutable flags count), dir by dir, fd-relative and never through a
//! symlink: a dir is opened with `O_NOFOLLOW | O_DIRECTORY` from its parent's fd, and only entries
//! `lstat` (or the listing) says are dirs are checked and entered.
//!
//! Only a prediction: execute deletes through the OS, which refuses what it refuses; this keeps
//! the dry run equal to what execute can do, so an item is not half deleted.

use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{accessat, openat, statat, Access, AtFlags, Dir, FileType, Mode, OFlags, CWD};

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
    let dir = path.parent()?;
    if parent.denied(dir) {
        return Some(dir.to_path_buf());
    }
    match dirs {
        0 => return None,
        1 => return denied(accessat(CWD, path, wx, AtFlags::EACCESS)).then(|| path.to_path_buf()),
        _ => {}
    }
    // Opened only when a dir (`O_DIRECTORY`), never through a symlink (`O_NOFOLLOW`): anything
    // else (a file, a symlink, gone) has nothing inside to check.
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let top = Arc::new(openat(CWD, path, flags, Mode::empty()).ok()?);
    if denied(accessat(CWD, path, wx, AtFlags::EACCESS)) {
        return Some(path.to_path_buf());
    }
    // Dirs listed, depth first; a subdir is opened when its turn comes (from its parent's fd,
    // kept open until then), so open fds follow the depth, not the width.
    let mut pending: Vec<(Arc<OwnedFd>, CString, PathBuf)> = Vec::new();
    let mut next = Some((top, path.to_path_buf()));
    while let Some((fd, dir_path)) = next.take() {
        if let Ok(dir) = Dir::read_from(&*fd) {
            for entry in dir.flatten() {
                let name = entry.file_name();
                let bytes = name.to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                let is_dir = match entry.file_type() {
                    FileType::Directory => true,
                    FileType::Unknown => statat(&*fd, name, AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory),
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

/// The last parent dir [`first_not_deletable`] asked about, and whether it was refused.
#[derive(Debug, Default)]
pub(super) struct ParentMemo(Mutex<Option<(PathBuf, bool)>>);

impl ParentMemo {
    /// True when the effective user may not remove entries from `dir` (asked once per new `dir`).
    fn denied(&self, dir: &Path) -> bool {
        let mut last = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &*last {
            Some((d, refused)) if d == dir => *refused,
            _ => {
                let wx = Access::WRITE_OK | Access::EXEC_OK;
                let refused = denied(accessat(CWD, dir, wx, AtFlags::EACCESS));
                *last = Some((dir.to_path_buf(), refused));
                refused
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
