//! History samples: when to take one (interval, large change), writing them, and the growth
//! figures, disk-full estimate and chart series read back for the snapshot; what grew while the
//! monitor was not running.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use crate::watch::live::RootState;

use super::super::build::Totals;
use super::super::figures::GroupFigures;
use super::{io, Recorder};
use crate::outside_growth as outside;

/// A producer whose allocated bytes moved by this fraction since the last sample is sampled now.
const LARGE_CHANGE_FRACTION: f64 = 0.10;
/// ... or by this many bytes.
const LARGE_CHANGE_BYTES: u64 = 256 << 20;
/// ... or by this many items.
const LARGE_CHANGE_ITEMS: u64 = 1000;
/// Chart window.
const CHART_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);

/// Growth of one producer from the history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GrowthFigures {
    /// Bytes over the last hour.
    pub bytes_per_hour: Option<i64>,
    /// Bytes over the last day.
    pub bytes_per_day: Option<i64>,
    /// Items over the last day.
    pub items_per_day: Option<i64>,
    /// The change over the last day or the shorter history actually observed (its `from`..`to`),
    /// reclaims kept out (`History::observed_growth`).
    pub observed: Option<crate::history::Growth>,
}

impl Recorder {
    /// Growth figures of producer `id` (all `None` without history).
    pub fn growth(&self, id: &str) -> GrowthFigures {
        self.growth.get(id).copied().unwrap_or_default()
    }

    /// Chart samples of producer `id`: `[unix_secs, allocated_bytes]`, oldest first.
    pub fn chart(&self, id: &str) -> Vec<(u64, u64)> {
        self.charts.get(id).cloned().unwrap_or_default()
    }

    /// Seconds until `free_bytes` run out at the growth rate of the total, and the span that rate
    /// was observed over; `None` unless the trend is steady (`history::steady_eta`).
    pub fn disk_full_eta(&self, free_bytes: u64) -> Option<(u64, u64)> {
        let g = self.total_growth.as_ref()?;
        crate::history::steady_eta(free_bytes, g, self.total_recent.as_ref())
            .map(|d| (d.as_secs(), g.span().as_secs()))
    }

    /// Growth outside the roots per volume at the last sample (`crate::outside_growth`).
    pub fn unexplained(&self) -> &[crate::outside_growth::Unexplained] {
        &self.unexplained
    }

    /// The total's growth over the span observed (reclaims kept out), for the snapshot.
    pub fn total_observed(&self) -> Option<crate::history::Growth> {
        self.total_growth
    }

    /// True when the sample interval has passed since the last sample (and the history is in use).
    pub fn sample_due(&self, now: SystemTime) -> bool {
        self.history_ready(now)
            && self.last_sample_at.map_or(true, |t| {
                now.duration_since(t)
                    .is_ok_and(|d| d >= self.sample_interval)
            })
    }

    /// True when some producer or group of unattributed entries moved enough since the last
    /// sample to sample again at `now`.
    pub fn large_change(
        &self,
        totals: &BTreeMap<String, Totals>,
        groups: &[GroupFigures],
        now: SystemTime,
    ) -> bool {
        if !self.history_ready(now) {
            return false;
        }
        let moved_from = |(b0, i0): (u64, u64), bytes: u64, items: u64| {
            let db = bytes.abs_diff(b0);
            db >= LARGE_CHANGE_BYTES
                || items.abs_diff(i0) >= LARGE_CHANGE_ITEMS
                || (b0 > 0 && db as f64 / b0 as f64 >= LARGE_CHANGE_FRACTION && db >= 1 << 20)
        };
        let moved = |id: &str, bytes: u64, items: u64| {
            moved_from(
                self.last_sampled.get(id).copied().unwrap_or((0, 0)),
                bytes,
                items,
            )
        };
        let group_moved = groups.iter().any(|g| {
            moved_from(
                self.last_group_sampled
                    .get(&g.key)
                    .copied()
                    .unwrap_or((0, 0)),
                g.group.measure.allocated_bytes,
                g.group.items,
            )
        });
        totals
            .iter()
            .any(|(id, t)| moved(id, t.measure.allocated_bytes, t.items))
            || self
                .last_sampled
                .keys()
                .any(|id| !totals.contains_key(id) && moved(id, 0, 0))
            || group_moved
    }

    /// After the first scan: compares it with the last sample in the database and says what grew
    /// while the monitor was not running (log + a notice line), then takes a sample.
    pub async fn after_first_scan(
        &mut self,
        roots: &[RootState],
        totals: &BTreeMap<String, Totals>,
        groups: &[GroupFigures],
        now: SystemTime,
    ) {
        let Some(db) = self.db.clone() else {
            return;
        };
        let res = io::blocking(move || {
            let h = db.lock().unwrap_or_else(|e| e.into_inner());
            io::last_producer_samples(&h)
        })
        .await;
        match res {
            Ok(Some((at, last))) if !last.is_empty() => {
                self.history_ok();
                if let Some(line) = grew_line(totals, &last, at) {
                    tracing::info!("{line}");
                    self.error(line);
                } else {
                    let since = humantime::format_rfc3339_seconds(at);
                    tracing::info!(%since, "nothing grew while the monitor was not running");
                }
            }
            Ok(_) => self.history_ok(),
            Err(e) => self.history_failed(e, now),
        }
        self.sample(roots, totals, groups, now).await;
    }

