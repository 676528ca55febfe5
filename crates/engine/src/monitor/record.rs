//! The monitor's link to the history database and the alert rules: samples at a fixed interval and
//! on large changes, growth rates and chart series for the snapshot, alerts evaluated after each
//! update, reclaim audit rows. A corrupt or locked database is reported in the snapshot's errors and
//! the monitor runs on without history; the file is never deleted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::alerts::{AlertInputs, Alerter, ProducerInput};
use crate::catalogue::Catalogue;
use crate::history::{Growth, History};
use crate::reclaim::AuditRecord;
use crate::snapshot::AlertDto;
use crate::watch::state::RootState;

use super::build::Totals;
use super::disks::VolumeSpace;
use super::MonitorOptions;

/// Alerts kept for the snapshot.
const RECENT_ALERTS: usize = 20;
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
}

/// History and alerts, as the monitor uses them.
#[derive(Debug)]
pub struct Recorder {
    db: Option<Arc<Mutex<History>>>,
    errors: Vec<String>,
    alerts: Vec<AlertDto>,
    growth: BTreeMap<String, GrowthFigures>,
    charts: BTreeMap<String, Vec<(u64, u64)>>,
    total_growth: Option<crate::history::Growth>,
    sample_interval: Duration,
    last_sample_at: Option<SystemTime>,
    last_sampled: BTreeMap<String, (u64, u64)>,
    alerter: Alerter,
    alert_growth: BTreeMap<String, Growth>,
    crashes: crate::crash::CrashWatch,
}

