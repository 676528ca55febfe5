//! Noticing that the database file was deleted or replaced while open: SQLite would go on writing
//! into the unlinked inode and the history would silently vanish. Each write first compares the
//! path's device and inode with the ones seen at open; on a change it says so (a warning and a
//! [`HistoryError::Recreated`] notice) and reopens the path, recreating the database there.
//!
//! Before SQLite opens the path, the file is looked at (and created) as itself: SQLite resolves a
//! symlink at the path and would create or write a database wherever it points, so a symlink, or
//! anything but a regular file, is refused ([`HistoryError::File`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::{History, HistoryError};
use crate::safe_file::{self, WriteError};

/// Checks the database file at `path` before SQLite opens it, creating it (empty, mode 0644 less
/// the umask, as SQLite would) when `create` and it is missing. Returns the path with every link
/// among its dirs resolved (SQLite then opens it with `SQLITE_OPEN_NOFOLLOW`) and the file's
/// device and inode (`None` when it is missing and not created).
///
/// # Errors
/// [`HistoryError::File`]: the path is a symlink or not a regular file, goes through a link another
/// user could have planted, or its dir cannot be opened.
pub(super) fn check_before_open(
    path: &Path,
    create: bool,
) -> Result<(PathBuf, Option<(u64, u64)>), HistoryError> {
    let refused = |source| HistoryError::File {
        path: path.to_path_buf(),
        source: Box::new(source),
    };
    let io = |op: &'static str| {
        move |e: Errno| {
            refused(WriteError::Io {
                path: path.to_path_buf(),
                op,
                source: e.into(),
            })
        }
    };
    let at = safe_file::locate(path, false).map_err(refused)?;
    let real = at.dir_path.join(&at.name);
    let st = match at.existing {
        Some(st) => st,
        None if create => {
            // Created as itself: a link planted at the name meanwhile fails the open (EEXIST).
            match rustix::fs::openat(
                &at.dir,
                &at.name,
                OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            ) {
                Ok(fd) => rustix::fs::fstat(&fd).map_err(io("look at the new database file"))?,
                // Made by another process meanwhile: look again (and refuse a link).
                Err(e) if e == Errno::EXIST => return check_before_open(path, false),
                Err(e) => return Err(io("create the database file")(e)),
            }
        }
        None => return Ok((real, None)),
    };
    Ok((real, Some(stat_id(&st))))
}

/// Device and inode of `st` (`dev_t` is signed 32 bits on macOS, as std's `MetadataExt` widens it).
#[allow(clippy::unnecessary_cast)]
fn stat_id(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

impl History {
    /// Before a write: when the file at the path is no longer the one opened (deleted, or
    /// replaced), reopens the path (creating and migrating a new database when none is there)
    /// and keeps a [`HistoryError::Recreated`] notice for [`History::take_notice`].
    ///
    /// # Errors
    /// The errors of [`History::open`] when the database cannot be recreated.
    pub(super) fn check_file(&mut self) -> Result<(), HistoryError> {
        let Some(opened) = self.file_id else {
            return Ok(());
        };
        // The path's own entry: a symlink swapped in for the file is a replacement (and is then
        // refused by the reopen), never followed.
        let what = match std::fs::symlink_metadata(&self.path) {
            Ok(md) if (md.dev(), md.ino()) == opened => return Ok(()),
            Ok(_) => "replaced by another file",
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "deleted",
            // Cannot tell (e.g. the dir became unreadable): keep writing where we are.
            Err(_) => return Ok(()),
        };
        let notice = HistoryError::Recreated {
            path: self.path.clone(),
            what,
        };
        tracing::warn!(error = %notice, "history database changed under us");
        let fresh = History::open(&self.path)?;
        *self = fresh;
        self.notice = Some(notice);
        Ok(())
    }

    /// The notice of the last time the database file was found deleted or replaced and was
    /// recreated ([`HistoryError::Recreated`]), once; `None` when nothing happened since the last
    /// call. The monitor shows it as a problem line.
    pub fn take_notice(&mut self) -> Option<HistoryError> {
        self.notice.take()
    }
}
