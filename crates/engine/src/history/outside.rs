//! The reads behind the growth-outside-the-roots check ([`crate::outside_growth`]): a series'
//! points over a window, and when reclaims may have freed space.

use std::time::SystemTime;

use rusqlite::params;

use super::{from_sql_u64, from_unix_secs, unix_secs, History, HistoryError, Series};
use crate::reclaim::AuditOutcome;

impl History {
    /// The samples of `series` from the newest one at or before `since` (so the window is fully
    /// covered; with a shorter history, from the first) to the newest at or before `now`, oldest
    /// first, as `(time, allocated bytes)`. For a [`Series::VolumeFree`] the bytes are free bytes.
    /// Empty when the series is unknown.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn points(
        &self,
        series: &Series,
        since: SystemTime,
        now: SystemTime,
    ) -> Result<Vec<(SystemTime, u64)>, HistoryError> {
        let run = || -> rusqlite::Result<Vec<(SystemTime, u64)>> {
            let Some(id) = History::series_id(&self.conn, series, false)? else {
                return Ok(Vec::new());
            };
            let (since, now) = (unix_secs(since), unix_secs(now));
            let mut stmt = self.conn.prepare_cached(
                "SELECT time_unix_secs, allocated_bytes FROM samples WHERE series_id = ?1 \
                 AND time_unix_secs <= ?3 AND time_unix_secs >= COALESCE((SELECT \
                 MAX(time_unix_secs) FROM samples WHERE series_id = ?1 AND time_unix_secs <= ?2), \
                 ?2) ORDER BY time_unix_secs",
            )?;
            let rows = stmt.query_map(params![id, since, now], |r| {
                Ok((from_unix_secs(r.get(0)?), from_sql_u64(r.get(1)?)))
            })?;
            rows.collect()
        };
        run().map_err(self.err("read points"))
    }

    /// The times of the audit rows, after `from` and at or before `to`, of deletions that may have
    /// freed space: outcome `deleted`, or `attempt`/`interrupted` (the deletion may have run).
    /// Oldest first.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn freeing_reclaim_times(
        &self,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<SystemTime>, HistoryError> {
        let run = || -> rusqlite::Result<Vec<SystemTime>> {
            let mut stmt = self.conn.prepare_cached(
                "SELECT DISTINCT time_unix_secs FROM reclaims WHERE time_unix_secs > ?1 \
                 AND time_unix_secs <= ?2 AND outcome IN (?3, ?4, ?5) \
                 ORDER BY time_unix_secs",
            )?;
            let rows = stmt.query_map(
                params![
                    unix_secs(from),
                    unix_secs(to),
                    AuditOutcome::DELETED,
                    AuditOutcome::ATTEMPT,
                    AuditOutcome::INTERRUPTED
                ],
                |r| Ok(from_unix_secs(r.get(0)?)),
            )?;
            rows.collect()
        };
        run().map_err(self.err("read reclaim times"))
    }
}
