//! Growth history, the reclaim audit trail and the alert log, in one SQLite file.
//!
//! Shape of the database (schema version [`SCHEMA_VERSION`], kept in `PRAGMA user_version`):
//! - `series`: one row per thing measured: a producer, a root, the total, or a volume's free
//!   space (kind `volume-free`, path = the mount point; its samples hold free bytes).
//! - `samples`: `(series, unix secs) -> allocated bytes, apparent bytes, items`, bounded by
//!   [`History::compact`] (see there for the bound).
//! - `reclaims`: one row per deletion attempt ([`reclaim::AuditRecord`](crate::reclaim::AuditRecord)).
//! - `alerts`: one row per alert that fired ([`AlertDto`](crate::dto::AlertDto)).
//! - `auto_reclaim_runs`: one row per run of an auto-reclaim rule ([`AutoRun`]).
//! - `group_samples`: `(group key, unix secs) -> label, allocated bytes, items` of each group of
//!   unattributed entries ([`GroupSample`], key from [`group_key`]), bounded as `samples` are.
//! - `group_writers`: `(group key, evidence kind, name) -> exe, app, agreement, first and last
//!   seen alive, and for a pid in the name which digit run is the pid` ([`StoredWriter`]): a
//!   writer stays named after it exited and the monitor restarted, and a rule made from the group
//!   still gets its owner from it (schema 4 added the digit run; a read-only open reads a schema-3
//!   file, whose writers have none).
//!
//! Times are stored as Unix seconds, sizes as bytes. The file is opened in WAL mode with a short busy
//! timeout, so a locked or corrupt database is reported quickly with its path, and never deleted.

mod alert_log;
mod auto_runs;
mod compact;
mod error;
mod file_check;
mod groups;
mod growth;
mod outside;
mod reclaims;
mod runs;
mod samples;
mod schema;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags};

pub use auto_runs::{AutoRun, ProducerFreed};
pub use compact::{CompactReport, MAX_ROWS_PER_SERIES};
pub use error::HistoryError;
pub use groups::{group_key, key_from_hex, key_hex, kind_text, GroupSample, StoredWriter};
pub use growth::{disk_full_eta, recent_window, steady_eta, Growth, MIN_ETA_SPAN};
pub use reclaims::{ATTEMPT, INTERRUPTED};
pub use runs::{group_runs, AuditRow, ReclaimRun, RUN_GAP_SECS};
pub use samples::{Sample, Series};
pub use schema::{APPLICATION_ID, READABLE_SINCE, SCHEMA_VERSION};

/// How long a statement waits for another process's lock before failing with
/// [`HistoryError::Locked`].
pub const BUSY_TIMEOUT: Duration = Duration::from_millis(1500);

/// An open history database.
#[derive(Debug)]
pub struct History {
    conn: Connection,
    path: PathBuf,
    /// Device and inode of the file when opened for writing (checked before each write).
    file_id: Option<(u64, u64)>,
    /// Set when the file was found deleted or replaced and recreated; see `take_notice`.
    notice: Option<HistoryError>,
    /// The schema version of the file: [`SCHEMA_VERSION`] once migrated; a read-only open may
    /// read an older one (from [`schema::READABLE_SINCE`]).
    schema: i64,
}

