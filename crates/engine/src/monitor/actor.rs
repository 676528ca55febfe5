//! The monitor task: owns the per-root state, turns watch events into re-measures, answers commands.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::event::{CreateKind, EventKind, ModifyKind, RenameMode};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::catalogue::Catalogue;
use crate::inventory::{Inventory, Item};
use crate::roots::Root;
use crate::snapshot::{AlertDto, MonitorState, ScanProgress, Snapshot, WatchMode};
use crate::watch::map::{target_of, Target, FLUSH_MARKER_PREFIX};
use crate::watch::state::DirEntryStat;
use crate::watch::state::RootState;
use crate::watch::{is_watch_limit, RootWatcher, WatchMsg};

use super::analysis::Analysis;
use super::procs::ProcWatch;
use super::record::Recorder;
use super::{build, Command, MonitorError, MonitorOptions, FLUSH_TIMEOUT, POLL_INTERVAL};

/// How often the monitor looks at gone roots, polling roots, due samples and stale figures.
const TICK: Duration = Duration::from_secs(5);
/// Reclaimable and orphan figures are recomputed at most this often while events flow.
const ANALYSIS_INTERVAL: Duration = Duration::from_secs(30);
/// Past this many dirty paths in one root, a rescan of the root is cheaper than re-measures.
const MAX_DIRTY: usize = 200_000;
/// Rescans that the watcher asks for (queue overflow, coalesced events) run at most this often per
/// root outside a flush: a busy temp dir (a build writing into it) would otherwise be rescanned back
/// to back. The changes are not lost: the rescan runs when the gap has passed.
const MIN_RESCAN_GAP: Duration = Duration::from_secs(30);

/// What changed in one root since the last update.
#[derive(Debug, Default)]
struct Dirty {
    /// Canonical item paths to re-measure.
    items: BTreeSet<PathBuf>,
    /// New dirs (not themselves items) to search for claimed items down to the rules' depth.
    discover: BTreeSet<PathBuf>,
    /// The root must be rescanned (rescan flag, watcher error, too many changes).
    rescan: bool,
    /// The root dir itself was touched (removed, renamed, attributes).
    root_touched: bool,
}

impl Dirty {
    fn is_empty(&self) -> bool {
        self.items.is_empty() && self.discover.is_empty() && !self.rescan && !self.root_touched
    }
}

struct PendingFlush {
    token: String,
    roots: BTreeSet<usize>,
    deadline: Instant,
    reply: oneshot::Sender<Result<(), MonitorError>>,
}

pub(super) struct Actor {
    opts: MonitorOptions,
    roots: Vec<RootState>,
    watchers: Vec<Option<RootWatcher>>,
    last_poll: Vec<Instant>,
    ev_tx: mpsc::UnboundedSender<WatchMsg>,
    snap_tx: watch::Sender<Arc<Snapshot>>,
    alert_tx: broadcast::Sender<AlertDto>,
    dirty: Vec<Dirty>,
    deadline: Option<Instant>,
    flushes: Vec<PendingFlush>,
    flush_seq: u64,
    paused: bool,
    state: MonitorState,
    progress: ScanProgress,
    threshold: Duration,
    plans: HashMap<String, crate::reclaim::ReclaimPlan>,
    analysis: Analysis,
    analysis_stale: bool,
    analysis_at: Option<Instant>,
    recorder: Recorder,
    procs: ProcWatch,
}

enum Flow {
    Continue,
    Stop(oneshot::Sender<()>),
}

