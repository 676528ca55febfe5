//! The reclaim audit trail: one row per deletion attempt.
//!
//! A reclaim that writes its rows before deleting ([`History::begin_reclaims`]) leaves each row
//! with outcome [`ATTEMPT`] until [`History::finish_reclaims`] fills the real one; a row still
//! `attempt` when read (the process died mid-reclaim, or the reclaim is still running) reads as
//! [`INTERRUPTED`].

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::SystemTime;

use rusqlite::params;

use super::{from_sql_u64, from_unix_secs, to_sql_u64, unix_secs, History, HistoryError};
use crate::reclaim::{AuditOutcome, AuditRecord};

/// The outcome stored by [`History::begin_reclaims`] before the deletion is tried
/// ([`AuditOutcome::Attempt`]).
pub const ATTEMPT: &str = AuditOutcome::ATTEMPT;

/// How [`History::reclaims`] reports a row still at [`ATTEMPT`]: the deletion may or may not have
/// happened ([`AuditOutcome::Interrupted`]).
pub const INTERRUPTED: &str = AuditOutcome::INTERRUPTED;

impl History {
    /// Writes one row per record with outcome [`ATTEMPT`] (the records' own outcomes are ignored),
    /// in one transaction, before anything is deleted. Returns the rows' ids in `recs` order, for
    /// [`History::finish_reclaims`].
    ///
    /// # Errors
    /// [`HistoryError`] naming this database when the insert fails; then nothing is recorded and
    /// the caller must not delete.
    pub fn begin_reclaims(&mut self, recs: &[AuditRecord]) -> Result<Vec<i64>, HistoryError> {
        self.insert_reclaims(recs, Some(&AuditOutcome::Attempt))
    }

    /// Sets the outcome of rows written by [`History::begin_reclaims`]: `(row id, outcome)` pairs,
    /// in one transaction. An id with no row changes nothing.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database when the update fails; then no outcome is written
    /// (the rows stay `attempt` and read as [`INTERRUPTED`]).
    pub fn finish_reclaims(
        &mut self,
        outcomes: &[(i64, AuditOutcome)],
    ) -> Result<(), HistoryError> {
        self.check_file()?;
        let path = self.path.clone();
        let err = |op| super::sql_err(&path, op);
        let tx = self
            .conn
            .transaction()
            .map_err(err("begin recording reclaim outcomes"))?;
        {
            let mut stmt = tx
                .prepare_cached("UPDATE reclaims SET outcome = ?2 WHERE id = ?1")
                .map_err(err("prepare recording reclaim outcomes"))?;
            for (id, outcome) in outcomes {
                stmt.execute(params![id, outcome.to_string()])
                    .map_err(err("record a reclaim outcome"))?;
            }
        }
        tx.commit().map_err(err("commit reclaim outcomes"))
    }

    /// Appends `rec` to the `reclaims` table. The path is stored both as lossy UTF-8 text (for
    /// people and SQL) and as its raw bytes (read back by [`History::reclaims`]).
    ///
    /// # Errors
    /// [`HistoryError`] naming this database when the insert fails (locked, corrupt, disk full).
    pub fn record_reclaim(&mut self, rec: &AuditRecord) -> Result<(), HistoryError> {
        self.record_reclaims(std::slice::from_ref(rec))
    }

    /// Records many audit rows in one transaction (a reclaim of 100k items is one commit, not
    /// 100k).
    ///
    /// # Errors
    /// As [`History::record_reclaim`]; on error nothing is recorded.
    pub fn record_reclaims(&mut self, recs: &[AuditRecord]) -> Result<(), HistoryError> {
        self.insert_reclaims(recs, None).map(|_| ())
    }

    /// Inserts one row per record in one transaction, with `outcome` instead of the records' own
    /// when given; returns the rows' ids in `recs` order. The path is stored both as lossy UTF-8
    /// text (for people and SQL) and as its raw bytes (read back by [`History::reclaims`]).
    fn insert_reclaims(
        &mut self,
        recs: &[AuditRecord],
        outcome: Option<&AuditOutcome>,
    ) -> Result<Vec<i64>, HistoryError> {
        self.check_file()?;
        let path = self.path.clone();
        let err = |op| super::sql_err(&path, op);
        let tx = self
            .conn
            .transaction()
            .map_err(err("begin recording reclaims"))?;
        let mut ids = Vec::with_capacity(recs.len());
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
                    outcome.unwrap_or(&rec.outcome).to_string(),
                ])
                .map_err(err("record a reclaim"))?;
                ids.push(tx.last_insert_rowid());
            }
        }
        tx.commit().map_err(err("commit reclaims"))?;
        Ok(ids)
    }

    /// The audit rows at or after `since` (to the second), oldest first. A row still at
    /// [`ATTEMPT`] reads with outcome [`INTERRUPTED`].
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
                let outcome: String = row.get(4)?;
                let outcome = match AuditOutcome::parse(&outcome) {
                    AuditOutcome::Attempt => AuditOutcome::Interrupted,
                    o => o,
                };
                Ok(AuditRecord {
                    time: from_unix_secs(row.get(0)?),
                    path: PathBuf::from(OsString::from_vec(raw)),
                    producer: row.get(2)?,
                    allocated_bytes: from_sql_u64(row.get(3)?),
                    outcome,
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
                "SELECT MAX(time_unix_secs) FROM reclaims WHERE producer = ?1 AND outcome = ?2",
                [producer, AuditOutcome::DELETED],
                |row| row.get(0),
            )
            .map_err(self.err("read the last reclaim"))?;
        Ok(secs.map(from_unix_secs))
    }
}
