//! The monitor task: its state ([`Actor`]) and its run loop. `impl Actor` is split by concern, one
//! file each:
//! - here: the state, the run loop ([`Actor::run`]), the tick, and what follows an update: the
//!   history's samples and alerts ([`Actor::after_update`]), the reclaim figures
//!   ([`Actor::refresh_figures`]) and the published snapshot ([`Actor::publish`]);
//! - [`changes`]: from a change on disk to a re-measure: watch events into dirty sets, when they
//!   are re-measured, polls of roots without events, flushes;
//! - [`update`]: scans and re-measures applied to the roots' states, gone roots;
//! - [`commands`]: the handle's commands: pause, threshold, preview, plan and execute a reclaim;
//! - [`auto_reclaim`]: auto-reclaim rules that came due, and their drains beside the task;
//! - [`jobs`]: blocking jobs over the roots' states (moved into the job and back, a panic caught).

mod autoreclaim;
mod changes;
mod commands;
mod jobs;
mod update;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::dto::{AlertDto, MonitorState, ScanProgressDto};
use crate::reclaim::StreamedPlan;
use crate::snapshot::Snapshot;
use crate::watch::live::RootState;
use crate::watch::{RootWatcher, WatchMsg};

use super::debounce::Debounce;
use super::drains::{AutoMsg, AutoState};
use super::figures::Figures;
use super::pace::Pace;
use super::process_alerts::ProcWatch;
use super::provenance::Provenance;
use super::recorder::Recorder;
use super::{build, Command, MonitorOptions};
use changes::PendingFlush;

/// How often the monitor looks at gone roots, polling roots, due samples and stale figures.
const TICK: Duration = Duration::from_secs(5);

