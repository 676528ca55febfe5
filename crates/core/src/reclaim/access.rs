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
//! the dry run equal to what execute can do, so an item is not half deleted. A dir inside the item
//! that cannot be opened or listed (`EMFILE`, a dir not readable, an I/O error) is not skipped: the
//! answer is then [`Access::NotChecked`], and the plan keeps the item saying why. Only a dir gone
//! meanwhile (`ENOENT`) is passed over: execute has nothing to delete there.

use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{
    accessat, fstat, openat, statat, Access as RwxAccess, AtFlags, Dir, FileType, Mode, OFlags,
    Stat, CWD,
};
use rustix::process::{geteuid, Uid};

/// What [`first_not_deletable`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// Every dir allows it, or `path` is gone (execute's re-checks cover that).
    Deletable,
    /// The first dir the effective user cannot remove entries from.
    Refused(PathBuf),
    /// A dir that could not be opened or listed, and the OS's error.
    NotChecked(PathBuf, rustix::io::Errno),
}

/// The dir the effective user cannot remove entries from (not writable or not searchable) that
/// stops `path` from being deleted whole: its parent dir, or `path` itself or a dir inside it when
/// `path` is a dir (not a symlink). [`Access::Deletable`] when every one allows it, or when `path`
/// is gone; [`Access::NotChecked`] when a dir of it could not be opened or listed.
///
/// `parent` remembers the last parent dir checked and its answer (items of a producer share their
/// parent, so a plan asks once per run of items under one parent). `dirs` is the item's count of
/// dirs as measured (itself included): with none (a file) only its parent is asked about, with
/// one (a dir holding no dir) only it and its parent, without listing it; the walk of a dir that
/// gained a subdir since is execute's to refuse (its re-check sees the newer mtime first).
pub(super) fn first_not_deletable(path: &Path, dirs: u64, parent: &ParentMemo) -> Access {
    let wx = RwxAccess::WRITE_OK | RwxAccess::EXEC_OK;
    let me = geteuid();
    let Some(dir) = path.parent() else {
        return Access::Deletable;
    };
    let answer = parent.answer(dir, me);
    if answer.refused {
        return Access::Refused(dir.to_path_buf());
    }
    if dirs == 0 && !answer.sticky {
        return Access::Deletable;
    }
    let st = match statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(e) => return unchecked(path, e),
    };
    if answer.sticky && st.st_uid != me.as_raw() {
        return Access::Refused(dir.to_path_buf());
    }
    // Only a dir (never through a symlink) has anything inside to check.
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return Access::Deletable;
    }
    if denied(accessat(CWD, path, wx, AtFlags::EACCESS)) {
        return Access::Refused(path.to_path_buf());
    }
    if dirs <= 1 && !sticky_for(&st, me) {
        return Access::Deletable;
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let top = match openat(CWD, path, flags, Mode::empty()) {
        Ok(fd) => Arc::new(fd),
        Err(e) => return unchecked(path, e),
    };
    // Dirs listed, depth first; a subdir is opened when its turn comes (from its parent's fd,
    // kept open until then), so open fds follow the depth, not the width.
    let mut pending: Vec<(Arc<OwnedFd>, CString, PathBuf)> = Vec::new();
    let mut next = Some((top, path.to_path_buf()));
    while let Some((fd, dir_path)) = next.take() {
        let sticky = match fstat(&*fd) {
            Ok(st) => sticky_for(&st, me),
            Err(e) => return unchecked(&dir_path, e),
        };
        let listing = match Dir::read_from(&*fd) {
            Ok(listing) => listing,
            Err(e) => return unchecked(&dir_path, e),
        };
        for entry in listing {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => return unchecked(&dir_path, e),
            };
            let name = entry.file_name();
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            // The entry's own `lstat` when its owner or type must be known: gone meanwhile is
            // nothing to check; any other failure leaves the item not checked.
            let own = || match statat(&*fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => Ok(Some(st)),
                Err(rustix::io::Errno::NOENT) => Ok(None),
                Err(e) => Err(unchecked(&dir_path.join(OsStr::from_bytes(bytes)), e)),
            };
            if sticky {
                match own() {
                    Ok(Some(st)) if st.st_uid != me.as_raw() => return Access::Refused(dir_path),
                    Ok(_) => {}
                    Err(not_checked) => return not_checked,
                }
            }
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::Unknown => match own() {
                    Ok(st) => st
                        .is_some_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory),
                    Err(not_checked) => return not_checked,
                },
                _ => false,
            };
            if !is_dir {
                continue;
            }
            let child_path = dir_path.join(OsStr::from_bytes(bytes));
            if denied(accessat(&*fd, name, wx, AtFlags::EACCESS)) {
                return Access::Refused(child_path);
            }
            pending.push((fd.clone(), name.to_owned(), child_path));
        }
        drop(fd);
        while next.is_none() {
            let Some((parent, name, child_path)) = pending.pop() else {
                return Access::Deletable;
            };
            match openat(&*parent, name.as_c_str(), flags, Mode::empty()) {
                Ok(child) => next = Some((Arc::new(child), child_path)),
                Err(e) => match unchecked(&child_path, e) {
                    Access::Deletable => {}
                    other => return other,
                },
            }
        }
    }
    Access::Deletable
}

