//! The reclaim audit trail: one row per deletion attempt.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::SystemTime;

use rusqlite::params;

use super::{from_sql_u64, from_unix_secs, to_sql_u64, unix_secs, History, HistoryError};
use crate::reclaim::AuditRecord;

impl History {
    /// Appends `rec` to the `reclaims` table. The path is stored both as lossy UTF-8 text (for
    /// people and SQL) and as its raw bytes (read back by [`History::reclaims`]).
    ///
    /// # Errors
    /// [`HistoryError`] naming this database when the insert fails (locked, corrupt, disk full).
    pub fn record_reclaim(&mut self, rec: &AuditRecord) -> Result<(), HistoryError> {
        self.conn
            .execute(
                "INSERT INTO reclaims (time_unix_secs, path_text, path_raw, producer, \
                 allocated_bytes, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    unix_secs(rec.time),
                    rec.path.to_string_lossy(),
                    rec.path.as_os_str().as_encoded_bytes(),
                    rec.producer,
                    to_sql_u64(rec.allocated_bytes),
                    rec.outcome,
                ],
            )
            .map_err(self.err("record a reclaim"))?;
        Ok(())
    }

    /// Records many audit rows in one transaction (a reclaim of 100k items is one commit, not
    /// 100k).
    ///
    /// # Errors
    /// As [`History::record_reclaim`]; on error nothing is recorded.
    pub fn record_reclaims(&mut self, recs: &[AuditRecord]) -> Result<(), HistoryError> {
        let path = self.path.clone();
        let err = |op| super::sql_err(&path, op);
        let tx = self
            .conn
            .transaction()
            .map_err(err("begin recording reclaims"))?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO reclaims (time_unix_secs, path_text, path_raw, producer, \
                     allocated_bytes, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(err("prepare recording reclaims"))?;
            for rec in recs {
                stmt.execute(params![
                    unix_secs(rec.time),
                    rec.path.to_string_lossy(),
                    rec.path.as_os_str().as_encoded_bytes(),
                    rec.producer,
                    to_sql_u64(rec.allocated_bytes),
                    rec.outcome,
                ])
                .map_err(err("record a reclaim"))?;
            }
        }
        tx.commit().map_err(err("commit reclaims"))
    }

    /// The audit rows at or after `since` (to the second), oldest first.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database when the query fails.
    pub fn reclaims(&self, since: SystemTime) -> Result<Vec<AuditRecord>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT time_unix_secs, path_raw, producer, allocated_bytes, outcome FROM reclaims \
                 WHERE time_unix_secs >= ?1 ORDER BY time_unix_secs, id",
            )
            .map_err(self.err("prepare reading reclaims"))?;
        let rows = stmt
            .query_map([unix_secs(since)], |row| {
                let raw: Vec<u8> = row.get(1)?;
                Ok(AuditRecord {
                    time: from_unix_secs(row.get(0)?),
                    path: PathBuf::from(OsString::from_vec(raw)),
                    producer: row.get(2)?,
                    allocated_bytes: from_sql_u64(row.get(3)?),
                    outcome: row.get(4)?,
                })
            })
            .map_err(self.err("read reclaims"))?;
        rows.collect::<Result<_, _>>()
            .map_err(self.err("read reclaims"))
    }

    /// When `producer` was last reclaimed: the time of its newest audit row with outcome
    /// `deleted`; `None` if never.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database when the query fails.
    pub fn last_reclaim(&self, producer: &str) -> Result<Option<SystemTime>, HistoryError> {
        let secs: Option<i64> = self
            .conn
            .query_row(
                "SELECT MAX(time_unix_secs) FROM reclaims WHERE producer = ?1 AND outcome = 'deleted'",
                [producer],
                |row| row.get(0),
            )
            .map_err(self.err("read the last reclaim"))?;
        Ok(secs.map(from_unix_secs))
    }
}
