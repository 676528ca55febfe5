//! The calls into the history database, in one place, and the blocking task they run in.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::dto::AlertDto;
use crate::history::{GroupSample, Growth, History, HistoryError, Sample, Series, StoredWriter};
use crate::watch::live::RootState;

use super::super::build::Totals;
use super::super::figures::GroupFigures;
use super::{GrowthFigures, RecordError, RECENT_ALERTS};
use crate::units::unix_secs;

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Runs the history call `f` in a blocking task.
///
/// # Errors
/// [`RecordError::History`] with `f`'s error; [`RecordError::Job`] when the task panicked.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, HistoryError> + Send + 'static,
) -> Result<T, RecordError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(RecordError::from),
        Err(e) => Err(RecordError::Job(e)),
    }
}

/// Opens the database at `path` and reads its recent alerts (newest first; a failed read is only
/// logged: the alerts are then empty).
///
/// # Errors
/// As [`History::open`].
pub(super) fn open(path: &Path) -> Result<(History, Vec<AlertDto>), HistoryError> {
    let h = History::open(path)?;
    let alerts = h.recent_alerts(RECENT_ALERTS).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read recent alerts");
        Vec::new()
    });
    Ok((h, alerts))
}

/// What the monitor reads back after writing samples.
pub(super) struct Read {
    /// Growth figures by producer id.
    pub(super) growth: BTreeMap<String, GrowthFigures>,
    /// Chart series by producer id: `(unix secs, allocated bytes)`, oldest first.
    pub(super) charts: BTreeMap<String, Vec<(u64, u64)>>,
    /// Growth of the total over the last day (or the shorter history), reclaims kept out.
    pub(super) total_growth: Option<Growth>,
    /// Growth of the total over the recent part of that span (`history::recent_window`).
    pub(super) total_recent: Option<Growth>,
    /// Growth by producer id over the alerts' growth window.
    pub(super) alert_growth: BTreeMap<String, Growth>,
    /// The history file was deleted or replaced and recreated (`HistoryError::Recreated`).
    pub(super) notice: Option<String>,
}

/// One sample per producer, per root and of the total.
pub(super) fn samples_of(roots: &[RootState], totals: &BTreeMap<String, Totals>) -> Vec<Sample> {
    let mut out: Vec<Sample> = totals
        .iter()
        .map(|(id, t)| Sample {
            series: Series::Producer(id.clone()),
            allocated_bytes: t.measure.allocated_bytes,
            apparent_bytes: t.measure.apparent_bytes,
            items: t.items,
        })
        .collect();
    let (mut a, mut b, mut n) = (0, 0, 0);
    let counted = crate::roots::counted_in_totals(roots.iter().map(|r| &r.root));
    for (st, counted) in roots.iter().zip(counted) {
        out.push(Sample {
            series: Series::Root {
                kind: st.root.kind,
                path: st.root.path.clone(),
            },
            allocated_bytes: st.total.allocated_bytes,
            apparent_bytes: st.total.apparent_bytes,
            items: st.item_count() as u64,
        });
        if counted {
            a += st.total.allocated_bytes;
            b += st.total.apparent_bytes;
            n += st.item_count() as u64;
        }
    }
    out.push(Sample {
        series: Series::Total,
        allocated_bytes: a,
        apparent_bytes: b,
        items: n,
    });
    out
}

/// The newest sample time, and `(allocated bytes, items)` by producer id.
pub(super) type LastSamples = (SystemTime, BTreeMap<String, (u64, u64)>);

/// The newest sample time and the producers' `(allocated bytes, items)` at their last sample;
/// `None` on a new database.
///
/// # Errors
/// As [`History::last_samples`].
pub(super) fn last_producer_samples(h: &History) -> Result<Option<LastSamples>, HistoryError> {
    let last = h.last_samples()?;
    let Some(at) = last.iter().map(|(t, _)| *t).max() else {
        return Ok(None);
    };
    let map = last
        .into_iter()
        .filter_map(|(_, s)| match s.series {
            Series::Producer(id) => Some((id, (s.allocated_bytes, s.items))),
            _ => None,
        })
        .collect();
    Ok(Some((at, map)))
}