/// The answer for a dir that could not be opened, listed or `lstat`ed with `e`: nothing to check
/// when it is gone (`ENOENT`: execute has nothing to delete there), else not checked.
fn unchecked(path: &Path, e: rustix::io::Errno) -> Access {
    match e {
        rustix::io::Errno::NOENT => Access::Deletable,
        e => Access::NotChecked(path.to_path_buf(), e),
    }
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
                let wx = RwxAccess::WRITE_OK | RwxAccess::EXEC_OK;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A chain of `depth` dirs under `top` (`top/d0/d1/...`), each holding a file and three
    /// empty dirs beside the next link: the check keeps a level's fd open while a sibling of the
    /// dir it entered waits, so its open fds grow with the depth. Returns every dir.
    fn chain(top: &Path, depth: usize) -> Vec<PathBuf> {
        let mut dirs = vec![top.to_path_buf()];
        let mut d = top.to_path_buf();
        for i in 0..depth {
            for leaf in ["x", "y", "z"] {
                dirs.push(d.join(leaf));
            }
            d = d.join(format!("d{i}"));
            dirs.push(d.clone());
        }
        std::fs::create_dir_all(&d).unwrap();
        for dir in &dirs {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("f"), b"x").unwrap();
        }
        dirs
    }

    #[test]
    fn a_deep_item_the_check_can_walk_is_deletable() {
        let t = tempfile::tempdir().unwrap();
        let item = t.path().join("item");
        let dirs = chain(&item, 30);
        let memo = ParentMemo::default();
        assert_eq!(
            first_not_deletable(&item, dirs.len() as u64, &memo),
            Access::Deletable
        );
        // Gone meanwhile: nothing to check, execute has nothing to delete.
        let gone = t.path().join("gone");
        assert_eq!(first_not_deletable(&gone, 3, &memo), Access::Deletable);
    }

    /// Run in a child process of this test binary, where it may lower its own fd limit without
    /// starving the other tests (see the test below).
    #[test]
    fn child_out_of_fds() {
        let Some(item) = std::env::var_os("CACHEWATCH_ACCESS_CHILD_ITEM") else {
            return;
        };
        let item = PathBuf::from(item);
        let memo = ParentMemo::default();
        // Not one fd to spare (the listing counted its own, closed since): the item's own dir
        // cannot be opened, which the check once took for "deletable". Whatever order the file
        // system lists entries in, the open fails at the top.
        let open_now = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64 - 1;
        let limit = rustix::process::Rlimit {
            current: Some(open_now),
            maximum: rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum,
        };
        rustix::process::setrlimit(rustix::process::Resource::Nofile, limit).unwrap();
        let got = first_not_deletable(&item, 121, &memo);
        match got {
            Access::NotChecked(path, e) => {
                assert_eq!(e, rustix::io::Errno::MFILE);
                assert!(path.starts_with(&item), "{}", path.display());
                println!("CHILD-OK not checked at {}", path.display());
            }
            other => panic!("expected not checked, got {other:?}"),
        }
    }

    #[test]
    fn a_dir_that_cannot_be_opened_is_not_checked_not_skipped() {
        if !std::path::Path::new("/proc/self/fd").is_dir() {
            println!("SKIPPED: no /proc/self/fd to count open fds");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let item = t.path().join("item");
        chain(&item, 30);
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "reclaim::access::tests::child_out_of_fds",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CACHEWATCH_ACCESS_CHILD_ITEM", &item)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("CHILD-OK"),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
