//! [`Records`]: what the monitor keeps and says about what it saw. It owns the history database
//! with its samples and alerts ([`Recorder`]), the watched processes and their `process-leak`
//! alerts ([`ProcWatch`]), the process-table samples that name who wrote a group
//! ([`Provenance`]), and the broadcast of the alerts that fire.

use std::collections::BTreeMap;
use std::time::SystemTime;

use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::catalogue::Catalogue;
use crate::dto::AlertDto;
use crate::monitor::build;
use crate::monitor::figures::GroupFigures;
use crate::monitor::process_alerts::ProcWatch;
use crate::monitor::provenance::Provenance;
use crate::monitor::recorder::Recorder;
use crate::monitor::MonitorOptions;
use crate::watch::live::RootState;

/// Per producer, its items and bytes now ([`build::producer_totals`]).
type Totals = BTreeMap<String, crate::watch::live::Totals>;

/// The history, the watched processes, the writers seen, and where alerts go.
pub(in crate::monitor::actor) struct Records {
    pub(in crate::monitor::actor) recorder: Recorder,
    procs: ProcWatch,
    /// The processes seen when unattributed entries changed: who wrote a group.
    pub(in crate::monitor::actor) provenance: Provenance,
    alert_tx: broadcast::Sender<AlertDto>,
}

impl Records {
    /// Opens the history database of `opts` and restores the cooldowns of its stored alerts; the
    /// alerts that fire go to `alert_tx`.
    pub(in crate::monitor::actor) fn new(
        opts: &MonitorOptions,
        alert_tx: broadcast::Sender<AlertDto>,
    ) -> Records {
        let recorder = Recorder::new(opts);
        let mut procs = ProcWatch::new(&opts.process_watch, opts.alerts.cooldown);
        procs.restore(&recorder.recent_alerts());
        Records {
            recorder,
            procs,
            provenance: Provenance::new(opts),
            alert_tx,
        }
    }

    /// How often the watched processes are sampled (none: no process is watched).
    pub(in crate::monitor::actor) fn procs_interval(&self) -> Option<std::time::Duration> {
        self.procs.interval()
    }

    /// Stores `alerts` (those past their cooldown) in the history and broadcasts the ones stored;
    /// returns them.
    pub(in crate::monitor::actor) async fn raise(
        &mut self,
        alerts: Vec<AlertDto>,
        now: SystemTime,
    ) -> Vec<AlertDto> {
        let fired = self.recorder.store_alerts(alerts, now).await;
        self.broadcast(&fired);
        fired
    }

    fn broadcast(&self, alerts: &[AlertDto]) {
        for alert in alerts {
            // No receiver is fine: nobody listens yet.
            let _receivers = self.alert_tx.send(alert.clone()).unwrap_or(0);
        }
    }

    /// Opens the history database again when it failed and its retry is due; when it opens, the
    /// cooldowns of its stored alerts are restored. `None` when no retry was due, else whether it
    /// is open now.
    pub(in crate::monitor::actor) async fn reopen_if_due(
        &mut self,
        now: SystemTime,
    ) -> Option<bool> {
        if !self.recorder.reopen_due(now) {
            return None;
        }
        let (open, restored) = self.recorder.reopen(now).await;
        self.procs.restore(&restored);
        Some(open)
    }

    /// Samples the history when `force`d or when the inventory moved enough since the last sample.
    pub(in crate::monitor::actor) async fn sample_on_change(
        &mut self,
        force: bool,
        roots: &[RootState],
        totals: &Totals,
        groups: &[GroupFigures],
        now: SystemTime,
    ) {
        if force || self.recorder.large_change(totals, groups, now) {
            self.recorder.sample(roots, totals, groups, now).await;
        }
    }

    /// Samples the history when its interval has passed. True when it did.
    pub(in crate::monitor::actor) async fn sample_if_due(
        &mut self,
        roots: &[RootState],
        totals: &Totals,
        groups: &[GroupFigures],
        now: SystemTime,
    ) -> bool {
        if !self.recorder.sample_due(now) {
            return false;
        }
        self.recorder.sample(roots, totals, groups, now).await;
        true
    }

    /// Evaluates the alert rules on the inventory now; stores and broadcasts those that fire.
    pub(in crate::monitor::actor) async fn evaluate_alerts(
        &mut self,
        catalogue: &Catalogue,
        roots: &[RootState],
        totals: &Totals,
        groups: &[GroupFigures],
        now: SystemTime,
    ) {
        let space = build::volume_space(roots);
        let fired = self
            .recorder
            .evaluate_alerts(catalogue, roots, totals, &space, groups, now)
            .await;
        self.broadcast(&fired);
    }

    /// Samples the process table for the writers of unattributed entries when one is wanted and
    /// due. True when it did (the figures then name the writers again at their next refresh).
    pub(in crate::monitor::actor) async fn sample_for_provenance(&mut self) -> bool {
        self.provenance.sample_if_due(Instant::now()).await
    }

    /// Samples the watched processes; stores and broadcasts the `process-leak` alerts that fire
    /// (none while `paused`: the samples are still taken). `None` when none fired (or paused),
    /// else the alerts stored.
    pub(in crate::monitor::actor) async fn sample_processes(
        &mut self,
        now: SystemTime,
        paused: bool,
    ) -> Option<Vec<AlertDto>> {
        let fired = self.procs.sample(now).await;
        if paused || fired.is_empty() {
            return None;
        }
        Some(self.raise(fired, now).await)
    }
}