impl Actor {
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
        Actor {
            procs,
            roots,
            watchers: (0..n).map(|_| None).collect(),
            last_poll: vec![Instant::now(); n],
            ev_tx,
            snap_tx,
            alert_tx,
            dirty: (0..n).map(|_| Dirty::default()).collect(),
            deadline: None,
            flushes: Vec::new(),
            flush_seq: 0,
            paused: false,
            state: MonitorState::Scanning,
            progress: ScanProgress {
                roots_done: 0,
                roots_total: n as u32,
            },
            threshold,
            plans: HashMap::new(),
            analysis: Analysis::default(),
            analysis_stale: true,
            analysis_at: None,
            recorder,
            opts,
        }
    }

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
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let procs_on = self.procs.interval().is_some();
        let mut proc_tick = tokio::time::interval(self.procs.interval().unwrap_or(TICK));
        proc_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
            }
        }
        tracing::debug!("monitor stopped: every handle dropped");
    }

    fn next_wake(&self) -> Option<Instant> {
        let flush = self.flushes.iter().map(|f| f.deadline).min();
        match (self.deadline, flush) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn start_watcher(&mut self, i: usize) {
        let root = self.roots[i].root.clone();
        match RootWatcher::start(i, &root, self.ev_tx.clone()) {
            Ok(w) => {
                self.watchers[i] = Some(w);
                self.roots[i].mode = WatchMode::Events;
                self.roots[i].watch_error = None;
            }
            Err(e) => {
                tracing::warn!(root = %root.canonical.display(), error = %e, "cannot watch root; rescanning it every {}s", POLL_INTERVAL.as_secs());
                self.watchers[i] = None;
                self.roots[i].mode = WatchMode::Polling;
                self.roots[i].watch_error = Some(e.to_string());
            }
        }
    }

    async fn initial_scan(&mut self) {
        self.state = MonitorState::Scanning;
        self.progress.roots_done = 0;
        for i in 0..self.roots.len() {
            self.rescan_root(i).await;
            self.progress.roots_done = i as u32 + 1;
            self.publish();
        }
        self.state = if self.paused {
            MonitorState::Paused
        } else {
            MonitorState::Watching
        };
        let now = self.opts.clock.now();
        let totals = build::producer_totals(&self.roots);
        self.recorder
            .after_first_scan(&self.roots, &totals, now)
            .await;
        self.refresh_analysis().await;
        self.after_update(true).await;
    }

    async fn rescan_root(&mut self, i: usize) {
        let root = self.roots[i].root.clone();
        let catalogue = self.opts.catalogue.clone();
        let started = Instant::now();
        let res =
            tokio::task::spawn_blocking(move || crate::scan::scan_root(&root, &catalogue)).await;
        match res {
            Ok(scan) => {
                let now = self.opts.clock.now();
                self.roots[i].load_scan(scan, now);
                self.last_poll[i] = Instant::now();
                // The scan's buffers are freed: return their pages to the OS.
                if let Err(e) =
                    tokio::task::spawn_blocking(crate::platform::release_free_memory).await
                {
                    tracing::debug!(error = %e, "releasing free memory failed");
                }
                tracing::info!(
                    root = %self.roots[i].root.canonical.display(),
                    items = self.roots[i].item_count(),
                    allocated_bytes = self.roots[i].total.allocated_bytes,
                    ms = started.elapsed().as_millis() as u64,
                    "scanned root"
                );
            }
            Err(e) => {
                tracing::error!(root = %self.roots[i].root.canonical.display(), error = %e, "scan of root failed");
                self.recorder
                    .error(format!("scan of {:?} failed: {e}", self.roots[i].root.path));
            }
        }
        self.analysis_stale = true;
    }

    /// Files one watcher message into the dirty sets.
    fn on_watch(&mut self, msg: WatchMsg) {
        let i = msg.root;
        if i >= self.roots.len() {
            tracing::warn!(root = i, "event for an unknown root index");
            return;
        }
        let event = match msg.event {
            Ok(ev) => ev,
            Err(e) => {
                if is_watch_limit(&e) {
                    tracing::warn!(root = %self.roots[i].root.canonical.display(), error = %e, "out of file watches; rescanning this root every {}s instead", POLL_INTERVAL.as_secs());
                    self.watchers[i] = None;
                    self.roots[i].mode = WatchMode::Polling;
                    self.roots[i].watch_error = Some(format!(
                        "the OS limit on file watches was reached ({e}); rescanning every {}s. \
                         On Linux raise /proc/sys/fs/inotify/max_user_watches",
                        POLL_INTERVAL.as_secs()
                    ));
                } else {
                    tracing::warn!(root = %self.roots[i].root.canonical.display(), error = %e, "watch error; rescanning the root");
                }
                self.dirty[i].rescan = true;
                return;
            }
        };
        if event.need_rescan() {
            tracing::info!(root = %self.roots[i].root.canonical.display(), "the watcher asked for a rescan (event queue overflow or coalesced events)");
            self.dirty[i].rescan = true;
            return;
        }
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        let discover_kind = matches!(
            event.kind,
            EventKind::Create(CreateKind::Folder | CreateKind::Any | CreateKind::Other)
                | EventKind::Modify(ModifyKind::Name(
                    RenameMode::To | RenameMode::Both | RenameMode::Any
                ))
        );
        let max_depth = self.opts.catalogue.max_depth(self.roots[i].root.kind);
        for path in &event.paths {
            match target_of(&self.roots[i].root, &self.opts.catalogue, path) {
                Target::Outside => {}
                Target::Root => self.dirty[i].root_touched = true,
                Target::Marker(token) => self.on_marker(i, &token),
                Target::Item {
                    path: item,
                    claimed,
                    ..
                } => {
                    if !claimed && discover_kind && max_depth > 1 {
                        if let Some(rel) = self.roots[i].root.relative(path) {
                            if rel.components().count() < max_depth {
                                self.dirty[i]
                                    .discover
                                    .insert(self.roots[i].root.canonical.join(rel));
                            }
                        }
                    }
                    self.dirty[i].items.insert(item);
                }
            }
        }
        if self.dirty[i].items.len() + self.dirty[i].discover.len() > MAX_DIRTY {
            tracing::info!(root = %self.roots[i].root.canonical.display(), "too many changed items; rescanning the root instead");
            self.dirty[i].items.clear();
            self.dirty[i].discover.clear();
            self.dirty[i].rescan = true;
        }
    }

    fn on_marker(&mut self, root: usize, token: &str) {
        for f in &mut self.flushes {
            if f.token == token {
                f.roots.remove(&root);
            }
        }
    }

    async fn after_events(&mut self) {
        if self.deadline.is_none() && self.dirty.iter().any(|d| !d.is_empty()) {
            self.deadline = Some(Instant::now() + self.opts.debounce);
        }
        // Under a steady stream of events the timer branch may not get its turn.
        if self.deadline.is_some_and(|d| d <= Instant::now()) {
            self.on_wake().await;
        }
        self.finish_flushes(false).await;
    }

    async fn on_wake(&mut self) {
        let now = Instant::now();
        if self.deadline.is_some_and(|d| d <= now) {
            self.deadline = None;
            if !self.paused {
                self.process_dirty(false).await;
            }
        }
        let expired = self.flushes.iter().any(|f| f.deadline <= now);
        if expired {
            self.finish_flushes(true).await;
        }
    }

    /// Answers the flushes whose markers all came back (or, with `expire`, that timed out).
    async fn finish_flushes(&mut self, expire: bool) {
        let now = Instant::now();
        let ready = self
            .flushes
            .iter()
            .any(|f| f.roots.is_empty() || (expire && f.deadline <= now));
        if !ready {
            return;
        }
        self.check_gone_roots().await;
        if !self.paused {
            self.process_dirty(true).await;
            if self.analysis_stale {
                self.refresh_analysis().await;
                self.publish();
            }
        }
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.flushes)
            .into_iter()
            .partition(|f| f.roots.is_empty() || (expire && f.deadline <= now));
        self.flushes = waiting;
        for f in done {
            let res = match f.roots.iter().next() {
                None => Ok(()),
                Some(&i) => Err(MonitorError::FlushTimeout {
                    path: self.roots[i].root.canonical.clone(),
                }),
            };
            if f.reply.send(res).is_err() {
                tracing::debug!("flush caller went away");
            }
        }
    }

    async fn start_flush(&mut self, reply: oneshot::Sender<Result<(), MonitorError>>) {
        self.flush_seq += 1;
        let token = format!("{}-{}", std::process::id(), self.flush_seq);
        let mut roots = BTreeSet::new();
        for (i, st) in self.roots.iter().enumerate() {
            // A polling root has no events to wait for: the flush re-reads it.
            if st.mode == WatchMode::Polling && !st.gone {
                self.dirty[i].rescan = true;
            }
            if self.watchers[i].is_none() || st.gone {
                continue;
            }
            let marker = st
                .root
                .canonical
                .join(format!("{FLUSH_MARKER_PREFIX}{token}"));
            match std::fs::File::create(&marker) {
                Ok(_) => {
                    roots.insert(i);
                    if let Err(e) = std::fs::remove_file(&marker) {
                        tracing::warn!(path = %marker.display(), error = %e, "cannot remove flush marker");
                    }
                }
                Err(e) => {
                    tracing::debug!(path = %marker.display(), error = %e, "cannot write a flush marker; flushing what has arrived");
                }
            }
        }
        self.flushes.push(PendingFlush {
            token,
            roots,
            deadline: Instant::now() + FLUSH_TIMEOUT,
            reply,
        });
        self.finish_flushes(false).await;
    }

    /// Re-measures the dirty items of every root (and rescans flagged roots), then publishes.
    /// Without `now_please`, a root rescanned less than [`MIN_RESCAN_GAP`] ago keeps its rescan
    /// pending until the gap has passed; a flush, a resume or a reclaim pass `true`.
    async fn process_dirty(&mut self, now_please: bool) {
        self.deadline = None;
        let mut changed = false;
        for i in 0..self.roots.len() {
            let dirty = std::mem::take(&mut self.dirty[i]);
            if dirty.is_empty() {
                continue;
            }
            if dirty.root_touched && !self.roots[i].root.canonical.is_dir() {
                changed = true;
                self.mark_gone(i);
                continue;
            }
            let since = self.last_poll[i].elapsed();
            if dirty.rescan && !now_please && since < MIN_RESCAN_GAP {
                let due = Instant::now() + (MIN_RESCAN_GAP - since);
                self.deadline = Some(self.deadline.map_or(due, |d| d.min(due)));
                self.dirty[i] = dirty;
                continue;
            }
            changed = true;
            if dirty.rescan {
                self.rescan_root(i).await;
                continue;
            }
            self.remeasure(i, dirty).await;
        }
        if changed {
            self.analysis_stale = true;
            self.after_update(false).await;
        }
    }

    async fn remeasure(&mut self, i: usize, dirty: Dirty) {
        let root = self.roots[i].root.clone();
        let catalogue = self.opts.catalogue.clone();
        let items: Vec<PathBuf> = dirty.items.into_iter().collect();
        let discover: Vec<PathBuf> = dirty.discover.into_iter().collect();
        let res = tokio::task::spawn_blocking(move || {
            measure_batch(&root, &catalogue, &items, &discover)
        })
        .await;
        let measured = match res {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error = %e, "re-measure failed; rescanning the root");
                self.rescan_root(i).await;
                return;
            }
        };
        let st = &mut self.roots[i];
        for (path, _, _) in &measured {
            if let Some(rel) = st.root.relative(path).map(Path::to_path_buf) {
                st.restat_ancestors(&rel);
            }
        }
        if dirty.root_touched {
            st.restat_ancestors(Path::new("x"));
        }
        for (path, item, own) in measured {
            let is_dir = item
                .as_ref()
                .is_some_and(|it| it.measure.dirs > 0 && !it.is_symlink);
            st.apply(&path, item);
            // The own entry that the measure of a top-level dir counted becomes the baseline that
            // later changes below it are compared with (see `restat_ancestors`).
            if let (true, Some(own), Some(rel)) = (is_dir, own, st.root.relative(&path)) {
                st.dirs.insert(rel.into(), own);
            }
        }
    }

    fn mark_gone(&mut self, i: usize) {
        let st = &mut self.roots[i];
        if !st.gone {
            tracing::warn!(root = %st.root.canonical.display(), "root removed; waiting for it to come back");
        }
        st.gone = true;
        st.clear();
        st.mode = WatchMode::Off;
        st.watch_error =
            Some("the root dir was removed; watching resumes when it comes back".into());
        self.watchers[i] = None;
        self.dirty[i] = Dirty::default();
    }

    /// Roots that were removed and exist again: watch and rescan them.
    async fn check_gone_roots(&mut self) {
        for i in 0..self.roots.len() {
            let st = &self.roots[i];
            if st.gone && st.root.canonical.is_dir() {
                tracing::info!(root = %st.root.canonical.display(), "root is back; rescanning it");
                self.start_watcher(i);
                self.dirty[i] = Dirty::default();
                self.rescan_root(i).await;
                self.after_update(false).await;
            } else if !st.gone && !st.root.canonical.is_dir() {
                self.mark_gone(i);
                self.after_update(false).await;
            }
        }
    }

    async fn on_tick(&mut self) {
        self.check_gone_roots().await;
        for i in 0..self.roots.len() {
            if self.roots[i].mode == WatchMode::Polling
                && !self.paused
                && self.last_poll[i].elapsed() >= POLL_INTERVAL
            {
                self.rescan_root(i).await;
                self.after_update(false).await;
            }
        }
        if self.analysis_stale
            && self
                .analysis_at
                .map_or(true, |t| t.elapsed() >= ANALYSIS_INTERVAL)
        {
            self.refresh_analysis().await;
            self.publish();
        }
        let now = self.opts.clock.now();
        let totals = build::producer_totals(&self.roots);
        if self.recorder.sample_due(now) {
            self.recorder.sample(&self.roots, &totals, now).await;
            // A new sample is new history: a burst that ended before it now shows as growth, and
            // free space may have fallen with no event under the roots. Evaluate alerts and publish.
            self.after_update(false).await;
        }
    }

    /// After the inventory changed: sample history on a large change, evaluate alerts, publish.
    async fn after_update(&mut self, force_sample: bool) {
        let now = self.opts.clock.now();
        let totals = build::producer_totals(&self.roots);
        if force_sample || self.recorder.large_change(&totals) {
            self.recorder.sample(&self.roots, &totals, now).await;
        }
        if !self.paused {
            let space = build::volume_space(&self.roots);
            let fired = self
                .recorder
                .evaluate_alerts(&self.opts.catalogue, &self.roots, &totals, &space, now)
                .await;
            for alert in fired {
                // No receiver is fine: nobody listens yet.
                let _receivers = self.alert_tx.send(alert).unwrap_or(0);
            }
        }
        self.publish();
    }

    /// Samples the watched processes; stores, broadcasts and returns the `process-leak` alerts that
    /// fire (none while paused: the samples are still taken).
    async fn sample_processes(&mut self) -> Vec<AlertDto> {
        let fired = self.procs.sample(self.opts.clock.now()).await;
        if self.paused || fired.is_empty() {
            return Vec::new();
        }
        let fired = self.recorder.store_alerts(fired).await;
        for alert in &fired {
            // No receiver is fine: nobody listens yet.
            let _receivers = self.alert_tx.send(alert.clone()).unwrap_or(0);
        }
        self.publish();
        fired
    }

    async fn refresh_analysis(&mut self) {
        let inv = self.inventory();
        let catalogue = self.opts.catalogue.clone();
        let threshold = self.threshold;
        let protected = self.opts.protected_paths();
        let now = self.opts.clock.now();
        match tokio::task::spawn_blocking(move || {
            let analysis = Analysis::compute(&inv, &catalogue, threshold, protected, now);
            drop(inv);
            // The inventory copy and the figures' temporaries are gone: return their pages.
            crate::platform::release_free_memory();
            analysis
        })
        .await
        {
            Ok(a) => self.analysis = a,
            Err(e) => tracing::error!(error = %e, "reclaimable figures failed"),
        }
        self.analysis_stale = false;
        self.analysis_at = Some(Instant::now());
    }

    /// The claimed items as an [`Inventory`] (reclaim plans and figures never touch unattributed
    /// entries). O(items): only for plans and the periodic reclaimable figures.
    fn inventory(&self) -> Inventory {
        Inventory {
            roots: self
                .roots
                .iter()
                .map(|st| st.to_root_scan_where(|e| e.producer.is_some()))
                .collect(),
            scanned_at: self.opts.clock.now(),
        }
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
            analysis: &self.analysis,
            recorder: &self.recorder,
            now: self.opts.clock.now(),
        });
        self.snap_tx.send_replace(Arc::new(snap));
    }

    async fn command(&mut self, cmd: Command) -> Flow {
        match cmd {
            Command::Rescan(reply) => {
                for i in 0..self.roots.len() {
                    self.dirty[i] = Dirty::default();
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
            Command::Shutdown(ack) => return Flow::Stop(ack),
        }
        Flow::Continue
    }

    async fn plan(
        &mut self,
        producers: Vec<String>,
        threshold: Duration,
    ) -> Result<crate::reclaim::ReclaimPlan, MonitorError> {
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

    async fn execute(
        &mut self,
        plan_id: String,
    ) -> Result<crate::reclaim::ReclaimReport, MonitorError> {
        let plan = self
            .plans
            .remove(&plan_id)
            .ok_or(MonitorError::UnknownPlan { id: plan_id })?;
        let Some(db) = self.recorder.history() else {
            let why = self
                .recorder
                .errors()
                .iter()
                .find(|e| e.starts_with("history unavailable"))
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
            let mut history = db.lock().unwrap_or_else(|e| e.into_inner());
            crate::api::reclaim::execute_audited(
                &plan,
                &catalogue,
                &probe,
                &mut history,
                &db_path,
                now,
            )
        })
        .await
        .map_err(|e| job("reclaim", e))??;
        let mut report = audited.report;
        report.errors.extend(audited.audit_errors);
        // The watcher sees the deletions too; re-measure now so the caller's next snapshot has them.
        for p in paths {
            for (i, st) in self.roots.iter().enumerate() {
                if let Target::Item { path, .. } = target_of(&st.root, &self.opts.catalogue, &p) {
                    self.dirty[i].items.insert(path);
                }
            }
        }
        self.process_dirty(true).await;
        self.refresh_analysis().await;
        self.publish();
        Ok(report)
    }
}

fn send<T>(reply: oneshot::Sender<T>, value: T) {
    if reply.send(value).is_err() {
        tracing::debug!("command caller went away");
    }
}

fn job(what: &'static str, e: tokio::task::JoinError) -> MonitorError {
    MonitorError::Job {
        what,
        message: e.to_string(),
    }
}

/// Re-measures `items`, and finds the claimed items below each `discover` dir. Blocking.
/// Measures the items (and the claimed items found below `discover`). For a top-level entry it
/// also returns the `lstat` of its own entry as that measure counted it: the entry is stat'ed before
/// and after the measure, and measured again (up to 3 times) when the two differ, so a dir growing
/// while it is measured cannot leave a wrong baseline (a regression: a top-level dir created after
/// the first scan lost the growth between its measure and its first re-stat).
fn measure_batch(
    root: &Root,
    catalogue: &Catalogue,
    items: &[PathBuf],
    discover: &[PathBuf],
) -> Vec<(PathBuf, Option<Item>, Option<DirEntryStat>)> {
    let mut wanted: BTreeSet<PathBuf> = items.iter().cloned().collect();
    let max_depth = catalogue.max_depth(root.kind);
    for dir in discover {
        find_claimed(root, catalogue, dir, max_depth, &mut wanted);
    }
    let mut out = Vec::with_capacity(wanted.len());
    for path in wanted {
        let top_level = root
            .relative(&path)
            .is_some_and(|r| r.components().count() == 1);
        let mut tries = 0;
        loop {
            tries += 1;
            let before = top_level.then(|| DirEntryStat::of(&path)).flatten();
            let res = crate::scan::measure_item(root, catalogue, &path);
            let after = top_level.then(|| DirEntryStat::of(&path)).flatten();
            if before != after && tries < 3 {
                continue;
            }
            match res {
                Ok(item) => out.push((path, item, before.filter(|_| before == after))),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot measure item; keeping its last figures");
                }
            }
            break;
        }
    }
    out
}

/// Adds to `out` every path below `dir` (down to `max_depth` components from the root) that a rule
/// claims. Never follows symlinks.
fn find_claimed(
    root: &Root,
    catalogue: &Catalogue,
    dir: &Path,
    max_depth: usize,
    out: &mut BTreeSet<PathBuf>,
) {
    let Some(rel) = root.relative(dir) else {
        return;
    };
    if rel.components().count() >= max_depth {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            tracing::debug!(path = %dir.display(), error = %e, "cannot list a new dir");
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(rel) = root.relative(&path) else {
            continue;
        };
        if catalogue.classify(root.kind, rel).is_some() {
            out.insert(root.canonical.join(rel));
        } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
            find_claimed(root, catalogue, &path, max_depth, out);
        }
    }
}
