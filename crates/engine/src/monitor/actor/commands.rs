//! The commands of a [`MonitorHandle`](super::super::MonitorHandle): rescan, pause, threshold,
//! alert limits, reclaim plans and their execution (audit rows first), flush, process samples,
//! shutdown.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::dto::{PreviewProducer, ReclaimEstimate, ReclaimPreview, ReclaimResult, RESULT_ITEMS};
use crate::reclaim::Policy;
use crate::units::unix_secs;

use super::super::debounce::MAX_DIRTY;
use super::super::figures::plan_states;

use super::super::{Command, MonitorError};
use super::{Actor, Flow};

impl Actor {
    /// Runs one command and answers it; [`Flow::Stop`] for a shutdown.
    pub(super) async fn command(&mut self, cmd: Command) -> Flow {
        match cmd {
            Command::Rescan(reply) => {
                for i in 0..self.roots.len() {
                    self.debounce.forget(i);
                    // A gone root comes back here, or stays gone (`rescan_root` looks first).
                    self.rescan_root(i).await;
                }
                self.refresh_figures().await;
                self.after_update(false).await;
                send(reply, Ok(()));
            }
            Command::SetCatalogue(catalogue, reply) => {
                self.opts.catalogue = catalogue;
                for i in 0..self.roots.len() {
                    self.debounce.forget(i);
                    self.rescan_root(i).await;
                }
                self.refresh_figures().await;
                self.after_update(false).await;
                send(reply, Ok(()));
            }
            Command::SetIgnoredShapes(labels, reply) => {
                self.opts.ignored_shapes = labels;
                self.refresh_figures().await;
                self.publish();
                send(reply, Ok(()));
            }
            Command::Group { root, label, reply } => {
                let found = self
                    .figures
                    .groups
                    .iter()
                    .find(|g| {
                        g.root.as_os_str() == std::ffi::OsStr::new(&root)
                            && g.group.label() == label
                    })
                    .cloned()
                    .map(|mut g| {
                        g.others = self
                            .roots
                            .iter()
                            .filter(|st| st.root.kind == g.root_kind && st.root.canonical != g.root)
                            .map(|st| st.root.canonical.clone())
                            .collect();
                        g
                    });
                send(reply, Ok(found));
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
                self.refresh_figures().await;
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
            Command::EstimateReclaim {
                producers,
                threshold,
                reply,
            } => send(reply, self.estimate(&producers, threshold)),
            Command::ExecuteReclaim { plan_id, reply } => {
                let res = self.execute(plan_id).await;
                send(reply, res);
            }
            Command::Flush(reply) => self.start_flush(reply).await,
            Command::SampleProcesses(reply) => {
                let fired = self.sample_processes().await;
                send(reply, Ok(fired));
            }
            Command::CheckAutoReclaim(reply) => self.auto_wait(reply).await,
            Command::Shutdown(ack) => return Flow::Stop(ack),
            Command::Panic => panic!("injected by a test"),
        }
        Flow::Continue
    }

    /// Plans a reclaim on the current inventory in chunks ([`plan_states`]) and keeps the plan
    /// by its id (the last [`KEPT_PLANS`]); returns its bounded preview. The roots' states move
    /// into the blocking job and back (the actor waits for it), so no item is copied.
    async fn plan(
        &mut self,
        producers: Vec<String>,
        threshold: Duration,
    ) -> Result<ReclaimPreview, MonitorError> {
        if let Some(id) = producers
            .iter()
            .find(|id| self.opts.catalogue.rule(id).is_none())
        {
            return Err(MonitorError::UnknownProducer { id: id.clone() });
        }
        let policy = Policy {
            older_than: threshold,
            producers,
            protected: self.opts.protected_paths(),
        };
        let catalogue = self.opts.catalogue.clone();
        let now = self.opts.clock.now();
        let chunk = self.opts.plan_chunk;
        let planned = self
            .with_roots(move |roots| {
                let probe = crate::process::SystemProbe::under(
                    roots.iter().map(|st| st.root.canonical.clone()),
                );
                plan_states(roots, &catalogue, &policy, &probe, now, chunk)
            })
            .await
            .map_err(|e| job("reclaim plan", e))?;
        let (plan, preview) = match planned {
            Ok(Ok(p)) => p,
            Ok(Err(source)) => {
                return Err(MonitorError::PlanSpool {
                    dir: std::env::temp_dir(),
                    source,
                })
            }
            Err(_) => {
                return Err(MonitorError::Job {
                    what: "reclaim plan",
                    message: "panicked".into(),
                })
            }
        };
        self.plans.retain(|(id, _)| *id != preview.id);
        self.plans.push((preview.id.clone(), plan));
        if self.plans.len() > KEPT_PLANS {
            self.plans.remove(0);
        }
        Ok(preview)
    }

    /// What a reclaim at `threshold` would take now, from the figures' age histograms.
    fn estimate(
        &self,
        producers: &[String],
        threshold: Duration,
    ) -> Result<ReclaimEstimate, MonitorError> {
        if let Some(id) = producers
            .iter()
            .find(|id| self.opts.catalogue.rule(id).is_none())
        {
            return Err(MonitorError::UnknownProducer { id: id.clone() });
        }
        let now = self.opts.clock.now();
        let takes = self
            .figures
            .take_at(&self.opts.catalogue, producers, threshold, now);
        let mut out = ReclaimEstimate {
            threshold_secs: threshold.as_secs(),
            as_of_unix_secs: self.figures.computed_at.map_or(0, unix_secs),
            ..ReclaimEstimate::default()
        };
        for (id, t) in takes {
            out.items += t.items;
            out.allocated_bytes += t.allocated_bytes;
            out.freeable_bytes += t.freeable_bytes;
            out.producers.push(PreviewProducer {
                managed_by: self
                    .opts
                    .catalogue
                    .rule(&id)
                    .and_then(|r| r.managed_by.clone()),
                producer: id,
                items: t.items,
                allocated_bytes: t.allocated_bytes,
                freeable_bytes: t.freeable_bytes,
                oldest_age_secs: 0,
            });
        }
        Ok(out)
    }

    /// Executes the kept plan `plan_id` through [`crate::audit::execute_streamed_batches`]
    /// (audit rows first, its items read back batch by batch), then re-measures what it deleted
    /// and publishes.
    async fn execute(&mut self, plan_id: String) -> Result<ReclaimResult, MonitorError> {
        let at = self
            .plans
            .iter()
            .position(|(id, _)| *id == plan_id)
            .ok_or(MonitorError::UnknownPlan { id: plan_id })?;
        let Some(db) = self.recorder.history() else {
            let why = self
                .recorder
                .unavailable()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return Err(MonitorError::NoAudit { why });
        };
        let (_, plan) = self.plans.remove(at);
        let db_path = self.opts.db_path.clone().unwrap_or_default();
        let catalogue = self.opts.catalogue.clone();
        let now = self.opts.clock.now();
        let (result, deleted) = tokio::task::spawn_blocking(move || {
            let probe = crate::process::SystemProbe::snapshot();
            let (mut deleted_items, mut first_deleted) = (0, Vec::new());
            let mut deleted = Deleted::default();
            let audited = crate::audit::execute_streamed_batches(
                &plan,
                &catalogue,
                &probe,
                &db,
                &db_path,
                now,
                crate::reclaim::DEFAULT_BATCH_SIZE,
                &mut |_, batch| {
                    for d in &batch.deleted {
                        deleted_items += 1;
                        if first_deleted.len() < RESULT_ITEMS {
                            first_deleted.push(d.clone());
                        }
                        deleted.push(&d.path);
                    }
                    std::ops::ControlFlow::Continue(())
                },
            )?;
            let result = audited.into_result(deleted_items, first_deleted);
            Ok::<_, MonitorError>((result, deleted))
        })
        .await
        .map_err(|e| job("reclaim", e))??;
        // The watcher sees the deletions too; re-measure now so the caller's next snapshot has them.
        match deleted {
            Deleted::Paths(paths) => self.mark_deleted(&paths),
            Deleted::TooMany => {
                for i in 0..self.roots.len() {
                    self.debounce.root(i).rescan = true;
                }
            }
        }
        self.process_dirty(true).await;
        self.refresh_figures().await;
        self.publish();
        Ok(result)
    }
}

/// Plans kept for execute: a preview the user did not act on is dropped after this many newer
/// ones (each holds a spool: a temp file once long).
pub(in crate::monitor) const KEPT_PLANS: usize = 4;

/// Deleted items re-measured one by one after an execute; past this many the roots are rescanned
/// instead (the paths, their dirty entries and their re-measures would cost more memory than the
/// rescan of what is left after a large reclaim).
const REMEASURE_MAX: usize = 16_384;

/// The paths an execute deleted, to re-measure; past [`REMEASURE_MAX`] only that there were too
/// many (the roots are rescanned instead).
enum Deleted {
    Paths(Vec<PathBuf>),
    TooMany,
}

impl Default for Deleted {
    fn default() -> Deleted {
        Deleted::Paths(Vec::new())
    }
}

impl Deleted {
    fn push(&mut self, path: &std::path::Path) {
        if let Deleted::Paths(paths) = self {
            if paths.len() >= REMEASURE_MAX.min(MAX_DIRTY) {
                *self = Deleted::TooMany;
            } else {
                paths.push(path.to_path_buf());
            }
        }
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