impl History {
    /// Opens the history database at `path`, creating the file and its parent dir if missing, and
    /// migrating its schema to [`SCHEMA_VERSION`].
    ///
    /// The file is opened as itself: a symlink at `path`, or anything but a regular file, is
    /// refused before SQLite sees it (SQLite would follow the link and create or write a database
    /// wherever it points); a symlink among the dirs is followed only when trusted (see
    /// [`crate::safe_file`]).
    ///
    /// # Errors
    /// [`HistoryError::File`] when the path is a symlink, not a regular file, or goes through a
    /// link another user could have planted;
    /// [`HistoryError::CreateDir`] when the parent dir cannot be created;
    /// [`HistoryError::Corrupt`] when the file is not a SQLite database or is damaged (the file is
    /// left as it was); [`HistoryError::Foreign`] when it is another program's database (left as
    /// it was); [`HistoryError::Locked`] when another process holds a lock for longer than
    /// [`BUSY_TIMEOUT`]; [`HistoryError::TooNew`] when the file was written by a newer cachewatch;
    /// [`HistoryError::Sql`] for any other SQLite failure.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| HistoryError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let (real, id) = file_check::check_before_open(path, true)?;
        Self::open_with(path, &real, id, flags, true)
    }

    /// Opens an existing history database read-only (for `cachewatch history`); never creates or
    /// migrates anything.
    ///
    /// # Errors
    /// As [`History::open`], plus [`HistoryError::Sql`] when the file does not exist, and
    /// [`HistoryError::Empty`] when it has no schema yet (an empty file),
    /// [`HistoryError::TooOld`] when its schema is older than this cachewatch reads.
    pub fn open_read_only(path: &Path) -> Result<History, HistoryError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let (real, id) = file_check::check_before_open(path, false)?;
        Self::open_with(path, &real, id, flags, false)
    }

    /// Opens the database at `real` (`path` with every link on the way resolved, checked by
    /// [`file_check::check_before_open`], device and inode `id`), never through a link at the file
    /// itself (`SQLITE_OPEN_NOFOLLOW`: a link swapped in after the check fails the open).
    fn open_with(
        path: &Path,
        real: &Path,
        id: Option<(u64, u64)>,
        flags: OpenFlags,
        writable: bool,
    ) -> Result<History, HistoryError> {
        let err = |op| sql_err(path, op);
        let conn = Connection::open_with_flags(real, flags | OpenFlags::SQLITE_OPEN_NOFOLLOW)
            .map_err(err("open"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(err("set busy timeout"))?;
        let mut history = History {
            conn,
            path: path.to_path_buf(),
            file_id: None,
            notice: None,
            schema: SCHEMA_VERSION,
        };
        // The first statement that reads the file: a file that is not a database fails here, and
        // another program's database is refused before anything (even WAL mode) is written to it.
        schema::check_ours(&history.conn, path)?;
        if writable {
            // Two processes switching a fresh file to WAL at once can get SQLITE_BUSY without the
            // busy handler being called (a lock upgrade SQLite will not wait for): retry within
            // the busy timeout.
            let started = std::time::Instant::now();
            loop {
                match history
                    .conn
                    .pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
                {
                    Ok(()) => break,
                    Err(rusqlite::Error::SqliteFailure(f, _))
                        if f.code == rusqlite::ErrorCode::DatabaseBusy
                            && started.elapsed() < BUSY_TIMEOUT =>
                    {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                    Err(e) => return Err(err("switch to WAL")(e)),
                }
            }
            history
                .conn
                .pragma_update(None, "synchronous", "NORMAL")
                .map_err(err("set synchronous"))?;
            schema::migrate(&mut history)?;
            history.file_id = id;
        } else {
            history.schema = schema::check_readable(&history)?;
        }
        Ok(history)
    }

    /// The path of the database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Maps a SQLite error of operation `op` to a [`HistoryError`] naming this database.
    fn err(&self, op: &'static str) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
        sql_err(&self.path, op)
    }

    /// The points of one chart: `sql` selects `(time, allocated bytes, items)` oldest first for
    /// the series `id` (`?1`) at or after `since` (`?2`); `what` names the read in errors.
    fn chart_points(
        &self,
        sql: &str,
        id: &dyn rusqlite::ToSql,
        since: SystemTime,
        what: &'static str,
    ) -> Result<Vec<(SystemTime, u64, u64)>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached(sql)
            .map_err(self.err("prepare a read of samples"))?;
        let rows = stmt
            .query_map(rusqlite::params![id, unix_secs(since)], |r| {
                Ok((
                    from_unix_secs(r.get(0)?),
                    from_sql_u64(r.get(1)?),
                    from_sql_u64(r.get(2)?),
                ))
            })
            .map_err(self.err(what))?;
        rows.collect::<Result<_, _>>().map_err(self.err(what))
    }
}

/// A mapper of SQLite errors of operation `op` on the database at `path`.
pub(crate) fn sql_err<'a>(
    path: &'a Path,
    op: &'static str,
) -> impl Fn(rusqlite::Error) -> HistoryError + 'a {
    move |e| HistoryError::from_sql(path, op, e)
}

/// Unix seconds of `t`, clamped to `0..=i64::MAX` (times before 1970 become 0).
pub(crate) fn unix_secs(t: SystemTime) -> i64 {
    to_sql_u64(crate::units::unix_secs(t))
}

/// The time `secs` Unix seconds (negative values become the epoch).
pub(crate) fn from_unix_secs(secs: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// A `u64` count as SQLite's `i64`, saturating.
pub(crate) fn to_sql_u64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// An `i64` read from SQLite as `u64` (negative values become 0).
pub(crate) fn from_sql_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}
