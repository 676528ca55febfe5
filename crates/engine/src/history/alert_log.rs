//! The alert log: every alert that fired, for the UI and for restoring cooldowns after a restart.

use rusqlite::params;

use super::{from_sql_u64, to_sql_u64, History, HistoryError};
use crate::dto::{AlertDto, AlertRule};

impl History {
    /// Appends `alert` (its `id` is ignored) and returns the new row id.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn record_alert(&mut self, alert: &AlertDto) -> Result<i64, HistoryError> {
        self.check_file()?;
        self.conn
            .prepare_cached(
                "INSERT INTO alerts (time_unix_secs, rule, producer, title, message) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    to_sql_u64(alert.time_unix_secs),
                    alert.rule.as_str(),
                    alert.producer,
                    alert.title,
                    alert.message,
                ])
            })
            .map_err(self.err("record an alert"))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The `n` newest alerts, newest first, with their row ids.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn recent_alerts(&self, n: usize) -> Result<Vec<AlertDto>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, time_unix_secs, rule, producer, title, message FROM alerts \
                 ORDER BY time_unix_secs DESC, id DESC LIMIT ?1",
            )
            .map_err(self.err("prepare reading alerts"))?;
        // A row of a rule this build does not know (written by a newer one) is left out.
        let rows = stmt
            .query_map([i64::try_from(n).unwrap_or(i64::MAX)], |r| {
                let Some(rule) = AlertRule::parse(&r.get::<_, String>(2)?) else {
                    return Ok(None);
                };
                Ok(Some(AlertDto {
                    id: r.get(0)?,
                    ..AlertDto::new(
                        from_sql_u64(r.get(1)?),
                        rule,
                        r.get(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                    )
                }))
            })
            .map_err(self.err("read alerts"))?;
        let rows: Vec<Option<AlertDto>> = rows
            .collect::<Result<_, _>>()
            .map_err(self.err("read alerts"))?;
        Ok(rows.into_iter().flatten().collect())
    }
}
