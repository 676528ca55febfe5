//! Noticing that the database file was deleted or replaced while open: SQLite would go on writing
//! into the unlinked inode and the history would silently vanish. Each write first compares the
//! path's device and inode with the ones seen at open; on a change it says so (a warning and a
//! [`HistoryError::Recreated`] notice) and reopens the path, recreating the database there.

use std::os::unix::fs::MetadataExt;

use super::{History, HistoryError};

/// Device and inode of the file at `path`, `None` when it cannot be stat'ed.
pub(super) fn file_id(path: &std::path::Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|md| (md.dev(), md.ino()))
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
        let what = match std::fs::metadata(&self.path) {
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
