//! The monitor task ([`Actor`]): its parts, its run loop, and the steps that take more than one
//! part. Each part owns its state and has its `impl` in its own file:
//! - [`Watching`] (`watching`): the roots' live states and how they follow the disk: watchers,
//!   the debounce's dirty sets, the pace of polls and rescans, gone roots, pending flushes;
//! - [`FigureState`] (`figure_state`): the reclaim figures, when they are recomputed, the
//!   threshold, the plans kept for execute;
//! - [`AutoReclaim`] (`autoreclaim`): the auto-reclaim rules and their drains;
//! - [`Records`] (`records`): history samples and alerts, watched processes, provenance samples,
//!   the alerts' broadcast.
//!
//! The actor itself owns the options, the published snapshot, the monitor's state and first-scan
//! progress, and whether it is paused. Here: the run loop ([`Actor::run`]), the tick, what follows
//! a batch of events, an update ([`Actor::after_update`]) and a drain's end, and the snapshot
//! ([`Actor::publish`]); [`commands`] answers the handle's commands. A step that needs two parts
//! borrows them apart ([`Actor::split`]) and hands them to the part's method.

mod autoreclaim;
mod commands;
mod figure_state;
mod records;
mod watching;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::dto::{AlertDto, MonitorState, ScanProgressDto};
use crate::snapshot::Snapshot;
use crate::watch::WatchMsg;

use crate::monitor::drains::AutoMsg;
use crate::monitor::{build, Command, MonitorOptions, HEARTBEAT};
use autoreclaim::AutoReclaim;
use figure_state::FigureState;
use records::Records;
use watching::{Outside, Shown, Watching};

/// How often the monitor looks at gone roots, polling roots, due samples and stale figures.
const TICK: Duration = Duration::from_secs(5);

/// The monitor task's state. Only the task touches it.
pub(super) struct Actor {
    opts: MonitorOptions,
    snap_tx: watch::Sender<Arc<Snapshot>>,
    state: MonitorState,
    progress: ScanProgressDto,
    paused: bool,
    watching: Watching,
    figures: FigureState,
    auto: AutoReclaim,
    records: Records,
}

/// The actor's parts borrowed apart: the watching part, the figures and the rules, and what a
/// step of theirs reaches beyond them ([`Outside`]).
struct Split<'a> {
    watching: &'a mut Watching,
    figures: &'a mut FigureState,
    auto: &'a mut AutoReclaim,
    out: Outside<'a>,
}

/// Whether the run loop goes on after a command.
enum Flow {
    Continue,
    Stop(oneshot::Sender<()>),
}

impl Actor {
    /// The state of a monitor of `opts` before its first scan (the history database is opened).
    pub(super) fn new(
        opts: MonitorOptions,
        ev_tx: mpsc::UnboundedSender<WatchMsg>,
        snap_tx: watch::Sender<Arc<Snapshot>>,
        alert_tx: broadcast::Sender<AlertDto>,
    ) -> Actor {
        let n = opts.roots.len();
        Actor {
            watching: Watching::new(&opts, ev_tx),
            figures: FigureState::new(opts.threshold),
            auto: AutoReclaim::new(&opts),
            records: Records::new(&opts, alert_tx),
            snap_tx,
            paused: false,
            state: MonitorState::Scanning,
            progress: ScanProgressDto {
                roots_done: 0,
                roots_total: n as u32,
                entries_done: 0,
            },
            opts,
        }
    }

