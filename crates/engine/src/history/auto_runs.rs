//! The runs of the auto-reclaim rules: one row per run (rule, trigger, what it deleted and freed,
//! what it kept by reason, its errors). The deletions themselves are in `reclaims`, written before
//! each one like any other reclaim's.

use std::collections::BTreeMap;
use std::time::SystemTime;

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{to_sql_u64, unix_secs, History, HistoryError};
use crate::dto::{RunStatus, Trigger};

/// What a run deleted of one producer.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerFreed {
    /// Items deleted.
    pub items: u64,
    /// Allocated bytes freed (re-measured just before deleting).
    pub bytes: u64,
}

/// One run of an auto-reclaim rule, as stored and as shown (`cachewatch history`, the snapshot).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoRun {
    /// The rule's name (`name`, else its producer ids joined with `+`).
    pub rule: String,
    /// What started it: `interval`, `items`, `bytes`, `free-space` or `manual`.
    pub trigger: Trigger,
    /// `done`, `paused` (stopped between batches by a pause or a shutdown) or `failed`
    /// (nothing or not everything could be attempted: no audit rows, a root busy).
    pub status: RunStatus,
    /// The producer ids of the rule.
    pub producers: Vec<String>,
    /// The rule's age threshold, seconds (a producer's `min_age_secs` may raise it).
    pub older_than_secs: u64,
    /// When the run started (the time its plan was made), Unix seconds.
    pub started_unix_secs: u64,
    /// When it ended, Unix seconds.
    pub finished_unix_secs: u64,
    /// Items the plan listed for deletion.
    pub planned_items: u64,
    /// Items deleted.
    pub deleted_items: u64,
    /// Allocated bytes freed.
    pub freed_bytes: u64,
    /// Items already gone when reached (not an error).
    pub already_gone: u64,
    /// Items kept, by reason code (`too-young`, `owner-alive`, `in-use`, ...): at planning and at
    /// the re-check before deleting.
    pub kept: BTreeMap<String, u64>,
    /// Items that failed, plus audit writes that failed.
    pub errors: u64,
    /// The first error's text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// What was deleted, per producer id.
    #[serde(default)]
    pub by_producer: BTreeMap<String, ProducerFreed>,
}

impl History {
    /// Appends one run; returns its row id.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database when the insert fails.
    pub fn record_auto_run(&mut self, run: &AutoRun) -> Result<i64, HistoryError> {
        self.check_file()?;
        let kept = serde_json::to_string(&run.kept).unwrap_or_else(|_| "{}".into());
        let whole = serde_json::to_string(run).unwrap_or_else(|_| "{}".into());
        self.conn
            .execute(
                "INSERT INTO auto_reclaim_runs (started_unix_secs, finished_unix_secs, rule, \
                 trigger, status, deleted_items, freed_bytes, errors, kept_json, run_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    to_sql_u64(run.started_unix_secs),
                    to_sql_u64(run.finished_unix_secs),
                    run.rule,
                    run.trigger.as_str(),
                    run.status.as_str(),
                    to_sql_u64(run.deleted_items),
                    to_sql_u64(run.freed_bytes),
                    to_sql_u64(run.errors),
                    kept,
                    whole,
                ],
            )
            .map_err(self.err("record an auto-reclaim run"))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The runs that started at or after `since` (to the second), oldest first.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database when the query fails.
    pub fn auto_runs(&self, since: SystemTime) -> Result<Vec<AutoRun>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT run_json FROM auto_reclaim_runs WHERE started_unix_secs >= ?1 \
                 ORDER BY started_unix_secs, id",
            )
            .map_err(self.err("prepare reading auto-reclaim runs"))?;
        let rows = stmt
            .query_map([unix_secs(since)], |row| row.get::<_, String>(0))
            .map_err(self.err("read auto-reclaim runs"))?;
        let mut out = Vec::new();
        for text in rows {
            let text = text.map_err(self.err("read auto-reclaim runs"))?;
            match serde_json::from_str(&text) {
                Ok(run) => out.push(run),
                Err(e) => tracing::warn!(error = %e, "unreadable auto-reclaim run row skipped"),
            }
        }
        Ok(out)
    }
}
