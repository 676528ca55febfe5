//! Alerts: the rules evaluated on the current figures (producer size and growth, free disk, the
//! disk-full estimate, crash loops from the crash watch), the ones that fire stored in the history
//! and kept among the recent alerts of the snapshot.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::alerts::{AlertInputs, GroupInput, ProducerInput};
use crate::catalogue::Catalogue;
use crate::dto::AlertDto;
use crate::history::Growth;
use crate::watch::live::RootState;

use super::super::build::Totals;
use super::super::disks::VolumeSpace;
use super::super::figures::GroupFigures;
use super::{io, Recorder, RECENT_ALERTS};

impl Recorder {
    /// Evaluates the alert rules on the current figures; stores and returns the alerts that fire,
    /// after those the history link raised itself (`history-unavailable`).
    pub async fn evaluate_alerts(
        &mut self,
        catalogue: &Catalogue,
        roots: &[RootState],
        totals: &BTreeMap<String, Totals>,
        space: &[Option<VolumeSpace>],
        groups: &[GroupFigures],
        now: SystemTime,
    ) -> Vec<AlertDto> {
        let groups = self.group_inputs(groups, now);
        let mut fired = std::mem::take(&mut self.raised);
        fired.extend(self.evaluate(catalogue, roots, totals, space, groups, now));
        self.store_alerts(fired, now).await
    }

    /// Stores `fired` (alerts that passed their cooldown) in the history, logs them and keeps them
    /// among the recent alerts; returns them with their row ids (0 without history, or when the
    /// database was locked at `now`).
    pub async fn store_alerts(
        &mut self,
        mut fired: Vec<AlertDto>,
        now: SystemTime,
    ) -> Vec<AlertDto> {
        if fired.is_empty() {
            return fired;
        }
        if let Some(db) = self.db.clone() {
            let to_store = fired.clone();
            let res = io::blocking(move || {
                let mut h = db.lock().unwrap_or_else(|e| e.into_inner());
                to_store
                    .iter()
                    .map(|a| h.record_alert(a))
                    .collect::<Result<Vec<i64>, _>>()
            })
            .await;
            match res {
                Ok(ids) => {
                    self.history_ok();
                    for (a, id) in fired.iter_mut().zip(ids) {
                        a.id = id;
                    }
                }
                Err(e) => self.history_failed(e, now),
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

    /// The alerts that fire on the current figures (not stored yet).
    fn evaluate(
        &mut self,
        catalogue: &Catalogue,
        roots: &[RootState],
        totals: &BTreeMap<String, Totals>,
        space: &[Option<VolumeSpace>],
        groups: Vec<GroupInput>,
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
            total_allocated_bytes: super::super::build::counted_roots(roots)
                .map(|r| r.total.allocated_bytes)
                .sum(),
            free_bytes,
            disk_full_eta: free_bytes.and_then(|f| {
                let g = self.total_growth.as_ref()?;
                crate::history::steady_eta(f, g, self.total_recent.as_ref())
            }),
            unexplained: self.unexplained.clone(),
            groups,
            crash_alerts: self.crashes.update(now),
        };
        self.alerter
            .evaluate(&inputs, now)
            .iter()
            .map(|a| a.to_dto(0))
            .collect()
    }

    /// Merges each group's samples read back from the database into its trail (groups not
    /// sampled keep theirs until [`Recorder::group_inputs`] drops them).
    pub(super) fn merge_group_trails(&mut self, trails: BTreeMap<Vec<u8>, io::Trail>) {
        for (key, stored) in trails {
            let trail = self.group_trail.entry(key).or_default();
            let mut all: BTreeMap<SystemTime, (u64, u64)> =
                trail.iter().map(|(t, b, i)| (*t, (*b, *i))).collect();
            all.extend(stored.into_iter().map(|(t, b, i)| (t, (b, i))));
            *trail = all.into_iter().map(|(t, (b, i))| (t, b, i)).collect();
        }
    }

    /// The groups as the alert rules see them: each one's figures noted in its trail (at most
    /// one note a minute, notes older than the growth window dropped but the last one before it),
    /// its growth from the oldest note kept to now. The trail holds the group's stored samples
    /// too, so its growth carries over a restart. Groups no longer shown lose their trail.
    fn group_inputs(&mut self, groups: &[GroupFigures], now: SystemTime) -> Vec<GroupInput> {
        let window = self.alerter.config().producer_growth_window;
        let start = now.checked_sub(window).unwrap_or(std::time::UNIX_EPOCH);
        self.group_trail
            .retain(|k, _| groups.iter().any(|g| &g.key == k));
        let minute = std::time::Duration::from_secs(60);
        groups
            .iter()
            .map(|g| {
                let trail = self.group_trail.entry(g.key.clone()).or_default();
                let (bytes, items) = (g.group.measure.allocated_bytes, g.group.items);
                let due = trail.back().map_or(true, |(t, _, _)| {
                    now.duration_since(*t).unwrap_or_default() >= minute
                });
                if due {
                    trail.push_back((now, bytes, items));
                }
                while trail.len() > 1 && trail.get(1).is_some_and(|(t, _, _)| *t <= start) {
                    trail.pop_front();
                }
                let growth = trail
                    .front()
                    .filter(|(t, _, _)| *t < now)
                    .map(|(t, b, i)| Growth {
                        bytes: bytes as i64 - *b as i64,
                        items: items as i64 - *i as i64,
                        from: *t,
                        to: now,
                    });
                GroupInput {
                    shape: g.group.shown(),
                    label: cachewatch_core::shapes::escape_controls(&g.group.label()),
                    root: g.root.display().to_string(),
                    allocated_bytes: bytes,
                    items,
                    growth,
                    writer: writer_of(g, now),
                    confirmed_leak: g.confirmed_leak,
                }
            })
            .collect()
    }

    /// Applies new alert limits from now on (cooldowns already running are kept). The crash-loop
    /// limits apply from the next start.
    pub fn set_alerts(&mut self, config: crate::alerts::AlertsConfig) {
        self.alerter.set_config(config);
    }

    /// Crash groups of the diagnostic-reports roots (the crash watch behind the crash-loop alerts),
    /// newest report first.
    pub fn crash_groups(&self) -> Vec<crate::crash::CrashGroupDto> {
        self.crashes.group_dtos()
    }
}

/// Who wrote group `g`, as an alert says it: a process holding a member (`bun (pid 4242)`), else
/// the writer its strongest evidence names, with when it was last seen when it has exited
/// (`katago (exited; last seen 2h ago)`).
fn writer_of(g: &GroupFigures, now: SystemTime) -> Option<String> {
    if let Some(w) = g.writers.first() {
        return Some(format!("{} (pid {})", w.name, w.pid));
    }
    let e = g.evidence.first()?;
    if e.alive || e.kind == cachewatch_core::provenance::EvidenceKind::InPath {
        return Some(e.name.clone());
    }
    Some(match e.last_seen {
        Some(t) => format!(
            "{} (exited; last seen {} ago)",
            e.name,
            cachewatch_core::units::format_span(
                now.duration_since(t).unwrap_or_default().as_secs()
            )
        ),
        None => format!("{} (exited)", e.name),
    })
}
