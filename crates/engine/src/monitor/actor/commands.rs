//! The commands of a [`MonitorHandle`](crate::monitor::MonitorHandle), dispatched to the parts
//! that own what they change: rescan, pause, threshold, alert limits, reclaim plans and their
//! execution (audit rows first), flush, process samples, shutdown. No state of its own.

use std::path::PathBuf;

use tokio::sync::oneshot;

use crate::dto::{ReclaimResult, RESULT_ITEMS};
use crate::monitor::debounce::MAX_DIRTY;
use crate::monitor::{Command, MonitorError};

use super::figure_state::job;
use super::{Actor, Flow};

impl Actor {
    /// Runs one command and answers it; [`Flow::Stop`] for a shutdown.
    pub(super) async fn command(&mut self, cmd: Command) -> Flow {
        match cmd {
            Command::Rescan(reply) => {
                self.rescan_all().await;
                self.refresh_figures().await;
                self.after_update(false).await;
                send(reply, Ok(()));
            }
            Command::SetCatalogue(catalogue, reply) => {
                self.opts.catalogue = catalogue;
                self.rescan_all().await;
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
                let found = self.figures.group(&root, &label, &self.watching);
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
                self.figures.threshold = threshold;
                self.refresh_figures().await;
                self.publish();
                send(reply, Ok(()));
            }
            Command::SetAlerts(alerts, reply) => {
                self.records.recorder.set_alerts(*alerts);
                send(reply, Ok(()));
            }
            Command::PlanReclaim {
                producers,
                threshold,
                reply,
            } => {
                let s = self.split();
                let mut out = s.out;
                let res = s
                    .figures
                    .plan(producers, threshold, s.watching, &mut out)
                    .await;
                send(reply, res);
            }
            Command::EstimateReclaim {
                producers,
                threshold,
                reply,
            } => send(
                reply,
                self.figures.estimate(&self.opts, &producers, threshold),
            ),
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

    /// Forgets every root's dirty set and rescans every root ([`super::watching::Watching::rescan_all`]).
    async fn rescan_all(&mut self) {
        let s = self.split();
        let mut out = s.out;
        s.watching.rescan_all(&mut out).await;
    }

    /// Executes the kept plan `plan_id` through [`crate::audit::execute_streamed_batches`]
    /// (audit rows first, its items read back batch by batch), then re-measures what it deleted
    /// and publishes.
    async fn execute(&mut self, plan_id: String) -> Result<ReclaimResult, MonitorError> {
        let at = self.figures.find_plan(plan_id)?;
        let Some(db) = self.records.recorder.history() else {
            let why = self
                .records
                .recorder
                .unavailable()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return Err(MonitorError::NoAudit { why });
        };
        let plan = self.figures.take_plan(at);
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
            Deleted::Paths(paths) => self.watching.mark_deleted(&paths, &self.opts),
            Deleted::TooMany => self.watching.rescan_all_next(),
        }
        self.process_dirty(true).await;
        self.refresh_figures().await;
        self.publish();
        Ok(result)
    }
}

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
