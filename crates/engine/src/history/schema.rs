//! Schema and migrations, versioned by `PRAGMA user_version`, marked ours by
//! `PRAGMA application_id` ([`APPLICATION_ID`]).
//!
//! A database is ours when it carries our application id; when it is empty (no table: a new
//! file); or, written before the id was set, when its tables are exactly the ones its schema
//! version has. Any other database (another program's) is refused with what was found in it,
//! before anything is written to it: cachewatch never adds its tables to another program's file.

use rusqlite::Connection;

use super::{History, HistoryError};

/// `PRAGMA application_id` of a cachewatch history database: `CWDB` in ASCII.
pub const APPLICATION_ID: i32 = 0x4357_4442;

/// The tables each schema version has (index: version - 1), for databases written before the
/// application id was set.
const TABLES: [&[&str]; 4] = [
    &["alerts", "reclaims", "samples", "series"],
    &[
        "alerts",
        "auto_reclaim_runs",
        "reclaims",
        "samples",
        "series",
    ],
    &[
        "alerts",
        "auto_reclaim_runs",
        "group_samples",
        "group_writers",
        "reclaims",
        "samples",
        "series",
    ],
    // Version 4 adds a column, no table.
    &[
        "alerts",
        "auto_reclaim_runs",
        "group_samples",
        "group_writers",
        "reclaims",
        "samples",
        "series",
    ],
];

/// The schema version this build writes: the number of entries in `MIGRATIONS`.
pub const SCHEMA_VERSION: i64 = 4;

/// The oldest schema version a read-only open reads as it is (it cannot migrate): version 4 only
/// added `group_writers.pid_run`, which reads of a version 3 database take as unknown (NULL).
pub const READABLE_SINCE: i64 = 3;

/// The first schema version with `group_writers.pid_run`.
pub(super) const PID_RUN_SINCE: i64 = 4;

/// Migration `i` takes the schema from version `i` to `i + 1`. Append only; never edit a shipped one.
const MIGRATIONS: [&str; 4] = [
    r#"
CREATE TABLE series (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,            -- 'producer' | 'root' | 'total'
    name TEXT NOT NULL,            -- producer id, root kind, or '' for the total
    path_text TEXT NOT NULL,       -- root path (lossy UTF-8), '' otherwise
    path_raw BLOB NOT NULL,        -- root path bytes, empty otherwise
    UNIQUE (kind, name, path_raw)
);
CREATE TABLE samples (
    series_id INTEGER NOT NULL REFERENCES series(id),
    time_unix_secs INTEGER NOT NULL,
    allocated_bytes INTEGER NOT NULL,
    apparent_bytes INTEGER NOT NULL,
    items INTEGER NOT NULL,
    PRIMARY KEY (series_id, time_unix_secs)
) WITHOUT ROWID;
CREATE INDEX samples_by_time ON samples (time_unix_secs);
CREATE TABLE reclaims (
    id INTEGER PRIMARY KEY,
    time_unix_secs INTEGER NOT NULL,
    path_text TEXT NOT NULL,
    path_raw BLOB NOT NULL,
    producer TEXT NOT NULL,
    allocated_bytes INTEGER NOT NULL,
    outcome TEXT NOT NULL
);
CREATE INDEX reclaims_by_time ON reclaims (time_unix_secs);
CREATE INDEX reclaims_by_producer ON reclaims (producer, time_unix_secs);
CREATE TABLE alerts (
    id INTEGER PRIMARY KEY,
    time_unix_secs INTEGER NOT NULL,
    rule TEXT NOT NULL,
    producer TEXT,
    title TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX alerts_by_time ON alerts (time_unix_secs);
"#,
    r#"
CREATE TABLE auto_reclaim_runs (
    id INTEGER PRIMARY KEY,
    started_unix_secs INTEGER NOT NULL,
    finished_unix_secs INTEGER NOT NULL,
    rule TEXT NOT NULL,
    trigger TEXT NOT NULL,        -- 'interval' | 'items' | 'bytes' | 'free-space' | 'manual'
    status TEXT NOT NULL,         -- 'done' | 'paused' | 'failed'
    deleted_items INTEGER NOT NULL,
    freed_bytes INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    kept_json TEXT NOT NULL,      -- {"too-young": 3, "owner-alive": 1}
    run_json TEXT NOT NULL        -- the whole AutoRun record
);
CREATE INDEX auto_reclaim_runs_by_time ON auto_reclaim_runs (started_unix_secs);
"#,
    r#"
CREATE TABLE group_samples (
    group_key BLOB NOT NULL,      -- root path bytes, NUL, the shape key's bytes
    time_unix_secs INTEGER NOT NULL,
    label TEXT NOT NULL,          -- the shape as shown, at this sample
    allocated_bytes INTEGER NOT NULL,
    items INTEGER NOT NULL,
    PRIMARY KEY (group_key, time_unix_secs)
) WITHOUT ROWID;
CREATE INDEX group_samples_by_time ON group_samples (time_unix_secs);
CREATE TABLE group_writers (
    group_key BLOB NOT NULL,
    kind TEXT NOT NULL,           -- 'pid-in-name' | 'created-at-launch' | 'held' | 'in-path'
    name TEXT NOT NULL,
    exe_raw BLOB,                 -- executable path bytes, where known
    app TEXT,                     -- app bundle id, where known
    app_version TEXT,             -- app version, where known
    agree INTEGER NOT NULL,
    total INTEGER NOT NULL,
    first_seen_unix_secs INTEGER NOT NULL,
    last_seen_unix_secs INTEGER,  -- when a writer it names was last seen alive
    PRIMARY KEY (group_key, kind, name)
) WITHOUT ROWID;
"#,
    r#"
-- For kind 'pid-in-name': which run of ASCII digits in the members' names is the pid (0 = the
-- first); NULL for other kinds and for rows written before this column.
ALTER TABLE group_writers ADD COLUMN pid_run INTEGER;
"#,
];

