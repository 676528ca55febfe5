//! Auto-reclaim in the monitor task: the triggers checked after each update and on a short tick,
//! a due rule's drain started in a blocking task (the task keeps serving events and commands
//! meanwhile), its progress and its end taken in.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tokio::time::Instant;

use crate::autoreclaim::run::{run_streamed, RunContext};
use crate::autoreclaim::{self, AutoReclaimProgress, Figures, Trigger};
use crate::dto::{AlertDto, MonitorState};
use crate::watch::map::{target_of, Target};

use super::super::build;
use super::super::debounce::MAX_DIRTY;
use super::super::drains::{AutoMsg, Running, Waiter};
use super::super::figures::spool_states;
use super::Actor;

/// The start of the line said when the rules wait for a history database.
pub(super) const NOT_RUN: &str =
    "auto-reclaim rules not run: no history database to write the audit rows to first";

impl Actor {
    /// Starts the first due rule, looking from the one after the rule last started (rules due at
    /// the same time take turns), unless paused, scanning, a drain runs or there are no rules.
    /// Returns true when a run is in progress afterwards.
    pub(super) async fn auto_check(&mut self) -> bool {
        if self.auto.running.is_some() {
            return true;
        }
        if self.auto.rules.is_empty() || self.paused || self.state == MonitorState::Scanning {
            return false;
        }
        // A database that failed may be back: the rules need it for their audit rows.
        self.reopen_history_if_due().await;
        let now = self.opts.clock.now();
        let totals = build::producer_totals(&self.roots);
        let free_bytes = if self.auto.rules.iter().any(|r| r.when_free_below.is_some()) {
            build::volume_space(&self.roots)
                .iter()
                .flatten()
                .map(|s| s.free_bytes)
                .min()
        } else {
            None
        };
        let n = self.auto.rules.len();
        for i in (0..n).map(|k| (self.auto.next + k) % n) {
            let rule = &self.auto.rules[i];
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
            if let Some(trigger) = autoreclaim::due(rule, self.auto.last_run[i], now, &f) {
                self.auto.next = (i + 1) % n;
                self.start_auto(i, trigger).await;
                return self.auto.running.is_some();
            }
        }
        false
    }

    /// Starts rule `i`'s drain: plans from the roots' compact state in a blocking job (the roots
    /// move into it and back, as for a preview: no copy of the items, the monitor task waits for
    /// the plan), then executes the spooled plan in a blocking task the monitor task does not
    /// wait for. Without a history database nothing runs (no audit rows, no deletion), that is
    /// said once per outage, and the rule stays due: it runs as soon as the database is back.
    async fn start_auto(&mut self, i: usize, trigger: Trigger) {
        let tx = self.auto_tx.clone();
        let now = self.opts.clock.now();
        let Some(db) = self.recorder.history() else {
            if !self.auto.no_history_said {
                self.auto.no_history_said = true;
                let why = self
                    .recorder
                    .unavailable()
                    .unwrap_or("no database configured");
                let line = format!("{NOT_RUN} ({why})");
                tracing::warn!("{line}");
                self.recorder.error(line);
                self.publish();
            }
            return;
        };
        self.auto.last_run[i] = Some(now);
        let rule = self.auto.rules[i].clone();
        let cancel = Arc::new(AtomicBool::new(false));
        self.auto.running = Some(Running {
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
            protected: self.opts.protected_paths(),
        };
        let catalogue = self.opts.catalogue.clone();
        let chunk = self.opts.plan_chunk;
        let res = self
            .with_roots(move |roots| {
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
        let catalogue = self.opts.catalogue.clone();
        let protected = self.opts.protected_paths();
        let db_path = self.opts.db_path.clone().unwrap_or_default();
        let clock = self.opts.clock.clone();
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
    }

    /// Takes in a drain's message: progress (published at most every
    /// [`PROGRESS_EVERY`](super::super::drains::PROGRESS_EVERY)), or its end.
    pub(super) async fn on_auto(&mut self, msg: AutoMsg) {
        match msg {
            AutoMsg::Progress(p) => {
                if self.auto.progress(&p, Instant::now()) {
                    self.publish();
                }
            }
            AutoMsg::Crashed(e) => {
                self.auto.running = None;
                tracing::error!(error = %e, "auto-reclaim run failed");
                self.recorder.error(format!("auto-reclaim run failed: {e}"));
                self.answer_waiters(None);
                self.publish();
            }
            AutoMsg::Done(out) => self.auto_done(*out).await,
        }
    }

    async fn auto_done(&mut self, out: autoreclaim::run::RunOutcome) {
        let Some(running) = self.auto.running.take() else {
            return;
        };
        let i = running.rule;
        let now = self.opts.clock.now();
        let run = out.run;
        if run.deleted_items > 0 || run.errors > 0 {
            tracing::info!(rule = %run.rule, deleted = run.deleted_items, freed_bytes = run.freed_bytes, errors = run.errors, status = %run.status, "auto-reclaim run");
        }
        if let Some(e) = &run.first_error {
            tracing::warn!(rule = %run.rule, "auto-reclaim: {e}");
        }
        let (note, announce) = self.auto.finished(i, &run, now);
        if let Some(note) = note {
            tracing::info!("{note}");
            self.recorder.error(note);
        }
        if let Some(runs) = announce {
            if let Some(text) = autoreclaim::announcement(&runs, &self.opts.catalogue) {
                let alert = AlertDto::new(
                    crate::units::unix_secs(now),
                    crate::dto::AlertRule::AutoReclaim,
                    run.producers.first().cloned(),
                    format!("Auto-reclaim: {}", run.rule),
                    text,
                );
                for a in self.recorder.store_alerts(vec![alert], now).await {
                    // No receiver is fine: nobody listens yet.
                    let _receivers = self.alert_tx.send(a).unwrap_or(0);
                }
            }
        }
        if out.unlisted {
            for i in 0..self.roots.len() {
                self.debounce.root(i).rescan = true;
            }
        } else {
            self.mark_deleted(&out.deleted);
        }
        self.figures_stale = true;
        self.answer_waiters(Some(run));
        self.process_dirty(true).await;
        self.publish();
    }

    /// Files the deleted items as dirty so the next snapshot has them gone (a large drain turns
    /// into a rescan by the dirty-set bound).
    pub(super) fn mark_deleted(&mut self, deleted: &[PathBuf]) {
        if deleted.len() > MAX_DIRTY {
            for i in 0..self.roots.len() {
                self.debounce.root(i).rescan = true;
            }
            return;
        }
        for p in deleted {
            for (i, st) in self.roots.iter().enumerate() {
                if let Target::Item { path, .. } = target_of(&st.root, &self.opts.catalogue, p) {
                    self.debounce.root(i).items.insert(path);
                }
            }
        }
        for i in 0..self.roots.len() {
            self.debounce.overflow_to_rescan(i, MAX_DIRTY);
        }
    }

    /// Answers the callers waiting for the run that just ended.
    fn answer_waiters(&mut self, run: Option<crate::autoreclaim::AutoRun>) {
        for w in std::mem::take(&mut self.auto.waiters) {
            if w.send(Ok(run.clone())).is_err() {
                tracing::debug!("auto-reclaim caller went away");
            }
        }
    }

    /// A caller waiting for the run in progress or the one a check starts; answered `None` at
    /// once when no rule is due.
    pub(super) async fn auto_wait(&mut self, reply: Waiter) {
        if self.auto_check().await {
            self.auto.waiters.push(reply);
        } else if reply.send(Ok(None)).is_err() {
            tracing::debug!("auto-reclaim caller went away");
        }
    }
}