    /// The parts borrowed apart, for a step that needs more than one.
    fn split(&mut self) -> Split<'_> {
        Split {
            watching: &mut self.watching,
            figures: &mut self.figures,
            auto: &mut self.auto,
            out: Outside {
                opts: &self.opts,
                records: &mut self.records,
                paused: self.paused,
                shown: None,
            },
        }
    }

    /// Watches and scans every root, then serves events, commands and ticks until shut down or
    /// every handle is dropped.
    pub(super) async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut events: mpsc::UnboundedReceiver<WatchMsg>,
    ) {
        for i in 0..self.watching.roots.len() {
            self.watching.start_watcher(i);
        }
        self.publish();
        self.initial_scan().await;
        self.after_initial_scan(&mut events).await;
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let procs_on = self.records.procs_interval().is_some();
        let mut proc_tick = tokio::time::interval(self.records.procs_interval().unwrap_or(TICK));
        proc_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let auto_on = self.auto.tick();
        let mut auto_tick = tokio::time::interval(auto_on.unwrap_or(TICK));
        auto_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut auto_rx = self.auto.take_rx();
        loop {
            let wake = self.next_wake();
            tokio::select! {
                // Events first: a command (flush) must see every event already queued.
                biased;
                Some(msg) = events.recv() => {
                    self.on_watch(msg);
                    // Take whatever else is already queued before deciding what to do.
                    while let Ok(msg) = events.try_recv() {
                        self.on_watch(msg);
                    }
                    self.after_events().await;
                }
                cmd = commands.recv() => match cmd {
                    None => break,
                    Some(cmd) => {
                        if let Flow::Stop(ack) = self.command(cmd).await {
                            self.auto.cancel();
                            self.watching.stop();
                            if ack.send(()).is_err() {
                                tracing::debug!("shutdown caller went away");
                            }
                            return;
                        }
                    }
                },
                _ = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {
                    self.on_wake().await;
                }
                _ = tick.tick() => self.on_tick().await,
                _ = proc_tick.tick(), if procs_on => {
                    self.sample_processes().await;
                }
                Some(msg) = auto_rx.recv() => self.on_auto(msg).await,
                _ = auto_tick.tick(), if auto_on.is_some() => {
                    self.auto_check().await;
                }
            }
        }
        tracing::debug!("monitor stopped: every handle dropped");
    }

    /// Scans every root (publishing the progress), then samples the history, computes the
    /// figures and publishes the first full snapshot.
    async fn initial_scan(&mut self) {
        self.state = MonitorState::Scanning;
        self.progress.roots_done = 0;
        self.progress.entries_done = 0;
        for i in 0..self.watching.roots.len() {
            let mut out = Outside {
                opts: &self.opts,
                records: &mut self.records,
                paused: self.paused,
                shown: Some(Shown {
                    progress: &mut self.progress,
                    snap_tx: &self.snap_tx,
                }),
            };
            self.watching.rescan_root(i, &mut out).await;
            self.progress.roots_done = i as u32 + 1;
            self.publish();
        }
        self.state = if self.paused {
            MonitorState::Paused
        } else {
            MonitorState::Watching
        };
        let now = self.opts.clock.now();
        let roots = &self.watching.roots;
        let totals = build::producer_totals(roots);
        self.records
            .recorder
            .after_first_scan(roots, &totals, &self.figures.figures.groups, now)
            .await;
        if !self.records.recorder.stored_writers().is_empty() {
            // Writers remembered from before the start: one look at the process table, before
            // the first figures and alerts, says whether they still run (a group whose writers
            // all exited is a confirmed leak).
            self.records.provenance.want();
            self.records.provenance.sample_if_due(Instant::now()).await;
        }
        self.refresh_figures().await;
        self.after_update(true).await;
        // What the first figures, samples and snapshot left free goes back in
        // `Actor::after_initial_scan`, with what the events queued meanwhile held.
    }

    /// Handles the watch messages queued while the first scan ran, then returns the free heap to
    /// the OS and logs that the first scan and its figures are done (at `info`: the point where the
    /// benchmark reads the resident set). On Linux past the inotify limit, the failed watch walk
    /// queues thousands of events (its overflowed inotify queue) allocated on notify's thread:
    /// freed only once handled, after the first scan's own release, they would otherwise stay
    /// resident as free pages of notify's malloc arena.
    async fn after_initial_scan(&mut self, events: &mut mpsc::UnboundedReceiver<WatchMsg>) {
        let mut queued = 0u64;
        while let Ok(msg) = events.try_recv() {
            self.on_watch(msg);
            queued += 1;
        }
        if queued > 0 {
            self.after_events().await;
        }
        crate::platform::release_free_memory();
        tracing::info!(
            items = self
                .watching
                .roots
                .iter()
                .map(|r| r.item_count() as u64)
                .sum::<u64>(),
            queued_events = queued,
            "first scan and figures done; free heap returned"
        );
    }

    // --- Events, wakes, ticks --------------------------------------------------------------------

    /// Files one watcher message into the dirty sets.
    fn on_watch(&mut self, msg: WatchMsg) {
        let s = self.split();
        let mut out = s.out;
        s.watching.on_watch(msg, &mut out);
    }

    /// The next time the loop must wake up by itself: the debounce deadline, a flush timeout or
    /// a wanted process-table sample.
    fn next_wake(&self) -> Option<Instant> {
        [
            self.watching.next_wake(),
            self.records.provenance.deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// After a batch of events: starts the quiet time, re-measures if it is already over, answers
    /// the flushes whose markers came back.
    async fn after_events(&mut self) {
        // Before the quiet time: a writer that exits right after writing is caught while alive.
        self.sample_for_provenance().await;
        // Under a steady stream of events the timer branch may not get its turn.
        if self.watching.arm(Instant::now()) {
            self.on_wake().await;
        }
        self.finish_flushes(false).await;
    }

    /// The loop woke up by itself: re-measures when the quiet time is over, expires late flushes.
    async fn on_wake(&mut self) {
        self.sample_for_provenance().await;
        let now = Instant::now();
        if self.watching.take_due(now) && !self.paused {
            self.process_dirty(false).await;
        }
        if self.watching.flushes.expired(now) {
            self.finish_flushes(true).await;
        }
    }

    /// The periodic look: roots gone or back ([`Actor::check_roots`]), polling roots, stale
    /// figures, a due history sample, the snapshot's heartbeat.
    async fn on_tick(&mut self) {
        self.heartbeat();
        self.check_roots().await;
        let polled = {
            let s = self.split();
            let mut out = s.out;
            s.watching.poll_due(&mut out).await
        };
        if polled {
            self.after_update(false).await;
        }
        if !self.paused && self.state != MonitorState::Scanning {
            let s = self.split();
            let mut out = s.out;
            if s.figures.follow(s.watching, &mut out).await {
                self.publish();
            }
        }
        self.reopen_history_if_due().await;
        let now = self.opts.clock.now();
        let roots = &self.watching.roots;
        let totals = build::producer_totals(roots);
        let sampled = self
            .records
            .sample_if_due(roots, &totals, &self.figures.figures.groups, now)
            .await;
        if sampled {
            // A new sample is new history: a burst that ended before it now shows as growth, and
            // free space may have fallen with no event under the roots. Evaluate alerts and publish.
            self.after_update(false).await;
        }
    }

    /// Re-measures the dirty items of every root ([`Watching::process_dirty`]); when one changed,
    /// the update follows ([`Actor::after_update`]).
    async fn process_dirty(&mut self, now_please: bool) {
        let changed = {
            let s = self.split();
            let mut out = s.out;
            s.watching.process_dirty(now_please, &mut out).await
        };
        if changed {
            self.after_update(false).await;
        }
    }

    /// Looks at every root's path ([`Watching::check_roots`]); when one changed, the update
    /// follows. True when one changed.
    async fn check_roots(&mut self) -> bool {
        let changed = {
            let s = self.split();
            let mut out = s.out;
            s.watching.check_roots(&mut out).await
        };
        if changed {
            self.after_update(false).await;
        }
        changed
    }

    /// Recomputes the reclaim figures ([`FigureState::refresh`]).
    async fn refresh_figures(&mut self) {
        let s = self.split();
        let mut out = s.out;
        s.figures.refresh(s.watching, &mut out).await;
    }

    /// Answers the flushes whose markers all came back (or, with `expire`, that timed out), after
    /// the roots' paths are looked at and the dirty items re-measured.
    async fn finish_flushes(&mut self, expire: bool) {
        let now = Instant::now();
        if !self.watching.flushes.ready(expire, now) {
            return;
        }
        self.check_roots().await;
        if !self.paused {
            self.process_dirty(true).await;
            if self.figures.is_stale(&self.watching) {
                self.refresh_figures().await;
                self.publish();
            }
        }
        self.watching.answer_flushes(expire, now);
    }

    /// Starts a flush: the roots' paths are looked at first (a root swapped for a link or removed
    /// is marked gone, one back is rescanned, before the flush answers), then the markers are
    /// written ([`Watching::start_flush`]) and what is ready answered.
    async fn start_flush(
        &mut self,
        reply: oneshot::Sender<Result<(), crate::monitor::MonitorError>>,
    ) {
        self.check_roots().await;
        self.watching.start_flush(reply);
        self.finish_flushes(false).await;
    }

    // --- Records ---------------------------------------------------------------------------------

    /// Opens the history database again when it failed and its retry is due; when it opens, the
    /// rules may say again that they wait for it (at the next outage). True when it is open now
    /// after being closed.
    async fn reopen_history_if_due(&mut self) -> bool {
        let now = self.opts.clock.now();
        let Some(open) = self.records.reopen_if_due(now).await else {
            return false;
        };
        if open {
            self.auto.history_back();
            self.records.recorder.forget_error(autoreclaim::NOT_RUN);
        }
        self.publish();
        open
    }

    /// After the inventory changed: sample history on a large change, evaluate alerts, publish.
    async fn after_update(&mut self, force_sample: bool) {
        let now = self.opts.clock.now();
        let totals = build::producer_totals(&self.watching.roots);
        self.records
            .sample_on_change(
                force_sample,
                &self.watching.roots,
                &totals,
                &self.figures.figures.groups,
                now,
            )
            .await;
        if !self.paused {
            self.auto_check().await;
            self.records
                .evaluate_alerts(
                    &self.opts.catalogue,
                    &self.watching.roots,
                    &totals,
                    &self.figures.figures.groups,
                    now,
                )
                .await;
        }
        self.publish();
    }

    /// Samples the process table for the writers of unattributed entries when one is wanted and
    /// due; the figures then name the writers again at their next refresh.
    async fn sample_for_provenance(&mut self) {
        if self.records.sample_for_provenance().await {
            self.figures.mark_stale();
        }
    }

    /// Samples the watched processes; returns the `process-leak` alerts that fire, stored and
    /// broadcast (none while paused: the samples are still taken).
    async fn sample_processes(&mut self) -> Vec<AlertDto> {
        let now = self.opts.clock.now();
        let Some(fired) = self.records.sample_processes(now, self.paused).await else {
            return Vec::new();
        };
        self.publish();
        fired
    }

    // --- Auto-reclaim ----------------------------------------------------------------------------

    /// Starts the first due rule ([`AutoReclaim::due`]) unless paused, scanning, a drain runs or
    /// there are no rules. Returns true when a run is in progress afterwards.
    async fn auto_check(&mut self) -> bool {
        if self.auto.running() {
            return true;
        }
        if !self.auto.has_rules() || self.paused || self.state == MonitorState::Scanning {
            return false;
        }
        // A database that failed may be back: the rules need it for their audit rows.
        self.reopen_history_if_due().await;
        let now = self.opts.clock.now();
        let Some((i, trigger)) = self.auto.due(&self.watching.roots, now) else {
            return false;
        };
        let said = {
            let s = self.split();
            let mut out = s.out;
            s.auto.start(i, trigger, s.watching, &mut out).await
        };
        if said {
            self.publish();
        }
        self.auto.running()
    }

    /// Takes in a drain's message: progress (published at most every
    /// [`PROGRESS_EVERY`](crate::monitor::drains::PROGRESS_EVERY)), or its end.
    async fn on_auto(&mut self, msg: AutoMsg) {
        match msg {
            AutoMsg::Progress(p) => {
                if self.auto.progress(&p) {
                    self.publish();
                }
            }
            AutoMsg::Crashed(e) => {
                self.auto.crashed();
                tracing::error!(error = %e, "auto-reclaim run failed");
                self.records
                    .recorder
                    .error(format!("auto-reclaim run failed: {e}"));
                self.auto.answer_waiters(None);
                self.publish();
            }
            AutoMsg::Done(out) => self.auto_done(*out).await,
        }
    }

    /// A drain ended: its note and announcement are recorded, what it deleted is re-measured, its
    /// waiters answered.
    async fn auto_done(&mut self, out: crate::autoreclaim::run::RunOutcome) {
        let now = self.opts.clock.now();
        let Some(ended) = self.auto.ended(out, &self.opts.catalogue, now) else {
            return;
        };
        if let Some(note) = ended.note {
            tracing::info!("{note}");
            self.records.recorder.error(note);
        }
        if let Some(alert) = ended.alert {
            self.records.raise(vec![alert], now).await;
        }
        match ended.deleted {
            None => self.watching.rescan_all_next(),
            Some(deleted) => self.watching.mark_deleted(&deleted, &self.opts),
        }
        self.figures.mark_stale();
        self.auto.answer_waiters(Some(ended.run));
        self.process_dirty(true).await;
        self.publish();
    }

    /// A caller waiting for the run in progress or the one a check starts; answered `None` at
    /// once when no rule is due.
    async fn auto_wait(&mut self, reply: crate::monitor::drains::Waiter) {
        if self.auto_check().await {
            self.auto.wait(reply);
        } else if reply.send(Ok(None)).is_err() {
            tracing::debug!("auto-reclaim caller went away");
        }
    }

    // --- The snapshot ----------------------------------------------------------------------------

    /// Refreshes the published snapshot's `live_at_unix_secs` when it is [`HEARTBEAT`] old:
    /// a monitor with nothing to say still shows it runs (the snapshot's age stays under a
    /// minute and a tick), one that is stuck or gone does not.
    fn heartbeat(&mut self) {
        let now = crate::units::unix_secs(std::time::SystemTime::now());
        self.snap_tx.send_if_modified(|s| {
            let due = now.abs_diff(s.live_at_unix_secs) >= HEARTBEAT.as_secs();
            if due {
                Arc::make_mut(s).live_at_unix_secs = now;
            }
            due
        });
    }

    /// Builds and publishes a snapshot of the current state.
    fn publish(&mut self) {
        let state = if self.state == MonitorState::Scanning {
            MonitorState::Scanning
        } else if self.paused {
            MonitorState::Paused
        } else {
            MonitorState::Watching
        };
        for st in &mut self.watching.roots {
            st.refresh_tops();
        }
        let snap = build::snapshot(build::Inputs {
            roots: &self.watching.roots,
            catalogue: &self.opts.catalogue,
            state,
            progress: self.progress.clone(),
            threshold: self.figures.threshold,
            figures: &self.figures.figures,
            recorder: &self.records.recorder,
            now: self.opts.clock.now(),
            auto: self.auto.dto(),
            notices: &self.opts.notices,
            ignored_shapes: &self.opts.ignored_shapes,
        });
        self.snap_tx.send_replace(Arc::new(snap));
    }
}
