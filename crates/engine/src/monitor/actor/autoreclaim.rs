//! [`AutoReclaim`]: auto-reclaim in the monitor task. It owns the rules' bookkeeping
//! ([`AutoState`]: which ran when, the drain in progress, its waiters, the totals and notices) and
//! the channel its drains report on. The triggers are checked after each update and on a short
//! tick; a due rule's drain is planned over the roots' states and then runs in a blocking task
//! (the monitor task keeps serving events and commands meanwhile), its progress and its end taken
//! in by the actor.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::audit::BatchProgress;
use crate::autoreclaim::run::{run_streamed, RunContext, RunOutcome};
use crate::autoreclaim::{self, AutoReclaimDto, AutoReclaimProgress, AutoRun, Figures, Trigger};
use crate::catalogue::Catalogue;
use crate::dto::AlertDto;
use crate::monitor::build;
use crate::monitor::drains::{AutoMsg, AutoState, Running, Waiter};
use crate::monitor::figures::spool_states;
use crate::monitor::MonitorOptions;
use crate::watch::live::RootState;

use super::watching::{Outside, Watching};

/// The start of the line said when the rules wait for a history database.
pub(in crate::monitor::actor) const NOT_RUN: &str =
    "auto-reclaim rules not run: no history database to write the audit rows to first";

/// The rules, the drain in progress and the channel the drains report on.
pub(in crate::monitor::actor) struct AutoReclaim {
    state: AutoState,
    tx: mpsc::UnboundedSender<AutoMsg>,
    rx: Option<mpsc::UnboundedReceiver<AutoMsg>>,
}

/// What the end of a drain leaves to the rest of the monitor.
pub(in crate::monitor::actor) struct Ended {
    /// A line for the snapshot's notices.
    pub(in crate::monitor::actor) note: Option<String>,
    /// The announcement of the runs since the last one.
    pub(in crate::monitor::actor) alert: Option<AlertDto>,
    /// The run as stored.
    pub(in crate::monitor::actor) run: AutoRun,
    /// The items deleted, to re-measure; `None` when they were too many to list (rescan).
    pub(in crate::monitor::actor) deleted: Option<Vec<PathBuf>>,
}

impl AutoReclaim {
    /// The rules of `opts`, none run yet.
    pub(in crate::monitor::actor) fn new(opts: &MonitorOptions) -> AutoReclaim {
        let (tx, rx) = mpsc::unbounded_channel();
        AutoReclaim {
            state: AutoState::new(opts.auto_reclaim.clone()),
            tx,
            rx: Some(rx),
        }
    }

    /// The receiver of the drains' messages (taken once, by the run loop).
    pub(in crate::monitor::actor) fn take_rx(&mut self) -> mpsc::UnboundedReceiver<AutoMsg> {
        // Taken once, so the receiver is there; this part keeps a sender: never closed.
        let (_, placeholder) = mpsc::unbounded_channel();
        self.rx.take().unwrap_or(placeholder)
    }

    /// How often the triggers are looked at (`None` without rules).
    pub(in crate::monitor::actor) fn tick(&self) -> Option<Duration> {
        self.state.tick()
    }

    /// Stops the drain in progress before its next batch.
    pub(in crate::monitor::actor) fn cancel(&self) {
        self.state.cancel();
    }

    /// The rules and the drain in progress, for the snapshot.
    pub(in crate::monitor::actor) fn dto(&self) -> AutoReclaimDto {
        self.state.dto()
    }

    /// True while a drain runs.
    pub(in crate::monitor::actor) fn running(&self) -> bool {
        self.state.running.is_some()
    }

    /// True when there are rules.
    pub(in crate::monitor::actor) fn has_rules(&self) -> bool {
        !self.state.rules.is_empty()
    }

    /// The history database is open again: the rules may say again that they wait for it (at the
    /// next outage).
    pub(in crate::monitor::actor) fn history_back(&mut self) {
        self.state.no_history_said = false;
    }

    /// The first due rule and what triggered it, looking from the one after the rule last started
    /// (rules due at the same time take turns; that rule is the next looked at after this one).
    pub(in crate::monitor::actor) fn due(
        &mut self,
        roots: &[RootState],
        now: SystemTime,
    ) -> Option<(usize, Trigger)> {
        let totals = build::producer_totals(roots);
        let free_bytes = if self.state.rules.iter().any(|r| r.when_free_below.is_some()) {
            build::volume_space(roots)
                .iter()
                .flatten()
                .map(|s| s.free_bytes)
                .min()
        } else {
            None
        };
        let n = self.state.rules.len();
        for i in (0..n).map(|k| (self.state.next + k) % n) {
            let rule = &self.state.rules[i];
            let mut f = Figures {
                free_bytes,
                ..Figures::default()
            };
            for id in &rule.producers {
                if let Some(t) = totals.get(id) {
                    f.items += t.items;
                    f.bytes += t.measure.allocated_bytes;
                }
            }
            if let Some(trigger) = autoreclaim::due(rule, self.state.last_run[i], now, &f) {
                self.state.next = (i + 1) % n;
                return Some((i, trigger));
            }
        }
        None
    }

