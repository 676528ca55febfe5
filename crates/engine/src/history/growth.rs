//! Growth queries over the samples, and the disk-full ETA.

use std::time::{Duration, SystemTime};

use rusqlite::{params, OptionalExtension};

use super::{from_unix_secs, unix_secs, History, HistoryError, Series};
use crate::reclaim::AuditOutcome;

/// How a series changed between two of its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Growth {
    /// Change of allocated bytes, `to` minus `from` (negative when it shrank).
    pub bytes: i64,
    /// Change of the item count (negative when it shrank).
    pub items: i64,
    /// Time of the earlier sample.
    pub from: SystemTime,
    /// Time of the later sample.
    pub to: SystemTime,
}

impl Growth {
    /// The time between the two samples (zero if `to` is not after `from`).
    pub fn span(&self) -> Duration {
        self.to.duration_since(self.from).unwrap_or_default()
    }

    /// Byte growth scaled to `per` (e.g. per hour), rounded toward zero; `None` for a zero span.
    pub fn bytes_per(&self, per: Duration) -> Option<i64> {
        scale(self.bytes, self.span(), per)
    }

    /// Item growth scaled to `per`, rounded toward zero; `None` for a zero span.
    pub fn items_per(&self, per: Duration) -> Option<i64> {
        scale(self.items, self.span(), per)
    }
}

fn scale(amount: i64, span: Duration, per: Duration) -> Option<i64> {
    let span_ms = i128::try_from(span.as_millis()).ok().filter(|s| *s > 0)?;
    let per_ms = i128::try_from(per.as_millis()).ok()?;
    i64::try_from(i128::from(amount) * per_ms / span_ms).ok()
}

/// Seconds until `free_bytes` are used up if the total keeps growing as in `growth`:
/// `free_bytes * span / bytes`, rounded down. `None` when the total is not growing (or the span
/// is zero).
pub fn disk_full_eta(free_bytes: u64, growth: &Growth) -> Option<Duration> {
    let bytes = u128::try_from(growth.bytes).ok().filter(|b| *b > 0)?;
    let span_ms = growth.span().as_millis();
    if span_ms == 0 {
        return None;
    }
    let eta_ms = u128::from(free_bytes) * span_ms / bytes;
    Some(Duration::from_millis(
        u64::try_from(eta_ms).unwrap_or(u64::MAX),
    ))
}

/// One stored point: (unix secs, allocated bytes, items).
type Point = (i64, i64, i64);

fn latest_at_or_before(
    conn: &rusqlite::Connection,
    id: i64,
    t: i64,
) -> rusqlite::Result<Option<Point>> {
    conn.prepare_cached(
        "SELECT time_unix_secs, allocated_bytes, items FROM samples WHERE series_id = ?1 \
         AND time_unix_secs <= ?2 ORDER BY time_unix_secs DESC LIMIT 1",
    )?
    .query_row(params![id, t], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    .optional()
}

fn earliest_at_or_after(
    conn: &rusqlite::Connection,
    id: i64,
    t: i64,
) -> rusqlite::Result<Option<Point>> {
    conn.prepare_cached(
        "SELECT time_unix_secs, allocated_bytes, items FROM samples WHERE series_id = ?1 \
         AND time_unix_secs >= ?2 ORDER BY time_unix_secs LIMIT 1",
    )?
    .query_row(params![id, t], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    .optional()
}

fn between(from: Option<Point>, to: Option<Point>) -> Option<Growth> {
    let (from, to) = (from?, to?);
    (from.0 < to.0).then(|| Growth {
        bytes: to.1.saturating_sub(from.1),
        items: to.2.saturating_sub(from.2),
        from: from_unix_secs(from.0),
        to: from_unix_secs(to.0),
    })
}

impl History {
    /// Growth of `series` from the sample at `since` to its newest sample at or before `now`.
    /// The base is the newest sample at or before `since`; a series first sampled after `since`
    /// is measured from its first sample (so `from` may be later than `since`: read it).
    /// `None` when fewer than two samples fall in that range.
    fn growth_from(
        &self,
        series: &Series,
        since: i64,
        now: i64,
    ) -> rusqlite::Result<Option<Growth>> {
        let Some(id) = History::series_id(&self.conn, series, false)? else {
            return Ok(None);
        };
        let from = match latest_at_or_before(&self.conn, id, since)? {
            Some(p) => Some(p),
            None => earliest_at_or_after(&self.conn, id, since)?,
        };
        Ok(between(from, latest_at_or_before(&self.conn, id, now)?))
    }

    /// Growth of `series` over the `window` before `now` (e.g. 1 h, 24 h, 7 d): from the newest
    /// sample at or before `now - window` (or, with a shorter history, the first sample) to the
    /// newest at or before `now`. `None` when there are not two such samples.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn growth(
        &self,
        series: &Series,
        window: Duration,
        now: SystemTime,
    ) -> Result<Option<Growth>, HistoryError> {
        let since = now.checked_sub(window).unwrap_or(SystemTime::UNIX_EPOCH);
        self.growth_from(series, unix_secs(since), unix_secs(now))
            .map_err(self.err("compute growth"))
    }

    /// What grew since `since`: the growth of every size series (free-space series left out)
    /// from `since` to `now` (measured as in [`History::growth`]), largest byte growth first,
    /// then largest item growth.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn grown_since(
        &self,
        since: SystemTime,
        now: SystemTime,
    ) -> Result<Vec<(Series, Growth)>, HistoryError> {
        let mut out = Vec::new();
        for series in self.all_series()? {
            if matches!(series, Series::VolumeFree { .. }) {
                continue;
            }
            if let Some(g) = self
                .growth_from(&series, unix_secs(since), unix_secs(now))
                .map_err(self.err("compute growth"))?
            {
                out.push((series, g));
            }
        }
        out.sort_by(|a, b| {
            (b.1.bytes, b.1.items)
                .cmp(&(a.1.bytes, a.1.items))
                .then_with(|| a.0.cmp(&b.0))
        });
        Ok(out)
    }

    /// How much `producer` grew back since its last reclaim (the newest `deleted` audit row): from
    /// its first sample at or after that reclaim to its newest sample at or before `now`. `None`
    /// when it was never reclaimed or has fewer than two samples since.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn regrowth_after_reclaim(
        &self,
        producer: &str,
        now: SystemTime,
    ) -> Result<Option<Growth>, HistoryError> {
        let Some(reclaimed) = self.last_reclaim(producer)? else {
            return Ok(None);
        };
        let series = Series::Producer(producer.to_string());
        let run = || -> rusqlite::Result<Option<Growth>> {
            let Some(id) = History::series_id(&self.conn, &series, false)? else {
                return Ok(None);
            };
            let from = earliest_at_or_after(&self.conn, id, unix_secs(reclaimed))?;
            Ok(between(
                from,
                latest_at_or_before(&self.conn, id, unix_secs(now))?,
            ))
        };
        run().map_err(self.err("compute regrowth"))
    }
}