    /// Writes one sample per producer, per root, of the total and per group of unattributed
    /// entries (with the writers its evidence names), then refreshes the growth figures, chart
    /// series, groups' trails and remembered writers from the database. Skipped without history
    /// or while a lock is waited out.
    pub async fn sample(
        &mut self,
        roots: &[RootState],
        totals: &BTreeMap<String, Totals>,
        groups: &[GroupFigures],
        now: SystemTime,
    ) {
        let Some(db) = self.db.clone().filter(|_| self.history_ready(now)) else {
            return;
        };
        let mut samples = io::samples_of(roots, totals);
        // Free space of the roots' volumes, for the growth-outside-the-roots check.
        let space = super::super::build::volume_space(roots);
        let vols = space.iter().flatten();
        samples.extend(outside::volume_samples(
            vols.map(|v| (v.mount.as_str(), v.free_bytes, v.total_bytes)),
        ));
        // A nested root's growth is in its outer root's already (`roots::counted_in_totals`).
        let counted = crate::roots::counted_in_totals(roots.iter().map(|r| &r.root));
        let vols_by_root = outside::group_by_volume(roots.iter().zip(&space).zip(counted).map(
            |((st, v), counted)| {
                let series = crate::history::Series::Root {
                    kind: st.root.kind,
                    path: st.root.path.clone(),
                };
                (
                    series,
                    v.as_ref()
                        .filter(|_| counted)
                        .map(|v| v.mount.clone().into()),
                )
            },
        ));
        let ids: Vec<String> = totals.keys().cloned().collect();
        let alerts_config = self.alerter.config().clone();
        let alert_window = alerts_config.producer_growth_window;
        let (group_samples, writers) = io::group_samples_of(groups, now);
        let res = io::blocking(move || {
            let mut h = db.lock().unwrap_or_else(|e| e.into_inner());
            h.record_groups(now, &group_samples, &writers)?;
            let read = io::write_and_read(&mut h, now, &samples, &ids, CHART_WINDOW, alert_window)?;
            let trails = io::group_trails(&h, &group_samples, alert_window, now)?;
            let remembered = io::stored_writers(&h)?;
            Ok((
                read,
                outside::unexplained_growth(&h, &vols_by_root, &alerts_config, now)?,
                trails,
                remembered,
            ))
        })
        .await;
        match res {
            Ok((read, unexplained, trails, remembered)) => {
                self.merge_group_trails(trails);
                self.stored_writers = std::sync::Arc::new(remembered);
                self.last_group_sampled = groups
                    .iter()
                    .map(|g| {
                        (
                            g.key.clone(),
                            (g.group.measure.allocated_bytes, g.group.items),
                        )
                    })
                    .collect();
                self.unexplained = unexplained;
                self.history_ok();
                self.growth = read.growth;
                self.charts = read.charts;
                self.total_growth = read.total_growth;
                self.total_recent = read.total_recent;
                self.alert_growth = read.alert_growth;
                if let Some(n) = read.notice {
                    self.error(n);
                }
                self.last_sample_at = Some(now);
                self.last_sampled = totals
                    .iter()
                    .map(|(id, t)| (id.clone(), (t.measure.allocated_bytes, t.items)))
                    .collect();
            }
            Err(e) => self.history_failed(e, now),
        }
    }
}

/// The notice line of what grew since the last sample `last` (taken at `at`), the five that grew
/// most; `None` when nothing grew.
fn grew_line(
    totals: &BTreeMap<String, Totals>,
    last: &BTreeMap<String, (u64, u64)>,
    at: SystemTime,
) -> Option<String> {
    let mut grew: Vec<(String, i64, i64)> = totals
        .iter()
        .map(|(id, t)| {
            let (b0, i0) = last.get(id).copied().unwrap_or((0, 0));
            (
                id.clone(),
                t.measure.allocated_bytes as i64 - b0 as i64,
                t.items as i64 - i0 as i64,
            )
        })
        .filter(|(_, b, i)| *b > 0 || *i > 0)
        .collect();
    if grew.is_empty() {
        return None;
    }
    grew.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let list: Vec<String> = grew
        .iter()
        .take(5)
        .map(|(id, b, i)| {
            format!(
                "{id} +{} (+{i} items)",
                crate::units::format_bytes((*b).into())
            )
        })
        .collect();
    let since = humantime::format_rfc3339_seconds(at);
    Some(format!(
        "grew while not running (since {since}): {}",
        list.join(", ")
    ))
}
