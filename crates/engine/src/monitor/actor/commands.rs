//! The commands of a [`MonitorHandle`](super::super::MonitorHandle): rescan, pause, threshold,
//! alert limits, reclaim plans and their execution (audit rows first), flush, process samples,
//! shutdown.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::reclaim::{ReclaimPlan, ReclaimReport};
use crate::watch::map::{target_of, Target};

use super::super::{Command, MonitorError};
use super::{Actor, Flow};

impl Actor {
    /// Runs one command and answers it; [`Flow::Stop`] for a shutdown.
    pub(super) async fn command(&mut self, cmd: Command) -> Flow {
        match cmd {
            Command::Rescan(reply) => {
                for i in 0..self.roots.len() {
                    self.debounce.forget(i);
                    if self.roots[i].root.canonical.is_dir() {
                        if self.roots[i].gone {
                            self.start_watcher(i);
                        }
                        self.rescan_root(i).await;
                    } else {
                        self.mark_gone(i);
                    }
                }
                self.refresh_analysis().await;
                self.after_update(false).await;
                send(reply, Ok(()));
            }
            Command::SetPaused(paused, reply) => {
                self.paused = paused;
                if paused {
                    // Pausing the monitor pauses the rules: a drain stops before its next batch.
                    self.auto.cancel();
                }
                if !paused {
                    self.process_dirty(true).await;
                }
                self.publish();
                send(reply, Ok(()));
            }
            Command::SetThreshold(threshold, reply) => {
                self.threshold = threshold;
                self.refresh_analysis().await;
                self.publish();
                send(reply, Ok(()));
            }
            Command::SetAlerts(alerts, reply) => {
                self.recorder.set_alerts(*alerts);
                send(reply, Ok(()));
            }
            Command::PlanReclaim {
                producers,
                threshold,
                reply,
            } => {
                let res = self.plan(producers, threshold).await;
                send(reply, res);
            }
            Command::ExecuteReclaim { plan_id, reply } => {
                let res = self.execute(plan_id).await;
                send(reply, res);
            }
            Command::Flush(reply) => self.start_flush(reply).await,
            Command::SampleProcesses(reply) => {
                let fired = self.sample_processes().await;
                send(reply, Ok(fired));
            }
            Command::CheckAutoReclaim(reply) => self.auto_wait(reply),
            Command::Shutdown(ack) => return Flow::Stop(ack),
        }
        Flow::Continue
    }

    /// Plans a reclaim on the current inventory and keeps the plan by its id.
    async fn plan(
        &mut self,
        producers: Vec<String>,
        threshold: Duration,
    ) -> Result<ReclaimPlan, MonitorError> {
        if let Some(id) = producers
            .iter()
            .find(|id| self.opts.catalogue.rule(id).is_none())
        {
            return Err(MonitorError::UnknownProducer { id: id.clone() });
        }
        let inv = self.inventory();
        let catalogue = self.opts.catalogue.clone();
        let now = self.opts.clock.now();
        let protected = self.opts.protected_paths();
        let plan = tokio::task::spawn_blocking(move || {
            let probe = crate::process::SystemProbe::snapshot();
            crate::api::reclaim::plan(
                &inv, &catalogue, producers, threshold, protected, &probe, now,
            )
        })
        .await
        .map_err(|e| job("reclaim plan", e))?;
        self.plans.insert(plan.id.clone(), plan.clone());
        Ok(plan)
    }

    /// Executes the kept plan `plan_id` through [`crate::api::reclaim::execute_audited`] (audit
    /// rows first), then re-measures what it deleted and publishes.
    async fn execute(&mut self, plan_id: String) -> Result<ReclaimReport, MonitorError> {
        let plan = self
            .plans
            .remove(&plan_id)
            .ok_or(MonitorError::UnknownPlan { id: plan_id })?;
        let Some(db) = self.recorder.history() else {
            let why = self
                .recorder
                .unavailable()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return Err(MonitorError::NoAudit { why });
        };
        let db_path = self.opts.db_path.clone().unwrap_or_default();
        let catalogue = self.opts.catalogue.clone();
        let now = self.opts.clock.now();
        let paths: Vec<PathBuf> = plan.items.iter().map(|p| p.path.clone()).collect();
        let audited = tokio::task::spawn_blocking(move || {
            let probe = crate::process::SystemProbe::snapshot();
            crate::api::reclaim::execute_audited(&plan, &catalogue, &probe, &db, &db_path, now)
        })
        .await
        .map_err(|e| job("reclaim", e))??;
        let mut report = audited.report;
        report.errors.extend(audited.audit_errors);
        // The watcher sees the deletions too; re-measure now so the caller's next snapshot has them.
        for p in paths {
            for (i, st) in self.roots.iter().enumerate() {
                if let Target::Item { path, .. } = target_of(&st.root, &self.opts.catalogue, &p) {
                    self.debounce.root(i).items.insert(path);
                }
            }
        }
        self.process_dirty(true).await;
        self.refresh_analysis().await;
        self.publish();
        Ok(report)
    }
}

/// Answers a command; a caller that went away is only logged.
fn send<T>(reply: oneshot::Sender<T>, value: T) {
    if reply.send(value).is_err() {
        tracing::debug!("command caller went away");
    }
}

/// A blocking job that panicked or was cancelled.
fn job(what: &'static str, e: tokio::task::JoinError) -> MonitorError {
    MonitorError::Job {
        what,
        message: e.to_string(),
    }
}