fn user_version(history: &History) -> Result<i64, HistoryError> {
    history
        .conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(history.err("read schema version"))
}

/// Brings the schema to [`SCHEMA_VERSION`], one transaction per step. Safe to race (two
/// cachewatch processes opening a fresh data dir at once): each step takes the write lock first
/// (`BEGIN IMMEDIATE`, waiting up to the busy timeout) and reads the version again under it, so a
/// step another process already applied is skipped, never run twice.
pub(super) fn migrate(history: &mut History) -> Result<(), HistoryError> {
    let path = history.path.clone();
    let err = |op| super::sql_err(&path, op);
    loop {
        let tx = history
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err("begin migration"))?;
        let found: i64 = tx
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(err("read schema version"))?;
        // Again under the write lock: nothing is added to a database that is not ours.
        let app_id = check_ours(&tx, &path)?;
        if found > SCHEMA_VERSION {
            return Err(HistoryError::TooNew {
                path: path.clone(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        let Some(sql) = usize::try_from(found).ok().and_then(|i| MIGRATIONS.get(i)) else {
            if app_id != APPLICATION_ID {
                tx.pragma_update(None, "application_id", APPLICATION_ID)
                    .map_err(err("mark the database as cachewatch's"))?;
                tx.commit().map_err(err("commit migration"))?;
            }
            return Ok(());
        };
        tx.execute_batch(sql).map_err(err("migrate schema"))?;
        tx.pragma_update(None, "user_version", found + 1)
            .map_err(err("set schema version"))?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(err("mark the database as cachewatch's"))?;
        tx.commit().map_err(err("commit migration"))?;
    }
}

/// Checks a read-only database is at a version this build reads ([`READABLE_SINCE`] to
/// [`SCHEMA_VERSION`]) and returns that version.
pub(super) fn check_readable(history: &History) -> Result<i64, HistoryError> {
    let found = user_version(history)?;
    match found.cmp(&SCHEMA_VERSION) {
        std::cmp::Ordering::Equal => Ok(found),
        std::cmp::Ordering::Less if found >= READABLE_SINCE => Ok(found),
        std::cmp::Ordering::Greater => Err(HistoryError::TooNew {
            path: history.path.clone(),
            found,
            known: SCHEMA_VERSION,
        }),
        std::cmp::Ordering::Less if found == 0 => Err(HistoryError::Empty {
            path: history.path.clone(),
        }),
        std::cmp::Ordering::Less => Err(HistoryError::TooOld {
            path: history.path.clone(),
            found,
            known: READABLE_SINCE,
        }),
    }
}

/// Checks the database on `conn` (the file `path`) is ours (see the module's doc) and returns its
/// application id (ours, or 0 for an empty or older cachewatch database).
///
/// # Errors
/// [`HistoryError::Foreign`] naming what was found; the SQLite errors of reading the header and
/// the table list ([`HistoryError::Corrupt`] when the file is not a database).
pub(super) fn check_ours(conn: &Connection, path: &std::path::Path) -> Result<i32, HistoryError> {
    let err = |op| super::sql_err(path, op);
    // One read transaction, so the id, the version and the tables are of one moment (another
    // process may be creating the schema meanwhile); the caller's own transaction when in one.
    let _snapshot = if conn.is_autocommit() {
        Some(
            conn.unchecked_transaction()
                .map_err(err("begin reading the schema"))?,
        )
    } else {
        None
    };
    let app_id: i32 = conn
        .query_row("PRAGMA application_id", [], |row| row.get(0))
        .map_err(err("read the application id"))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(err("read schema version"))?;
    if app_id == APPLICATION_ID {
        return Ok(app_id);
    }
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )
        .map_err(err("list the tables"))?;
    let tables: Vec<String> = stmt
        .query_map([], |row| row.get(0))
        .map_err(err("list the tables"))?
        .collect::<Result<_, _>>()
        .map_err(err("list the tables"))?;
    drop(stmt);
    let empty_new = app_id == 0 && version == 0 && tables.is_empty();
    let older_ours = app_id == 0
        && usize::try_from(version)
            .ok()
            .and_then(|v| v.checked_sub(1))
            .and_then(|i| TABLES.get(i))
            .is_some_and(|want| want.iter().copied().eq(tables.iter().map(String::as_str)));
    if empty_new || older_ours {
        return Ok(app_id);
    }
    Err(HistoryError::Foreign {
        path: path.to_path_buf(),
        tables,
        application_id: app_id,
        user_version: version,
    })
}