/// Writes `samples` at `now`, compacts old ones, and reads back growth and chart series.
///
/// # Errors
/// The first [`HistoryError`] of the writes and reads.
pub(super) fn write_and_read(
    h: &mut History,
    now: SystemTime,
    samples: &[Sample],
    ids: &[String],
    chart_window: Duration,
    alert_window: Duration,
) -> Result<Read, HistoryError> {
    h.record_samples(now, samples)?;
    h.compact(now)?;
    let notice = h.take_notice().map(|n| n.to_string());
    let since = now
        .checked_sub(chart_window)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut growth = BTreeMap::new();
    let mut charts = BTreeMap::new();
    let mut alert_growth = BTreeMap::new();
    for id in ids {
        let series = Series::Producer(id.clone());
        if let Some(g) = h.growth(&series, alert_window, now)? {
            alert_growth.insert(id.clone(), g);
        }
        let hour = h.growth(&series, HOUR, now)?;
        let day = h.growth(&series, DAY, now)?;
        growth.insert(
            id.clone(),
            GrowthFigures {
                observed: h.observed_growth(&series, DAY, now)?,
                bytes_per_hour: hour.and_then(|g| g.bytes_per(HOUR)),
                bytes_per_day: day.and_then(|g| g.bytes_per(DAY)),
                items_per_day: day.and_then(|g| g.items_per(DAY)),
            },
        );
        let points = h
            .series(&series, since)?
            .into_iter()
            .map(|(t, bytes, _)| (unix_secs(t), bytes))
            .collect();
        charts.insert(id.clone(), points);
    }
    let total_growth = h.observed_growth(&Series::Total, DAY, now)?;
    let total_recent = match &total_growth {
        Some(g) => h.observed_growth(&Series::Total, crate::history::recent_window(g), now)?,
        None => None,
    };
    Ok(Read {
        growth,
        charts,
        total_growth,
        total_recent,
        alert_growth,
        notice,
    })
}

/// A group's stored samples, oldest first: `(time, allocated bytes, items)`.
pub(super) type Trail = Vec<(SystemTime, u64, u64)>;

/// The sample of each group at `now` and the writers its evidence names, with when each was
/// last seen alive (`now` for a live one the evidence gives no time for).
pub(super) fn group_samples_of(
    groups: &[GroupFigures],
    now: SystemTime,
) -> (Vec<GroupSample>, Vec<StoredWriter>) {
    let samples = groups
        .iter()
        .map(|g| GroupSample {
            key: g.key.clone(),
            label: g.group.shape.to_string(),
            allocated_bytes: g.group.measure.allocated_bytes,
            items: g.group.items,
        })
        .collect();
    let writers = groups
        .iter()
        .flat_map(|g| {
            g.evidence.iter().map(|e| StoredWriter {
                key: g.key.clone(),
                kind: e.kind,
                name: e.name.clone(),
                exe: e.exe.clone(),
                app: e.app.clone(),
                app_version: None,
                agree: e.agree as u64,
                total: e.total as u64,
                first_seen: now,
                // A live holder has no sighting time of its own: it is seen now.
                last_seen: e.last_seen.or(e.alive.then_some(now)),
                pid_run: e.pid_run,
            })
        })
        .collect();
    (samples, writers)
}

/// Each group's stored samples over twice the alerts' growth `window` before `now` (the trail
/// keeps the last one before the window as its base).
///
/// # Errors
/// As [`History::group_series`].
pub(super) fn group_trails(
    h: &History,
    groups: &[GroupSample],
    window: Duration,
    now: SystemTime,
) -> Result<BTreeMap<Vec<u8>, Trail>, HistoryError> {
    let since = now
        .checked_sub(window.saturating_mul(2))
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut out = BTreeMap::new();
    for g in groups {
        out.insert(g.key.clone(), h.group_series(&g.key, since)?);
    }
    Ok(out)
}

/// The writers the database remembers, by group key.
///
/// # Errors
/// As [`History::group_writers`].
pub(super) fn stored_writers(h: &History) -> Result<super::StoredWriters, HistoryError> {
    let mut out: super::StoredWriters = BTreeMap::new();
    for w in h.group_writers()? {
        out.entry(w.key.clone()).or_default().push(w);
    }
    Ok(out)
}