/// The shortest observed span an ETA is given for: less than this is minutes of data, not a trend.
pub const MIN_ETA_SPAN: Duration = Duration::from_secs(3600);
/// The recent part of the span whose rate must agree with the whole span's: a quarter of it, at
/// most this long.
pub const RECENT_MAX: Duration = Duration::from_secs(30 * 60);

/// The part of `whole`'s span that [`steady_eta`] compares with it: the last quarter, at most
/// [`RECENT_MAX`].
pub fn recent_window(whole: &Growth) -> Duration {
    (whole.span() / 4).min(RECENT_MAX)
}

/// Seconds until `free_bytes` are used up at `whole`'s rate, only when that is a steady trend:
/// `whole` spans at least [`MIN_ETA_SPAN`], it grew, and the `recent` growth (over
/// [`recent_window`]) ran at between half and twice the whole span's rate. `None` otherwise: a
/// leak that stopped, a burst of minutes, or a total that shrank give no ETA.
pub fn steady_eta(free_bytes: u64, whole: &Growth, recent: Option<&Growth>) -> Option<Duration> {
    let recent = recent?;
    if whole.span() < MIN_ETA_SPAN || whole.bytes <= 0 || recent.bytes <= 0 {
        return None;
    }
    let rate = |g: &Growth| g.bytes as f64 / g.span().as_secs_f64().max(1.0);
    let (w, r) = (rate(whole), rate(recent));
    if r < w / 2.0 || r > w * 2.0 {
        return None;
    }
    disk_full_eta(free_bytes, whole)
}

impl History {
    /// [`History::growth`] with reclaims kept out: the allocated bytes and items of every audit
    /// row with outcome `deleted` of the series' producer (every producer for the total) between
    /// the two samples are added back, so a reclaim does not read as shrinking. Root series are
    /// returned as they are.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn observed_growth(
        &self,
        series: &Series,
        window: Duration,
        now: SystemTime,
    ) -> Result<Option<Growth>, HistoryError> {
        let Some(mut g) = self.growth(series, window, now)? else {
            return Ok(None);
        };
        let producer = match series {
            Series::Producer(id) => Some(id.as_str()),
            Series::Total => None,
            _ => return Ok(Some(g)),
        };
        let (bytes, items): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT COALESCE(SUM(allocated_bytes), 0), COUNT(*) FROM reclaims \
                 WHERE outcome = ?4 AND time_unix_secs > ?1 AND time_unix_secs <= ?2 \
                 AND (?3 IS NULL OR producer = ?3)",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![
                        unix_secs(g.from),
                        unix_secs(g.to),
                        producer,
                        AuditOutcome::DELETED
                    ],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
            })
            .map_err(self.err("read reclaims for growth"))?;
        g.bytes = g.bytes.saturating_add(bytes);
        g.items = g.items.saturating_add(items);
        Ok(Some(g))
    }
}

/// A growth as the snapshot says it: over the span observed, never extrapolated.
impl From<Growth> for crate::dto::ObservedGrowth {
    fn from(g: Growth) -> crate::dto::ObservedGrowth {
        crate::dto::ObservedGrowth {
            bytes: g.bytes,
            items: g.items,
            span_secs: g.span().as_secs(),
        }
    }
}