impl Recorder {
    /// Opens the history database of `opts` (if any); a failure is kept as an error line.
    pub fn new(opts: &MonitorOptions) -> Recorder {
        let mut errors = Vec::new();
        let db = opts.db_path.as_ref().and_then(|p| match History::open(p) {
            Ok(h) => Some(Arc::new(Mutex::new(h))),
            Err(e) => {
                tracing::error!(error = %e, "history unavailable; running without it");
                errors.push(format!("history unavailable, running without it: {e}"));
                None
            }
        });
        let alerts = db.as_ref().map_or_else(Vec::new, |h| {
            let h = h.lock().unwrap_or_else(|e| e.into_inner());
            h.recent_alerts(RECENT_ALERTS).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot read recent alerts");
                Vec::new()
            })
        });
        let mut alerter = Alerter::new(opts.alerts.clone());
        // A restart does not fire again what fired within the cooldown.
        alerter.restore(&alerts);
        Recorder {
            crashes: crate::crash::CrashWatch::new(&opts.roots, opts.alerts.crash_loop.clone()),
            alerter,
            alert_growth: BTreeMap::new(),
            db,
            errors,
            alerts,
            growth: BTreeMap::new(),
            charts: BTreeMap::new(),
            total_growth: None,
            sample_interval: opts.sample_interval,
            last_sample_at: None,
            last_sampled: BTreeMap::new(),
        }
    }

    /// Problems and notices for the snapshot.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// Adds a problem for the snapshot.
    pub fn error(&mut self, e: String) {
        self.errors.push(e);
        if self.errors.len() > 50 {
            self.errors.remove(0);
        }
    }

    /// Growth figures of producer `id` (all `None` without history).
    pub fn growth(&self, id: &str) -> GrowthFigures {
        self.growth.get(id).copied().unwrap_or_default()
    }

    /// Chart samples of producer `id`: `[unix_secs, allocated_bytes]`, oldest first.
    pub fn chart(&self, id: &str) -> Vec<(u64, u64)> {
        self.charts.get(id).cloned().unwrap_or_default()
    }

    /// Seconds until `free_bytes` run out at the recent growth rate of the total; `None` when not
    /// growing or without history.
    pub fn disk_full_eta(&self, free_bytes: u64) -> Option<u64> {
        let g = self.total_growth.as_ref()?;
        crate::history::disk_full_eta(free_bytes, g).map(|d| d.as_secs())
    }

    /// Crash groups of the diagnostic-reports roots, newest report first.
    pub fn crash_groups(&self) -> Vec<crate::crash::CrashGroupDto> {
        self.crashes.group_dtos()
    }

    /// Recent alerts, newest first.
    pub fn recent_alerts(&self) -> Vec<AlertDto> {
        self.alerts.clone()
    }

    /// True when the sample interval has passed since the last sample.
    pub fn sample_due(&self, now: SystemTime) -> bool {
        self.db.is_some()
            && self.last_sample_at.map_or(true, |t| {
                now.duration_since(t)
                    .is_ok_and(|d| d >= self.sample_interval)
            })
    }

    /// True when some producer moved enough since the last sample to sample again now.
    pub fn large_change(&self, totals: &BTreeMap<String, Totals>) -> bool {
        if self.db.is_none() {
            return false;
        }
        let moved = |id: &str, bytes: u64, items: u64| {
            let (b0, i0) = self.last_sampled.get(id).copied().unwrap_or((0, 0));
            let db = bytes.abs_diff(b0);
            db >= LARGE_CHANGE_BYTES
                || items.abs_diff(i0) >= LARGE_CHANGE_ITEMS
                || (b0 > 0 && db as f64 / b0 as f64 >= LARGE_CHANGE_FRACTION && db >= 1 << 20)
        };
        totals
            .iter()
            .any(|(id, t)| moved(id, t.measure.allocated_bytes, t.items))
            || self
                .last_sampled
                .keys()
                .any(|id| !totals.contains_key(id) && moved(id, 0, 0))
    }

    /// After the first scan: compares it with the last sample in the database and says what grew
    /// while the monitor was not running (log + a notice line), then takes a sample.
    pub async fn after_first_scan(
        &mut self,
        roots: &[RootState],
        totals: &BTreeMap<String, Totals>,
        now: SystemTime,
    ) {
        let Some(db) = self.db.clone() else {
            return;
        };
        let res = blocking(move || {
            let h = db.lock().unwrap_or_else(|e| e.into_inner());
            io::last_producer_samples(&h)
        })
        .await;
        match res {
            Ok(Some((at, last))) if !last.is_empty() => {
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
                grew.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                let since = humantime::format_rfc3339_seconds(at);
                if grew.is_empty() {
                    tracing::info!(%since, "nothing grew while the monitor was not running");
                } else {
                    let list: Vec<String> = grew
                        .iter()
                        .take(5)
                        .map(|(id, b, i)| {
                            format!("{id} +{} (+{i} items)", bytesize::ByteSize(*b as u64))
                        })
                        .collect();
                    let line = format!(
                        "grew while not running (since {since}): {}",
                        list.join(", ")
                    );
                    tracing::info!("{line}");
                    self.error(line);
                }
            }
            Ok(_) => {}
            Err(e) => self.db_failed(e),
        }
        self.sample(roots, totals, now).await;
    }

    /// Writes one sample per producer, per root and of the total, then refreshes the growth figures
    /// and chart series from the database.
    pub async fn sample(
        &mut self,
        roots: &[RootState],
        totals: &BTreeMap<String, Totals>,
        now: SystemTime,
    ) {
        let Some(db) = self.db.clone() else {
            return;
        };
        let samples = io::samples_of(roots, totals);
        let ids: Vec<String> = totals.keys().cloned().collect();
        let alert_window = self.alerter.config().producer_growth_window;
        let res = blocking(move || {
            let mut h = db.lock().unwrap_or_else(|e| e.into_inner());
            io::write_and_read(&mut h, now, &samples, &ids, CHART_WINDOW, alert_window)
        })
        .await;
        match res {
            Ok(read) => {
                self.growth = read.growth;
                self.charts = read.charts;
                self.total_growth = read.total_growth;
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
            Err(e) => self.db_failed(e),
        }
    }

    /// Evaluates the alert rules on the current figures; stores and returns the alerts that fire.
    pub async fn evaluate_alerts(
        &mut self,
        catalogue: &Catalogue,
        roots: &[RootState],
        totals: &BTreeMap<String, Totals>,
        space: &[Option<VolumeSpace>],
        now: SystemTime,
    ) -> Vec<AlertDto> {
        let fired = self.evaluate(catalogue, roots, totals, space, now);
        self.store_alerts(fired).await
    }

    /// Stores `fired` (alerts that passed their cooldown) in the history, logs them and keeps them
    /// among the recent alerts; returns them with their row ids (0 without history).
    pub async fn store_alerts(&mut self, mut fired: Vec<AlertDto>) -> Vec<AlertDto> {
        if fired.is_empty() {
            return fired;
        }
        if let Some(db) = self.db.clone() {
            let to_store = fired.clone();
            let res = blocking(move || {
                let mut h = db.lock().unwrap_or_else(|e| e.into_inner());
                to_store
                    .iter()
                    .map(|a| io::record_alert(&mut h, a))
                    .collect::<Result<Vec<i64>, String>>()
            })
            .await;
            match res {
                Ok(ids) => {
                    for (a, id) in fired.iter_mut().zip(ids) {
                        a.id = id;
                    }
                }
                Err(e) => self.db_failed(e),
            }
        }
        for a in &fired {
            tracing::warn!(rule = %a.rule, producer = ?a.producer, "{}: {}", a.title, a.message);
        }
        let mut all = fired.clone();
        all.append(&mut self.alerts);
        all.truncate(RECENT_ALERTS);
        self.alerts = all;
        fired
    }

    fn evaluate(
        &mut self,
        catalogue: &Catalogue,
        roots: &[RootState],
        totals: &BTreeMap<String, Totals>,
        space: &[Option<VolumeSpace>],
        now: SystemTime,
    ) -> Vec<AlertDto> {
        let producers = totals
            .iter()
            .filter_map(|(id, t)| {
                let rule = catalogue.rule(id)?;
                Some(ProducerInput::from_rule(
                    rule,
                    t.measure.allocated_bytes,
                    t.items,
                    self.alert_growth.get(id).copied(),
                ))
            })
            .collect();
        let free_bytes = space.iter().flatten().map(|s| s.free_bytes).min();
        let inputs = AlertInputs {
            producers,
            total_allocated_bytes: roots.iter().map(|r| r.total.allocated_bytes).sum(),
            free_bytes,
            disk_full_eta: free_bytes.and_then(|f| {
                let g = self.total_growth.as_ref()?;
                crate::history::disk_full_eta(f, g)
            }),
            crash_alerts: self.crashes.update(now),
        };
        self.alerter
            .evaluate(&inputs, now)
            .iter()
            .map(|a| a.to_dto(0))
            .collect()
    }

    /// Stores reclaim audit rows.
    pub async fn record_reclaims(&mut self, audit: Vec<AuditRecord>) {
        let Some(db) = self.db.clone() else {
            return;
        };
        let res = blocking(move || {
            let mut h = db.lock().unwrap_or_else(|e| e.into_inner());
            h.record_reclaims(&audit).map_err(|e| e.to_string())
        })
        .await;
        if let Err(e) = res {
            self.db_failed(e);
        }
    }

    fn db_failed(&mut self, e: String) {
        tracing::error!(error = %e, "history write failed; running without history");
        self.error(format!("history unavailable, running without it: {e}"));
        self.db = None;
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(format!("history job failed: {e}")),
    }
}