    /// Starts rule `i`'s drain: plans from the roots' compact state in a blocking job (the roots
    /// move into it and back, as for a preview: no copy of the items, the monitor task waits for
    /// the plan), then executes the spooled plan in a blocking task the monitor task does not
    /// wait for. Without a history database nothing runs (no audit rows, no deletion), that is
    /// said once per outage, and the rule stays due: it runs as soon as the database is back.
    /// True when the snapshot has a new line to show.
    pub(in crate::monitor::actor) async fn start(
        &mut self,
        i: usize,
        trigger: Trigger,
        watching: &mut Watching,
        out: &mut Outside<'_>,
    ) -> bool {
        let tx = self.tx.clone();
        let now = out.opts.clock.now();
        let Some(db) = out.records.recorder.history() else {
            if self.state.no_history_said {
                return false;
            }
            self.state.no_history_said = true;
            let why = out
                .records
                .recorder
                .unavailable()
                .unwrap_or("no database configured");
            let line = format!("{NOT_RUN} ({why})");
            tracing::warn!("{line}");
            out.records.recorder.error(line);
            return true;
        };
        self.state.last_run[i] = Some(now);
        let rule = self.state.rules[i].clone();
        let cancel = Arc::new(AtomicBool::new(false));
        self.state.running = Some(Running {
            rule: i,
            cancel: cancel.clone(),
            progress: AutoReclaimProgress {
                rule: rule.name.clone(),
                ..AutoReclaimProgress::default()
            },
        });
        // The plan: from the compact state, moved into a blocking job and back (as a preview's),
        // its items spooled. The drain then runs beside the monitor task.
        let policy = crate::reclaim::Policy {
            older_than: rule.older_than,
            producers: rule.producers.clone(),
            protected: out.opts.protected_paths(),
        };
        let catalogue = out.opts.catalogue.clone();
        let chunk = out.opts.plan_chunk;
        let res = watching
            .with_roots(out, move |roots| {
                let probe = crate::process::SystemProbe::under(
                    roots.iter().map(|st| st.root.canonical.clone()),
                );
                spool_states(roots, &catalogue, &policy, &probe, now, chunk, |_| {})
            })
            .await;
        let plan = match res {
            Ok(Ok(plan)) => plan,
            Ok(Err(_)) => Err(std::io::Error::other("the plan panicked")),
            Err(e) => Err(std::io::Error::other(format!("the plan's job failed: {e}"))),
        };
        let catalogue = out.opts.catalogue.clone();
        let protected = out.opts.protected_paths();
        let db_path = out.opts.db_path.clone().unwrap_or_default();
        let clock = out.opts.clock.clone();
        let progress_tx = tx.clone();
        tracing::debug!(rule = %rule.name, trigger = trigger.as_str(), "auto-reclaim run starts");
        let job = tokio::task::spawn_blocking(move || {
            let probe = crate::process::SystemProbe::snapshot();
            let clock_now = move || clock.now();
            let cx = RunContext {
                catalogue: &catalogue,
                protected,
                history: &db,
                db_path: &db_path,
                probe: &probe,
                batch_size: autoreclaim::BATCH_SIZE,
                cancel: &cancel,
                now: &clock_now,
            };
            run_streamed(&rule, trigger, plan, now, &cx, &mut |p| {
                // The monitor gone: nothing to tell.
                let _sent = progress_tx.send(AutoMsg::Progress(*p));
            })
        });
        let done_tx = tx.clone();
        tokio::spawn(async move {
            let msg = match job.await {
                Ok(out) => AutoMsg::Done(Box::new(out)),
                Err(e) => AutoMsg::Crashed(e.to_string()),
            };
            // The monitor gone: nothing to tell.
            let _sent = done_tx.send(msg);
        });
        false
    }

    /// A drain's batch progress; true when it is to be published (at most every
    /// [`PROGRESS_EVERY`](crate::monitor::drains::PROGRESS_EVERY)).
    pub(in crate::monitor::actor) fn progress(&mut self, p: &BatchProgress) -> bool {
        self.state.progress(p, Instant::now())
    }

    /// The drain's blocking task panicked: it is over.
    pub(in crate::monitor::actor) fn crashed(&mut self) {
        self.state.running = None;
    }

    /// Takes in the end of the drain in progress (`None` when none runs): the rule's bookkeeping,
    /// the note and the announcement to make, and what to re-measure.
    pub(in crate::monitor::actor) fn ended(
        &mut self,
        out: RunOutcome,
        catalogue: &Catalogue,
        now: SystemTime,
    ) -> Option<Ended> {
        let running = self.state.running.take()?;
        let i = running.rule;
        let run = out.run;
        if run.deleted_items > 0 || run.errors > 0 {
            tracing::info!(rule = %run.rule, deleted = run.deleted_items, freed_bytes = run.freed_bytes, errors = run.errors, status = %run.status, "auto-reclaim run");
        }
        if let Some(e) = &run.first_error {
            tracing::warn!(rule = %run.rule, "auto-reclaim: {e}");
        }
        let (note, announce) = self.state.finished(i, &run, now);
        let alert = announce
            .and_then(|runs| autoreclaim::announcement(&runs, catalogue))
            .map(|text| {
                AlertDto::new(
                    crate::units::unix_secs(now),
                    crate::dto::AlertRule::AutoReclaim,
                    run.producers.first().cloned(),
                    format!("Auto-reclaim: {}", run.rule),
                    text,
                )
            });
        let deleted = (!out.unlisted).then_some(out.deleted);
        Some(Ended {
            note,
            alert,
            run,
            deleted,
        })
    }

    /// Answers the callers waiting for the run that just ended.
    pub(in crate::monitor::actor) fn answer_waiters(&mut self, run: Option<AutoRun>) {
        for w in std::mem::take(&mut self.state.waiters) {
            if w.send(Ok(run.clone())).is_err() {
                tracing::debug!("auto-reclaim caller went away");
            }
        }
    }

    /// A caller waits for the run in progress.
    pub(in crate::monitor::actor) fn wait(&mut self, reply: Waiter) {
        self.state.waiters.push(reply);
    }
}