/// The monitor task's state. Only the task touches it.
pub(super) struct Actor {
    opts: MonitorOptions,
    roots: Vec<RootState>,
    watchers: Vec<Option<RootWatcher>>,
    /// When each root was last scanned or polled, and what that cost: the pace of the polls of
    /// polling roots and of the unwatched paths of evented roots.
    pace: Vec<Pace>,
    ev_tx: mpsc::UnboundedSender<WatchMsg>,
    snap_tx: watch::Sender<Arc<Snapshot>>,
    alert_tx: broadcast::Sender<AlertDto>,
    debounce: Debounce,
    flushes: Vec<PendingFlush>,
    flush_seq: u64,
    paused: bool,
    state: MonitorState,
    progress: ScanProgressDto,
    threshold: Duration,
    /// The last plans previewed, oldest first, by id (at most `commands::KEPT_PLANS`).
    plans: Vec<(String, StreamedPlan)>,
    figures: Figures,
    figures_stale: bool,
    figures_at: Option<Instant>,
    /// How long the last figures took (bounds how often they are recomputed).
    figures_cost: Duration,
    recorder: Recorder,
    procs: ProcWatch,
    /// The processes seen when unattributed entries changed: who wrote a group.
    provenance: Provenance,
    auto: AutoState,
    auto_tx: mpsc::UnboundedSender<AutoMsg>,
    auto_rx: Option<mpsc::UnboundedReceiver<AutoMsg>>,
    /// When each root last fired a `root-gone` alert (at most one per root per cooldown).
    root_alerted: Vec<Option<std::time::SystemTime>>,
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
        let roots = opts.roots.iter().cloned().map(RootState::new).collect();
        let threshold = opts.threshold;
        let recorder = Recorder::new(&opts);
        let mut procs = ProcWatch::new(&opts.process_watch, opts.alerts.cooldown);
        procs.restore(&recorder.recent_alerts());
        let (auto_tx, auto_rx) = mpsc::unbounded_channel();
        Actor {
            auto: AutoState::new(opts.auto_reclaim.clone()),
            auto_tx,
            auto_rx: Some(auto_rx),
            procs,
            provenance: Provenance::new(&opts),
            roots,
            root_alerted: vec![None; n],
            watchers: (0..n).map(|_| None).collect(),
            pace: vec![Pace::new(Instant::now()); n],
            ev_tx,
            snap_tx,
            alert_tx,
            debounce: Debounce::new(n, opts.debounce),
            flushes: Vec::new(),
            flush_seq: 0,
            paused: false,
            state: MonitorState::Scanning,
            progress: ScanProgressDto {
                roots_done: 0,
                roots_total: n as u32,
                entries_done: 0,
            },
            threshold,
            plans: Vec::new(),
            figures: Figures::default(),
            figures_stale: true,
            figures_at: None,
            figures_cost: Duration::ZERO,
            recorder,
            opts,
        }
    }

    /// Watches and scans every root, then serves events, commands and ticks until shut down or
    /// every handle is dropped.
    pub(super) async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut events: mpsc::UnboundedReceiver<WatchMsg>,
    ) {
        for i in 0..self.roots.len() {
            self.start_watcher(i);
        }
        self.publish();
        self.initial_scan().await;
        self.after_initial_scan(&mut events).await;
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let procs_on = self.procs.interval().is_some();
        let mut proc_tick = tokio::time::interval(self.procs.interval().unwrap_or(TICK));
        proc_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let auto_on = self.auto.tick();
        let mut auto_tick = tokio::time::interval(auto_on.unwrap_or(TICK));
        auto_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // `run` is called once, so the receiver is there; the actor keeps a sender: never closed.
        let (_, placeholder) = mpsc::unbounded_channel();
        let mut auto_rx = self.auto_rx.take().unwrap_or(placeholder);
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
                            self.watchers.clear();
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
                .roots
                .iter()
                .map(|r| r.item_count() as u64)
                .sum::<u64>(),
            queued_events = queued,
            "first scan and figures done; free heap returned"
        );
    }

    /// The periodic look: roots gone or back ([`Actor::check_roots`]), polling roots, stale figures, a due history sample, the
    /// snapshot's heartbeat.
    async fn on_tick(&mut self) {
        self.heartbeat();
        self.check_roots().await;
        if self.poll_due().await {
            self.after_update(false).await;
        }
        // Ages cross the threshold and owners start and exit with no file event: the figures
        // follow the clock and the process table too (see `figures::refresh_due`).
        let due = super::figures::refresh_due(
            &self.figures,
            self.figures_stale,
            self.figures_at.map(|t| t.elapsed()),
            self.figures_cost,
            self.opts.clock.now(),
        );
        if due && !self.paused && self.state != MonitorState::Scanning {
            let crossed = self
                .figures
                .next_crossing
                .is_some_and(|t| self.opts.clock.now() >= t);
            // Only a refresh due for the guards alone can be skipped: ask the process table.
            let hold = !self.figures_stale && !crossed && {
                let roots: Vec<PathBuf> = self
                    .roots
                    .iter()
                    .map(|r| r.root.canonical.clone())
                    .collect();
                guards_hold(self.figures.guards.clone(), roots).await
            };
            if hold {
                // Due only to follow the process table, and it answers as before: the figures
                // stand. The next look is paced as if they had been computed now.
                self.figures_at = Some(Instant::now());
            } else {
                let before = self.figures.clone();
                self.refresh_figures().await;
                if self.figures != before {
                    self.publish();
                }
            }
        }
        self.reopen_history_if_due().await;
        let now = self.opts.clock.now();
        let totals = build::producer_totals(&self.roots);
        if self.recorder.sample_due(now) {
            self.recorder
                .sample(&self.roots, &totals, &self.figures.groups, now)
                .await;
            // A new sample is new history: a burst that ended before it now shows as growth, and
            // free space may have fallen with no event under the roots. Evaluate alerts and publish.
            self.after_update(false).await;
        }
    }

    /// Opens the history database again when it failed and its retry is due; when it opens, the
    /// cooldowns of its stored alerts are restored and the rules may say again that they wait for
    /// it (at the next outage). True when it is open now after being closed.
    pub(super) async fn reopen_history_if_due(&mut self) -> bool {
        let now = self.opts.clock.now();
        if !self.recorder.reopen_due(now) {
            return false;
        }
        let (open, restored) = self.recorder.reopen(now).await;
        self.procs.restore(&restored);
        if open {
            self.auto.no_history_said = false;
            self.recorder.forget_error(autoreclaim::NOT_RUN);
        }
        self.publish();
        open
    }

    /// After the inventory changed: sample history on a large change, evaluate alerts, publish.
    async fn after_update(&mut self, force_sample: bool) {
        let now = self.opts.clock.now();
        let totals = build::producer_totals(&self.roots);
        if force_sample
            || self
                .recorder
                .large_change(&totals, &self.figures.groups, now)
        {
            self.recorder
                .sample(&self.roots, &totals, &self.figures.groups, now)
                .await;
        }
        if !self.paused {
            self.auto_check().await;
            let space = build::volume_space(&self.roots);
            let fired = self
                .recorder
                .evaluate_alerts(
                    &self.opts.catalogue,
                    &self.roots,
                    &totals,
                    &space,
                    &self.figures.groups,
                    now,
                )
                .await;
            for alert in fired {
                // No receiver is fine: nobody listens yet.
                let _receivers = self.alert_tx.send(alert).unwrap_or(0);
            }
        }
        self.publish();
    }

    /// Samples the process table for the writers of unattributed entries when one is wanted and
    /// due; the figures then name the writers again at their next refresh.
    async fn sample_for_provenance(&mut self) {
        if self.provenance.sample_if_due(Instant::now()).await {
            self.figures_stale = true;
        }
    }

    /// Samples the watched processes; stores, broadcasts and returns the `process-leak` alerts that
    /// fire (none while paused: the samples are still taken).
    async fn sample_processes(&mut self) -> Vec<AlertDto> {
        let now = self.opts.clock.now();
        let fired = self.procs.sample(now).await;
        if self.paused || fired.is_empty() {
            return Vec::new();
        }
        let fired = self.recorder.store_alerts(fired, now).await;
        for alert in &fired {
            // No receiver is fine: nobody listens yet.
            let _receivers = self.alert_tx.send(alert.clone()).unwrap_or(0);
        }
        self.publish();
        fired
    }

    /// Recomputes the reclaimable and orphan figures off the async threads. The roots' states move
    /// into the blocking job and back (the actor waits for it), so no item is copied.
    async fn refresh_figures(&mut self) {
        let catalogue = self.opts.catalogue.clone();
        let threshold = self.threshold;
        let protected = self.opts.protected_paths();
        let now = self.opts.clock.now();
        let started = Instant::now();
        let history = self.provenance.history();
        let ignored = self.opts.ignored_shapes.clone();
        let stored = self.recorder.stored_writers();
        // The chunks' temporaries are gone after the job: their pages are returned.
        let res = self
            .with_roots(move |roots| {
                let mut a =
                    Figures::compute(roots, &catalogue, threshold, protected, &ignored, now);
                a.add_evidence(roots, &super::provenance::lock(&history), &stored);
                a
            })
            .await;
        match res {
            Ok(Ok(a)) => self.figures = a,
            Ok(Err(_)) => tracing::error!("reclaimable figures failed (a panic)"),
            // Only when the runtime shuts down: the states were lost, the roots started over.
            Err(e) => tracing::error!(error = %e, "reclaimable figures failed; rescanned"),
        }
        self.figures_stale = false;
        self.figures_at = Some(Instant::now());
        self.figures_cost = started.elapsed();
    }

    /// Refreshes the published snapshot's `live_at_unix_secs` when it is [`super::HEARTBEAT`] old:
    /// a monitor with nothing to say still shows it runs (the snapshot's age stays under a
    /// minute and a tick), one that is stuck or gone does not.
    fn heartbeat(&mut self) {
        let now = crate::units::unix_secs(std::time::SystemTime::now());
        self.snap_tx.send_if_modified(|s| {
            let due = now.abs_diff(s.live_at_unix_secs) >= super::HEARTBEAT.as_secs();
            if due {
                Arc::make_mut(s).live_at_unix_secs = now;
            }
            due
        });
    }

    /// Builds and publishes a snapshot of the current state.
    /// Publishes the last snapshot again with the current scan progress only (cheap: nothing is
    /// rebuilt), for the entry count that moves during the first scan.
    fn publish_progress(&mut self) {
        let progress = self.progress.clone();
        self.snap_tx.send_if_modified(|snap| {
            let changed = snap.scan_progress != progress;
            if changed {
                Arc::make_mut(snap).scan_progress = progress;
            }
            changed
        });
    }

    fn publish(&mut self) {
        let state = if self.state == MonitorState::Scanning {
            MonitorState::Scanning
        } else if self.paused {
            MonitorState::Paused
        } else {
            MonitorState::Watching
        };
        for st in &mut self.roots {
            st.refresh_tops();
        }
        let snap = build::snapshot(build::Inputs {
            roots: &self.roots,
            catalogue: &self.opts.catalogue,
            state,
            progress: self.progress.clone(),
            threshold: self.threshold,
            figures: &self.figures,
            recorder: &self.recorder,
            now: self.opts.clock.now(),
            auto: self.auto.dto(),
            notices: &self.opts.notices,
            ignored_shapes: &self.opts.ignored_shapes,
        });
        self.snap_tx.send_replace(Arc::new(snap));
    }
}

/// True when the process and mount tables, read now off the async threads, answer what the last
/// computation of the figures asked (`inputs`) as they did then
/// ([`super::figures::GuardInputs::still_hold`]); false when there is no such computation.
async fn guards_hold(inputs: Option<super::figures::GuardInputs>, roots: Vec<PathBuf>) -> bool {
    let Some(inputs) = inputs else {
        return false;
    };
    let started = Instant::now();
    let held = tokio::task::spawn_blocking(move || {
        let probe = crate::process::SystemProbe::under(roots.iter().cloned());
        let held = inputs.still_hold(&probe, &roots);
        // The probe read every process's open files: what it freed would stay resident in this
        // blocking thread's malloc arena, a few hundred KiB a check at rest, one arena after the
        // other as the pool's threads come and go.
        crate::platform::release_free_memory();
        held
    })
    .await
    .unwrap_or(false);
    tracing::debug!(
        held,
        ms = started.elapsed().as_millis() as u64,
        "checked the process table against the figures' guards"
    );
    held
}
