//! The history's errors: each names the database file and the operation.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// What went wrong with the history database.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The dir that should hold the database cannot be created.
    #[error("cannot create the history dir {path:?}: {source}")]
    CreateDir {
        /// The dir.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The path is refused before SQLite opens it: a symlink, not a regular file, or reached
    /// through a link another user could have planted (the file is left as it was).
    #[error("history database {path:?}: {source}")]
    File {
        /// The database file.
        path: PathBuf,
        /// Which rule refused (boxed: the refusals are large).
        source: Box<crate::safe_file::WriteError>,
    },
    /// The file is not a SQLite database, or is damaged. It is left as it was.
    #[error(
        "the history database {path:?} is corrupt or not a SQLite database ({operation}: {source}); \
         it was left as it was: move it aside to start a new history"
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        operation: &'static str,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// Another process holds a lock on the database for longer than the busy timeout.
    #[error(
        "the history database {path:?} is locked by another process ({operation}); \
         is another cachewatch monitor running?"
    )]
    Locked {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        operation: &'static str,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// The file is another program's SQLite database (see [`super::schema`]); nothing was
    /// written to it.
    #[error(
        "refusing to use {path:?} as the history database: it is another program's SQLite \
         database (tables: {}; application_id {application_id:#x}, user_version {user_version}), \
         and cachewatch never adds its tables to another program's file; it was left as it was: \
         pass --data-dir with another dir, or move the file aside",
        if tables.is_empty() { "none".to_owned() } else { tables.join(", ") }
    )]
    Foreign {
        /// The database file.
        path: PathBuf,
        /// The names of its tables and views.
        tables: Vec<String>,
        /// Its `PRAGMA application_id`.
        application_id: i32,
        /// Its `PRAGMA user_version`.
        user_version: i64,
    },
    /// The database was written by a newer cachewatch.
    #[error(
        "the history database {path:?} has schema version {found}, newer than {known} which this \
         cachewatch knows; upgrade cachewatch"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// A read-only open found a database with no schema at all (an empty file, schema version 0):
    /// nothing has recorded history into it yet.
    #[error(
        "the history database {path:?} is empty (no schema yet: nothing has recorded history into \
         it); run `cachewatch watch` or the app once to create it"
    )]
    Empty {
        /// The database file.
        path: PathBuf,
    },
    /// A read-only open found an older schema it cannot read without migrating.
    #[error(
        "the history database {path:?} has schema version {found}, older than {known}; run the \
         monitor once to migrate it"
    )]
    TooOld {
        /// The database file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The version this build needs.
        known: i64,
    },
    /// The database file was deleted or replaced while open (a notice, not a failure: the write
    /// went on into a database recreated at the same path).
    #[error(
        "the history database {path:?} was {what} while cachewatch had it open; it was recreated \
         (or reopened) at that path and history goes on there: rows written before are gone from it, \
         restore the file from a backup if you need them"
    )]
    Recreated {
        /// The database file.
        path: PathBuf,
        /// `deleted` or `replaced by another file`.
        what: &'static str,
    },
    /// Any other SQLite failure.
    #[error("history database {path:?}: {operation} failed: {source}")]
    Sql {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        operation: &'static str,
        /// The SQLite error.
        source: rusqlite::Error,
    },
}

impl HistoryError {
    /// Classifies a SQLite error of `operation` on the database at `path`.
    pub(crate) fn from_sql(path: &Path, operation: &'static str, source: rusqlite::Error) -> Self {
        let path = path.to_path_buf();
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => HistoryError::Corrupt {
                path,
                operation,
                source,
            },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => HistoryError::Locked {
                path,
                operation,
                source,
            },
            _ => HistoryError::Sql {
                path,
                operation,
                source,
            },
        }
    }

    /// True when the database is corrupt or not a database (the monitor should run without
    /// history and tell the user, never delete the file).
    pub fn is_corrupt(&self) -> bool {
        matches!(self, HistoryError::Corrupt { .. })
    }

    /// True when another process holds the database lock.
    pub fn is_locked(&self) -> bool {
        matches!(self, HistoryError::Locked { .. })
    }
}