mod io {
    //! The calls into the history and alerts modules, in one place.
    use super::*;
    use crate::history::{Sample, Series};

    const HOUR: Duration = Duration::from_secs(3600);
    const DAY: Duration = Duration::from_secs(24 * 3600);

    /// What the monitor reads back after writing samples.
    pub struct Read {
        pub growth: BTreeMap<String, GrowthFigures>,
        pub charts: BTreeMap<String, Vec<(u64, u64)>>,
        pub total_growth: Option<Growth>,
        pub alert_growth: BTreeMap<String, Growth>,
        /// The history file was deleted or replaced and recreated (`HistoryError::Recreated`).
        pub notice: Option<String>,
    }

    /// One sample per producer, per root and of the total.
    pub fn samples_of(roots: &[RootState], totals: &BTreeMap<String, Totals>) -> Vec<Sample> {
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
        for st in roots {
            out.push(Sample {
                series: Series::Root {
                    kind: st.root.kind,
                    path: st.root.path.clone(),
                },
                allocated_bytes: st.total.allocated_bytes,
                apparent_bytes: st.total.apparent_bytes,
                items: st.item_count() as u64,
            });
            a += st.total.allocated_bytes;
            b += st.total.apparent_bytes;
            n += st.item_count() as u64;
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
    pub type LastSamples = (SystemTime, BTreeMap<String, (u64, u64)>);

    /// The newest sample time and the producers' `(allocated bytes, items)` at their last sample;
    /// `None` on a new database.
    pub fn last_producer_samples(h: &History) -> Result<Option<LastSamples>, String> {
        let last = h.last_samples().map_err(|e| e.to_string())?;
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
    pub fn write_and_read(
        h: &mut History,
        now: SystemTime,
        samples: &[Sample],
        ids: &[String],
        chart_window: Duration,
        alert_window: Duration,
    ) -> Result<Read, String> {
        h.record_samples(now, samples).map_err(|e| e.to_string())?;
        h.compact(now).map_err(|e| e.to_string())?;
        let notice = h.take_notice().map(|n| n.to_string());
        let since = now
            .checked_sub(chart_window)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut growth = BTreeMap::new();
        let mut charts = BTreeMap::new();
        let mut alert_growth = BTreeMap::new();
        for id in ids {
            let series = Series::Producer(id.clone());
            if let Some(g) = h
                .growth(&series, alert_window, now)
                .map_err(|e| e.to_string())?
            {
                alert_growth.insert(id.clone(), g);
            }
            let hour = h.growth(&series, HOUR, now).map_err(|e| e.to_string())?;
            let day = h.growth(&series, DAY, now).map_err(|e| e.to_string())?;
            growth.insert(
                id.clone(),
                GrowthFigures {
                    bytes_per_hour: hour.and_then(|g| g.bytes_per(HOUR)),
                    bytes_per_day: day.and_then(|g| g.bytes_per(DAY)),
                    items_per_day: day.and_then(|g| g.items_per(DAY)),
                },
            );
            let points = h
                .series(&series, since)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|(t, bytes, _)| (super::super::build::unix_secs(t), bytes))
                .collect();
            charts.insert(id.clone(), points);
        }
        let total_growth = h
            .growth(&Series::Total, DAY, now)
            .map_err(|e| e.to_string())?;
        Ok(Read {
            growth,
            charts,
            total_growth,
            alert_growth,
            notice,
        })
    }

    /// Stores one fired alert; returns its row id.
    pub fn record_alert(h: &mut History, a: &AlertDto) -> Result<i64, String> {
        h.record_alert(a).map_err(|e| e.to_string())
    }
}
