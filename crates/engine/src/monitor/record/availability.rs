//! Whether the history database is in use. A locked database (another process holds its lock past
//! the busy timeout) is a passing condition: history is skipped for [`LOCKED_RETRY`] and then tried
//! again, and an open that found it locked is retried. A corrupt database, or any other failure,
//! switches the monitor to running without history for good; the file is never deleted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::history::History;
use crate::snapshot::AlertDto;

use super::{io, RecordError, Recorder};

/// How long history is skipped after the database was found locked, before trying again.
pub(super) const LOCKED_RETRY: Duration = Duration::from_secs(60);

impl Recorder {
    /// The history database, for a reclaim that writes its audit rows first (`None` when running
    /// without history, or until a locked database could be opened).
    pub fn history(&self) -> Option<Arc<Mutex<History>>> {
        self.db.clone()
    }

    /// Why there is no history database (the line the snapshot shows), when there is none because
    /// it failed; `None` when it is open or none was configured.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// True when the database is open and not waiting out a lock at `now`.
    pub(super) fn history_ready(&self, now: SystemTime) -> bool {
        self.db.is_some() && self.retry_at.map_or(true, |t| now >= t)
    }

    /// True when an open that found the database locked is due to be tried again at `now`.
    pub fn reopen_due(&self, now: SystemTime) -> bool {
        self.db.is_none() && self.db_path.is_some() && self.retry_at.is_some_and(|t| now >= t)
    }

    /// Opens the database again after an open found it locked (see [`Recorder::reopen_due`]);
    /// returns the stored recent alerts it restored the cooldowns from (empty when it failed
    /// again).
    pub async fn reopen(&mut self, now: SystemTime) -> Vec<AlertDto> {
        let Some(path) = self.db_path.clone() else {
            return Vec::new();
        };
        match io::blocking(move || io::open(&path)).await {
            Ok((db, stored)) => {
                tracing::info!("history database opened after it was locked");
                self.db = Some(Arc::new(Mutex::new(db)));
                self.history_ok();
                self.alerter.restore(&stored);
                let mut all = std::mem::take(&mut self.alerts);
                all.extend(stored.iter().cloned());
                all.truncate(super::RECENT_ALERTS);
                self.alerts = all;
                stored
            }
            Err(e) => {
                self.open_failed(e, now);
                Vec::new()
            }
        }
    }

    /// The database could not be opened: retried later when locked, otherwise running without it.
    pub(super) fn open_failed(&mut self, e: RecordError, now: SystemTime) {
        if e.is_locked() {
            self.locked(&e, now);
            self.unavailable = self.notices.passing().map(str::to_owned);
            return;
        }
        tracing::error!(error = %e, "history unavailable; running without it");
        self.gone_for_good(&e);
    }

    /// A history call failed: waits out a lock, otherwise runs without history from now on.
    pub(super) fn history_failed(&mut self, e: RecordError, now: SystemTime) {
        if e.is_locked() {
            self.locked(&e, now);
            return;
        }
        tracing::error!(error = %e, "history write failed; running without history");
        self.gone_for_good(&e);
    }

    /// A history call succeeded: a lock that was waited out is over.
    pub(super) fn history_ok(&mut self) {
        if self.retry_at.take().is_some() {
            self.notices.clear_passing();
            self.unavailable = None;
        }
    }

    fn locked(&mut self, e: &RecordError, now: SystemTime) {
        let secs = LOCKED_RETRY.as_secs();
        tracing::warn!(error = %e, "history database locked; trying again in {secs}s");
        self.retry_at = Some(now + LOCKED_RETRY);
        self.notices
            .set_passing(format!("history not updated, retrying in {secs}s: {e}"));
    }

    fn gone_for_good(&mut self, e: &RecordError) {
        let line = format!("history unavailable, running without it: {e}");
        self.notices.clear_passing();
        self.notices.push(line.clone());
        self.unavailable = Some(line);
        self.retry_at = None;
        self.db = None;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::*;
    use crate::history::HistoryError;
    use crate::monitor::MonitorOptions;

    fn recorder(db: &Path) -> Recorder {
        let mut opts = MonitorOptions::new(Vec::new(), Arc::new(crate::Catalogue::builtin()));
        opts.db_path = Some(db.to_path_buf());
        Recorder::new(&opts)
    }

    fn sqlite_error(db: &Path, code: std::ffi::c_int) -> RecordError {
        let e = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None);
        RecordError::from(HistoryError::from_sql(db, "record samples", e))
    }

    #[test]
    fn a_locked_database_is_waited_out_not_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("cachewatch.db");
        let mut r = recorder(&db);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        let locked = sqlite_error(&db, rusqlite::ffi::SQLITE_BUSY);
        assert!(locked.is_locked());
        r.history_failed(locked, t0);
        assert!(r.history().is_some(), "still in use: a reclaim can audit");
        assert_eq!(r.unavailable(), None);
        assert!(
            !r.sample_due(t0 + Duration::from_secs(1)),
            "lock waited out"
        );
        assert!(r.sample_due(t0 + LOCKED_RETRY));
        assert!(
            r.errors()
                .iter()
                .any(|e| e.starts_with("history not updated")),
            "{:?}",
            r.errors()
        );
        r.history_ok();
        assert!(r.errors().is_empty(), "{:?}", r.errors());
        assert!(r.sample_due(t0 + Duration::from_secs(1)));
    }

    #[test]
    fn a_corrupt_database_switches_to_running_without_history_for_good() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("cachewatch.db");
        let mut r = recorder(&db);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        let corrupt = sqlite_error(&db, rusqlite::ffi::SQLITE_CORRUPT);
        assert!(corrupt.history().is_some_and(HistoryError::is_corrupt));
        r.history_failed(corrupt, t0);
        assert!(r.history().is_none());
        let why = r.unavailable().unwrap();
        assert!(
            why.starts_with("history unavailable, running without it: "),
            "{why}"
        );
        let later = t0 + 10 * LOCKED_RETRY;
        assert!(!r.sample_due(later) && !r.reopen_due(later));
    }
}
