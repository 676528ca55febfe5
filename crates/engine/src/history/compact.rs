//! Downsampling, so the database stays bounded.
//!
//! Tiers, by a sample's age at compaction time (`now - time`):
//!
//! | age            | kept                           | rows per series, at most |
//! |----------------|--------------------------------|--------------------------|
//! | under 48 h     | the last sample of each minute | 2,881                    |
//! | 48 h to 30 d   | the last sample of each hour   | 673                      |
//! | 30 d to 400 d  | the last sample of each day    | 371                      |
//! | over 400 d     | nothing                        | 0                        |
//!
//! Buckets are aligned to the Unix epoch (UTC minutes, hours, days); the "+1" in each bound is
//! the bucket cut by a tier boundary. Keeping the *last* sample of a bucket (with its own time)
//! rather than an average keeps every stored point a real measurement, so growth between any two
//! stored points stays exact. Reclaim and alert rows older than 400 d are deleted too.

use std::time::{Duration, SystemTime};

use rusqlite::params;

use super::{unix_secs, History, HistoryError};

/// `(age where the tier ends, bucket width in seconds)`, youngest first; each tier starts where
/// the previous one ends. Beyond the last tier's end ([`RETENTION`]) samples are deleted.
const TIERS: [(Duration, i64); 3] = [
    (Duration::from_secs(48 * 3600), 60),
    (Duration::from_secs(30 * 86400), 3600),
    (RETENTION, 86400),
];

/// How long anything is kept: 400 days.
pub const RETENTION: Duration = Duration::from_secs(400 * 86400);

/// The most sample rows one series holds right after [`History::compact`] (for samples not in
/// the future): 2,881 + 673 + 371.
pub const MAX_ROWS_PER_SERIES: u64 = 2881 + 673 + 371;

/// What a compaction removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Sample rows merged away or expired.
    pub samples_deleted: u64,
    /// Reclaim and alert rows expired.
    pub log_rows_deleted: u64,
}

impl History {
    /// Downsamples and expires old rows as of `now` (see the module docs for the tiers and the
    /// bound). Idempotent; one transaction.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database; on error nothing changes.
    pub fn compact(&mut self, now: SystemTime) -> Result<CompactReport, HistoryError> {
        self.check_file()?;
        let path = self.path.clone();
        let err = |op| super::sql_err(&path, op);
        let now = unix_secs(now);
        let cut =
            |age: Duration| now.saturating_sub(i64::try_from(age.as_secs()).unwrap_or(i64::MAX));
        let mut report = CompactReport::default();
        let tx = self.conn.transaction().map_err(err("begin compaction"))?;
        let mut hi = i64::MAX;
        for (ends_at_age, bucket_secs) in TIERS {
            let lo = cut(ends_at_age);
            let deleted = tx
                .execute(
                    // A row goes when the next row of its series is in the same bucket and tier:
                    // one index seek per row (MIN over the primary key), not a scan.
                    "DELETE FROM samples WHERE time_unix_secs >= ?1 AND time_unix_secs < ?2 \
                     AND (SELECT MIN(later.time_unix_secs) FROM samples AS later \
                       WHERE later.series_id = samples.series_id \
                       AND later.time_unix_secs > samples.time_unix_secs) \
                     < MIN(?2, (samples.time_unix_secs / ?3 + 1) * ?3)",
                    params![lo, hi, bucket_secs],
                )
                .map_err(err("downsample samples"))?;
            report.samples_deleted += deleted as u64;
            hi = lo;
        }
        let mut hi = i64::MAX;
        for (ends_at_age, bucket_secs) in TIERS {
            let lo = cut(ends_at_age);
            let deleted = tx
                .execute(
                    "DELETE FROM group_samples WHERE time_unix_secs >= ?1 AND time_unix_secs < ?2 \
                     AND (SELECT MIN(later.time_unix_secs) FROM group_samples AS later \
                       WHERE later.group_key = group_samples.group_key \
                       AND later.time_unix_secs > group_samples.time_unix_secs) \
                     < MIN(?2, (group_samples.time_unix_secs / ?3 + 1) * ?3)",
                    params![lo, hi, bucket_secs],
                )
                .map_err(err("downsample group samples"))?;
            report.samples_deleted += deleted as u64;
            hi = lo;
        }
        let expired = cut(RETENTION);
        for table in ["samples", "group_samples"] {
            let deleted = tx
                .execute(
                    &format!("DELETE FROM {table} WHERE time_unix_secs < ?1"),
                    [expired],
                )
                .map_err(err("expire samples"))?;
            report.samples_deleted += deleted as u64;
        }
        // A writer goes with the last sample of its group.
        tx.execute(
            "DELETE FROM group_writers WHERE group_key NOT IN \
             (SELECT DISTINCT group_key FROM group_samples) AND first_seen_unix_secs < ?1",
            [expired],
        )
        .map_err(err("drop the writers of expired groups"))?;
        tx.execute(
            "DELETE FROM series WHERE id NOT IN (SELECT DISTINCT series_id FROM samples)",
            [],
        )
        .map_err(err("drop empty series"))?;
        for table in ["reclaims", "alerts"] {
            let deleted = tx
                .execute(
                    &format!("DELETE FROM {table} WHERE time_unix_secs < ?1"),
                    [expired],
                )
                .map_err(err("expire log rows"))?;
            report.log_rows_deleted += deleted as u64;
        }
        tx.commit().map_err(err("commit compaction"))?;
        Ok(report)
    }
}
