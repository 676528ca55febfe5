//! Schema and migrations, versioned by `PRAGMA user_version`.

use super::{History, HistoryError};

/// The schema version this build writes: the number of entries in `MIGRATIONS`.
pub const SCHEMA_VERSION: i64 = 2;

/// Migration `i` takes the schema from version `i` to `i + 1`. Append only; never edit a shipped one.
const MIGRATIONS: [&str; 2] = [
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
        if found > SCHEMA_VERSION {
            return Err(HistoryError::TooNew {
                path: path.clone(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        let Some(sql) = usize::try_from(found).ok().and_then(|i| MIGRATIONS.get(i)) else {
            return Ok(());
        };
        tx.execute_batch(sql).map_err(err("migrate schema"))?;
        tx.pragma_update(None, "user_version", found + 1)
            .map_err(err("set schema version"))?;
        tx.commit().map_err(err("commit migration"))?;
    }
}

/// Checks a read-only database is at [`SCHEMA_VERSION`].
pub(super) fn check_readable(history: &History) -> Result<(), HistoryError> {
    let found = user_version(history)?;
    match found.cmp(&SCHEMA_VERSION) {
        std::cmp::Ordering::Equal => Ok(()),
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
            known: SCHEMA_VERSION,
        }),
    }
}
