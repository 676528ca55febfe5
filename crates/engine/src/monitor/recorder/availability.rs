//! Whether the history database is in use. A locked database (another process holds its lock past
//! the busy timeout) is a passing condition: history is skipped for [`LOCKED_RETRY`] and then tried
//! again, and an open that found it locked is retried. Any other failure (a full disk, a data dir
//! that cannot be written, a corrupt file) closes the database and opens it again with backoff,
//! from [`LOCKED_RETRY`] doubling up to [`MAX_RETRY`]: samples, alerts and the auto-reclaim rules
//! resume once it opens. Meanwhile the snapshot says so, a `history-unavailable` alert fires
//! (once per outage), and nothing is deleted (no audit rows). The file is never deleted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::dto::AlertDto;
use crate::history::History;

use super::{io, RecordError, Recorder};

/// How long history is skipped after the database was found locked, before trying again; also the
/// first wait before opening again a database that failed otherwise.
pub(super) const LOCKED_RETRY: Duration = Duration::from_secs(60);

/// The longest wait between two tries to open a database that keeps failing.
pub(super) const MAX_RETRY: Duration = Duration::from_secs(15 * 60);

/// The rule of the alert fired when the history database becomes unavailable.
pub const HISTORY_UNAVAILABLE_RULE: crate::dto::AlertRule =
    crate::dto::AlertRule::HistoryUnavailable;

impl Recorder {
    /// The history database, for a reclaim that writes its audit rows first (`None` when running
    /// without history, or until a failed database could be opened again).
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

    /// True when a database that could not be opened, or failed and was closed, is due to be
    /// opened again at `now`.
    pub fn reopen_due(&self, now: SystemTime) -> bool {
        self.db.is_none() && self.db_path.is_some() && self.retry_at.is_some_and(|t| now >= t)
    }

    /// Opens the database again (see [`Recorder::reopen_due`]); returns whether it is open now,
    /// and the stored recent alerts it restored the cooldowns from (empty when it failed again).
    pub async fn reopen(&mut self, now: SystemTime) -> (bool, Vec<AlertDto>) {
        let Some(path) = self.db_path.clone() else {
            return (false, Vec::new());
        };
        match io::blocking(move || io::open(&path)).await {
            Ok((db, stored)) => {
                tracing::info!(
                    failed_tries = self.failures,
                    "history database open again; samples and rules resume"
                );
                self.db = Some(Arc::new(Mutex::new(db)));
                self.failures = 0;
                self.history_ok();
                self.alerter.restore(&stored);
                let mut all = std::mem::take(&mut self.alerts);
                all.extend(stored.iter().cloned());
                all.truncate(super::RECENT_ALERTS);
                self.alerts = all;
                (true, stored)
            }
            Err(e) => {
                self.open_failed(e, now);
                (false, Vec::new())
            }
        }
    }

    /// The database could not be opened: tried again later.
    pub(super) fn open_failed(&mut self, e: RecordError, now: SystemTime) {
        if e.is_locked() {
            self.locked(&e, now);
            self.unavailable = self.notices.passing().map(str::to_owned);
            return;
        }
        self.closed(&e, now, "history unavailable");
    }

    /// A history call failed: waits out a lock, otherwise closes the database and opens it again
    /// later.
    pub(super) fn history_failed(&mut self, e: RecordError, now: SystemTime) {
        if e.is_locked() {
            self.locked(&e, now);
            return;
        }
        self.closed(&e, now, "history write failed");
    }

    /// A history call succeeded: a lock that was waited out, or an outage, is over.
    pub(super) fn history_ok(&mut self) {
        if self.retry_at.take().is_some() || self.unavailable.is_some() {
            self.notices.clear_passing();
            self.unavailable = None;
        }
    }

    fn locked(&mut self, e: &RecordError, now: SystemTime) {
        let secs = LOCKED_RETRY.as_secs();
        tracing::warn!(error = %e, "history database locked; trying again in {secs}s");
        self.retry_at = now.checked_add(LOCKED_RETRY);
        self.notices
            .set_passing(format!("history not updated, retrying in {secs}s: {e}"));
    }

    /// Closes the database and schedules the next open: [`LOCKED_RETRY`] after the first failure,
    /// doubling with each one after, at most [`MAX_RETRY`]. The first failure of an outage fires
    /// the `history-unavailable` alert.
    fn closed(&mut self, e: &RecordError, now: SystemTime, what: &str) {
        let wait = retry_wait(self.failures);
        self.failures = self.failures.saturating_add(1);
        let secs = wait.as_secs();
        tracing::error!(error = %e, "{what}; running without history, opening it again in {secs}s");
        let line = format!(
            "history unavailable, running without it (samples, alerts log and auto-reclaim rules wait), opening it again in {secs}s: {e}"
        );
        if self.unavailable.is_none() {
            self.raised.push(AlertDto::new(
                crate::units::unix_secs(now),
                HISTORY_UNAVAILABLE_RULE,
                None,
                "History database unavailable",
                line.clone(),
            ));
        }
        self.notices.set_passing(line.clone());
        self.unavailable = Some(line);
        self.retry_at = Some(now.checked_add(wait).unwrap_or(now));
        self.db = None;
    }
}

/// The wait before the next open after `failures` failed ones in a row.
fn retry_wait(failures: u32) -> Duration {
    LOCKED_RETRY
        .checked_mul(1u32.checked_shl(failures.min(16)).unwrap_or(u32::MAX))
        .unwrap_or(MAX_RETRY)
        .min(MAX_RETRY)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::*;
    use crate::history::HistoryError;
    use crate::monitor::MonitorOptions;

    fn recorder(db: &Path) -> Recorder {
        let mut opts =
            MonitorOptions::new(Vec::new(), Arc::new(crate::catalogue::Catalogue::builtin()));
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
    fn a_failed_database_is_closed_retried_with_backoff_and_alerted_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("cachewatch.db");
        let mut r = recorder(&db);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        let full = sqlite_error(&db, rusqlite::ffi::SQLITE_FULL);
        assert!(!full.is_locked());
        r.history_failed(full, t0);
        assert!(r.history().is_none(), "closed");
        let why = r.unavailable().unwrap();
        assert!(
            why.starts_with("history unavailable, running without it")
                && why.contains("opening it again in 60s"),
            "{why}"
        );
        assert_eq!(r.raised.len(), 1);
        assert_eq!(r.raised[0].rule, HISTORY_UNAVAILABLE_RULE);
        assert!(!r.reopen_due(t0 + LOCKED_RETRY - Duration::from_secs(1)));
        assert!(r.reopen_due(t0 + LOCKED_RETRY));
        // Failing again: the wait doubles, no second alert, one notice line.
        let t1 = t0 + LOCKED_RETRY;
        let corrupt = sqlite_error(&db, rusqlite::ffi::SQLITE_CORRUPT);
        r.open_failed(corrupt, t1);
        assert!(r
            .unavailable()
            .unwrap()
            .contains("opening it again in 120s"));
        assert!(!r.reopen_due(t1 + Duration::from_secs(119)));
        assert!(r.reopen_due(t1 + Duration::from_secs(120)));
        assert_eq!(r.raised.len(), 1, "one alert per outage");
        assert_eq!(r.errors().len(), 1, "{:?}", r.errors());
        // The wait never passes the cap.
        assert_eq!(retry_wait(3), Duration::from_secs(480));
        assert_eq!(retry_wait(4), MAX_RETRY);
        assert_eq!(retry_wait(u32::MAX), MAX_RETRY);
    }
}
