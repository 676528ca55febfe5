//! The monitor: one tokio task that owns the inventory, keeps it current from file-system events,
//! and publishes [`Snapshot`]s, alerts and reclaim results.
//!
//! The app, the CLI and `/metrics` talk to it through a [`MonitorHandle`]: commands go in by an
//! `mpsc` channel, snapshots come out by a `watch` channel, alerts by a `broadcast` channel. The
//! monitor never holds a UI handle. Blocking work (scans, re-measures, reclaim, SQLite) runs in
//! `spawn_blocking`.

mod actor;
mod build;
mod debounce;
mod disks;
mod drains;
mod error;
mod figures;
mod measure;
mod pace;
mod process_alerts;
pub mod provenance;
mod recorder;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::alerts::AlertsConfig;
use crate::catalogue::Catalogue;
use crate::clock::Clock;
use crate::dto::AlertDto;
use crate::dto::{ReclaimEstimate, ReclaimPreview, ReclaimResult};
use crate::process_leaks::ProcessWatchConfig;
use crate::roots::Root;
use crate::snapshot::Snapshot;
use crate::watch::WatchMsg;

pub(crate) use build::group_dto;
pub use error::MonitorError;
pub use figures::GroupFigures;
#[doc(hidden)]
pub use measure::set_after_measure_hook;

/// Default debounce between the first event of a burst and the re-measure of the dirty items.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(500);
/// Default interval between history samples.
pub const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_secs(300);
/// Least interval between polls of a root that cannot be watched by events (Linux past the inotify
/// limit; see [`crate::watch`]), and between tries to watch again a path whose watch failed. A root
/// whose poll costs more than 1% of it is polled less often ([`POLL_COST_RATIO`]).
pub const POLL_INTERVAL: Duration = Duration::from_secs(60);
/// A poll re-stats the items written within this long (their newest mtime); the others only at a
/// sweep, when that costs more than 0.1% of the time since the last one ([`SWEEP_COST_RATIO`]).
pub const POLL_RECENT: Duration = Duration::from_secs(3_600);
/// A polling root is rescanned in full at most every this many poll intervals (a poll sees items'
/// top entries, not changes deeper inside an item), or less often when the rescan costs more than
/// 0.5% of the time ([`FULL_COST_RATIO`]).
pub const POLL_FULL_EVERY: u32 = 10;
pub use pace::{FULL_COST_RATIO, POLL_COST_RATIO, SWEEP_COST_RATIO};
/// How long [`MonitorHandle::flush`] waits for its marker events before giving up.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(20);
/// While nothing changes, the snapshot's `live_at_unix_secs` is still refreshed this often: a
/// snapshot older than this (plus the 5 s tick) comes from a monitor that is stuck or gone.
pub const HEARTBEAT: Duration = Duration::from_secs(60);

/// What the monitor watches and how.
#[derive(Debug, Clone)]
pub struct MonitorOptions {
    /// The roots to watch.
    pub roots: Vec<Root>,
    /// The producer rules.
    pub catalogue: Arc<Catalogue>,
    /// The history database; `None` runs without history (no growth rates, no alerts log).
    pub db_path: Option<PathBuf>,
    /// Quiet time after the first event of a burst before the dirty items are re-measured
    /// (config `debounce_ms`, default [`DEFAULT_DEBOUNCE`]).
    pub debounce: Duration,
    /// The reclaim age threshold used for the snapshot's reclaimable figures.
    pub threshold: Duration,
    /// The alert rules.
    pub alerts: AlertsConfig,
    /// Interval between history samples (default [`DEFAULT_SAMPLE_INTERVAL`]).
    pub sample_interval: Duration,
    /// The clock for ages, rates and alerts.
    pub clock: Arc<dyn Clock>,
    /// Processes watched for a steady thread climb (config `[[process_watch]]`; default none).
    /// Sampled every `sample_interval_secs` (the shortest of the entries); a suspected leak fires
    /// a `process-leak` alert, at most once per name within the alerts' cooldown.
    pub process_watch: Vec<ProcessWatchConfig>,
    /// Paths no reclaim may reach besides the home dir and the history database's dir (which are
    /// always protected): the data and config dirs, as [`crate::api::Session::protected_paths`]
    /// gives them.
    pub protected: Vec<PathBuf>,
    /// The `[[auto_reclaim]]` rules (default none: nothing is deleted unless asked). They run only
    /// with a history database, and not while paused.
    pub auto_reclaim: Vec<crate::autoreclaim::AutoRule>,
    /// Problems found before the monitor started that it runs despite (a root that is missing, a
    /// config that cannot be read, a data dir that cannot be made): listed first in every
    /// snapshot's `errors`, so a front end started at login shows them instead of exiting.
    pub notices: Vec<String>,
    /// Claimed items handed out at a time while a reclaim preview or an auto-reclaim drain plans
    /// (a count; default 8,192): bounds the items held at once. Tests set it small.
    pub plan_chunk: usize,
    /// Shape labels of the groups of unattributed entries the snapshot leaves out (config
    /// `[groups] ignore`, [`crate::shapes::Shape::label`]); default none.
    pub ignored_shapes: Vec<String>,
    /// Counts the monitor's samples of the process table for the writers of unattributed
    /// entries (a test's or a benchmark's reading; the monitor only adds to it).
    #[doc(hidden)]
    pub process_samples: Arc<std::sync::atomic::AtomicU64>,
}

impl MonitorOptions {
    /// Options with the defaults: 500 ms debounce, a 3-day threshold, default alerts, 5-minute
    /// samples, the system clock, no history database, no process watch.
    pub fn new(roots: Vec<Root>, catalogue: Arc<Catalogue>) -> MonitorOptions {
        MonitorOptions {
            roots,
            catalogue,
            db_path: None,
            debounce: DEFAULT_DEBOUNCE,
            threshold: Duration::from_secs(3 * 24 * 3600),
            alerts: AlertsConfig::default(),
            sample_interval: DEFAULT_SAMPLE_INTERVAL,
            clock: Arc::new(crate::clock::SystemClock),
            process_watch: Vec::new(),
            protected: Vec::new(),
            auto_reclaim: Vec::new(),
            notices: Vec::new(),
            plan_chunk: figures::CHUNK,
            ignored_shapes: Vec::new(),
            process_samples: Arc::default(),
        }
    }

    /// Everything a reclaim must keep away from: [`MonitorOptions::protected`] and the dir of the
    /// history database (absolute). The engine adds the home dir.
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        let db_dir = self
            .db_path
            .as_deref()
            .and_then(std::path::Path::parent)
            .filter(|d| !d.as_os_str().is_empty())
            .and_then(|d| std::path::absolute(d).ok());
        let mut out = self.protected.clone();
        out.extend(db_dir);
        out
    }
}

/// A command to the monitor task.
pub(crate) enum Command {
    Rescan(oneshot::Sender<Result<(), MonitorError>>),
    SetPaused(bool, oneshot::Sender<Result<(), MonitorError>>),
    SetThreshold(Duration, oneshot::Sender<Result<(), MonitorError>>),
    SetAlerts(Box<AlertsConfig>, oneshot::Sender<Result<(), MonitorError>>),
    PlanReclaim {
        producers: Vec<String>,
        threshold: Duration,
        reply: oneshot::Sender<Result<ReclaimPreview, MonitorError>>,
    },
    EstimateReclaim {
        producers: Vec<String>,
        threshold: Duration,
        reply: oneshot::Sender<Result<ReclaimEstimate, MonitorError>>,
    },
    ExecuteReclaim {
        plan_id: String,
        reply: oneshot::Sender<Result<ReclaimResult, MonitorError>>,
    },
    Flush(oneshot::Sender<Result<(), MonitorError>>),
    SetCatalogue(Arc<Catalogue>, oneshot::Sender<Result<(), MonitorError>>),
    SetIgnoredShapes(Vec<String>, oneshot::Sender<Result<(), MonitorError>>),
    Group {
        root: String,
        label: String,
        reply: oneshot::Sender<Result<Option<GroupFigures>, MonitorError>>,
    },
    SampleProcesses(oneshot::Sender<Result<Vec<AlertDto>, MonitorError>>),
    CheckAutoReclaim(drains::Waiter),
    Shutdown(oneshot::Sender<()>),
    /// Test seam: the monitor task panics (as an overflow once made it).
    Panic,
}

/// A handle on a running monitor; cheap to clone. The monitor stops at [`MonitorHandle::shutdown`]
/// or when every handle is dropped.
#[derive(Clone)]
pub struct MonitorHandle {
    commands: mpsc::Sender<Command>,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    alerts: broadcast::Sender<AlertDto>,
    events: mpsc::UnboundedSender<WatchMsg>,
}

impl std::fmt::Debug for MonitorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorHandle").finish_non_exhaustive()
    }
}

/// Starts the monitor: watches every root, scans them (the snapshot says `scanning` meanwhile),
/// then keeps the inventory current. Must be called inside a tokio runtime.
///
/// A panic of the monitor task is not silent: a last snapshot is published with
/// [`Snapshot::stopped`] set and the panic among its errors, a `monitor-stopped` alert fires, and
/// every command answers [`MonitorError::Stopped`]; [`MonitorHandle::stopped`] resolves then (the
/// `watch` command exits non-zero on it, so launchd starts it again).
///
/// # Errors
/// [`MonitorError::NoRuntime`] outside a tokio runtime. A root that cannot be watched is not an
/// error: it is rescanned periodically and the snapshot says why.
pub fn spawn(mut opts: MonitorOptions) -> Result<MonitorHandle, MonitorError> {
    // An item belongs to the innermost root holding it (`roots::mark_nested`).
    crate::roots::mark_nested(&mut opts.roots);
    let rt = tokio::runtime::Handle::try_current().map_err(|_| MonitorError::NoRuntime)?;
    let (cmd_tx, cmd_rx) = mpsc::channel(64);
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    let (alert_tx, _) = broadcast::channel(256);
    let initial = Arc::new(build::empty_snapshot(&opts));
    let (snap_tx, snap_rx) = watch::channel(initial);
    let last_words = snap_tx.clone();
    let actor = actor::Actor::new(opts, ev_tx.clone(), snap_tx, alert_tx.clone());
    let task = rt.spawn(actor.run(cmd_rx, ev_rx));
    rt.spawn(supervise(task, last_words, alert_tx.clone()));
    Ok(MonitorHandle {
        commands: cmd_tx,
        snapshots: snap_rx,
        alerts: alert_tx,
        events: ev_tx,
    })
}

/// Waits for the monitor task; when it panicked, publishes its last snapshot marked stopped (the
/// figures frozen, the panic among the errors) and fires a `monitor-stopped` alert.
async fn supervise(
    task: tokio::task::JoinHandle<()>,
    snapshots: watch::Sender<Arc<Snapshot>>,
    alerts: broadcast::Sender<AlertDto>,
) {
    let Err(e) = task.await else {
        return;
    };
    if !e.is_panic() {
        // Cancelled: the runtime is shutting down.
        return;
    }
    let payload = e.into_panic();
    let why = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    let line = format!(
        "the monitor stopped on a panic ({why}): its figures are frozen; restart cachewatch"
    );
    tracing::error!("{line}");
    let now = crate::units::unix_secs(std::time::SystemTime::now());
    snapshots.send_modify(|s| {
        let s = Arc::make_mut(s);
        s.stopped = Some(line.clone());
        s.errors.push(line.clone());
    });
    let alert = AlertDto::new(
        now,
        crate::dto::AlertRule::MonitorStopped,
        None,
        "CacheWatch monitor stopped",
        line,
    );
    // No receiver is fine: nobody listens.
    let _receivers = alerts.send(alert).unwrap_or(0);
}

impl MonitorHandle {
    /// Resolves when the monitor task has stopped on a panic, with the line saying so
    /// ([`Snapshot::stopped`]); pending while it runs, and for ever after a clean shutdown.
    pub async fn stopped(&self) -> String {
        let mut rx = self.snapshots.clone();
        let why = match rx.wait_for(|s| s.stopped.is_some()).await {
            Ok(s) => s.stopped.clone(),
            Err(_) => None,
        };
        match why {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }

    /// Test seam: makes the monitor task panic, as a bug would.
    #[doc(hidden)]
    pub async fn inject_panic(&self) {
        // Gone already: nothing to do.
        let _sent = self.commands.send(Command::Panic).await;
    }

    /// The latest snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.borrow().clone()
    }

    /// A receiver that sees every new snapshot (the latest one marked as seen or not, as `watch`
    /// does).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.snapshots.clone()
    }

    /// A receiver of the alerts that fire from now on.
    pub fn alerts(&self) -> broadcast::Receiver<AlertDto> {
        self.alerts.subscribe()
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, MonitorError>>) -> Command,
    ) -> Result<T, MonitorError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(make(tx))
            .await
            .map_err(|_| MonitorError::Stopped)?;
        rx.await.map_err(|_| MonitorError::Stopped)?
    }

    /// Rescans every root now; returns when the new snapshot is published.
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone; [`MonitorError::Job`] when a scan panicked.
    pub async fn rescan(&self) -> Result<(), MonitorError> {
        self.ask(Command::Rescan).await
    }

    /// Pauses (no events processed, no alerts, no auto-reclaim rules: a drain in progress stops
    /// before its next batch; events are remembered) or resumes (the remembered changes are
    /// processed, the rules' triggers checked again).
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    pub async fn set_paused(&self, paused: bool) -> Result<(), MonitorError> {
        self.ask(|tx| Command::SetPaused(paused, tx)).await
    }

    /// Sets the reclaim age threshold the snapshot's reclaimable figures use; returns when the
    /// snapshot with the new figures is published.
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    pub async fn set_threshold(&self, threshold: Duration) -> Result<(), MonitorError> {
        self.ask(|tx| Command::SetThreshold(threshold, tx)).await
    }

    /// Applies new alert limits (the settings were saved): alerts are evaluated with them from the
    /// next update on; cooldowns already running are kept.
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    pub async fn set_alerts(&self, alerts: AlertsConfig) -> Result<(), MonitorError> {
        self.ask(|tx| Command::SetAlerts(Box::new(alerts), tx))
            .await
    }

    /// Plans a reclaim of `producers` (empty: every `reclaim = "auto"` producer) for items older
    /// than `threshold`, on the current inventory, in chunks (memory flat in the number of
    /// items: the planned items go to a spool, see [`crate::reclaim::PlanSink`]). The plan is kept
    /// by its id for [`MonitorHandle::execute_reclaim`] (the last few plans are kept); the preview
    /// returned is bounded: sums, kept counts by reason, the largest items.
    ///
    /// # Errors
    /// [`MonitorError::UnknownProducer`] for an id the catalogue does not know,
    /// [`MonitorError::PlanSpool`] when the plan's temp file fails, [`MonitorError::Stopped`],
    /// [`MonitorError::Job`].
    pub async fn plan_reclaim(
        &self,
        producers: Vec<String>,
        threshold: Duration,
    ) -> Result<ReclaimPreview, MonitorError> {
        self.ask(|reply| Command::PlanReclaim {
            producers,
            threshold,
            reply,
        })
        .await
    }

    /// What a reclaim of `producers` (empty: every `reclaim = "auto"` producer) at `threshold`
    /// would take now, from the per-producer age histograms of the last figures (no walk over
    /// the items, no plan kept): for a threshold control that moves often. Exact to the bucket
    /// width (see [`ReclaimEstimate`]).
    ///
    /// # Errors
    /// [`MonitorError::UnknownProducer`] for an id the catalogue does not know,
    /// [`MonitorError::Stopped`].
    pub async fn estimate_reclaim(
        &self,
        producers: Vec<String>,
        threshold: Duration,
    ) -> Result<ReclaimEstimate, MonitorError> {
        self.ask(|reply| Command::EstimateReclaim {
            producers,
            threshold,
            reply,
        })
        .await
    }

    /// Executes the kept plan `plan_id` through
    /// [`crate::audit::execute_streamed_batches`]: its items are read back batch by batch,
    /// every audit row is written before its deletion, the engine re-checks every item before
    /// deleting it, then re-measures what changed and publishes a snapshot. Audit outcomes that
    /// could not be written afterwards are in the result's errors. The result counts everything
    /// and lists the first items of each kind.
    ///
    /// # Errors
    /// [`MonitorError::UnknownPlan`] for an id not returned by `plan_reclaim` (or already executed),
    /// [`MonitorError::NoAudit`] without a history database, [`MonitorError::Audit`] when the audit
    /// rows cannot be written (nothing is deleted then), [`MonitorError::Stopped`],
    /// [`MonitorError::Job`].
    pub async fn execute_reclaim(&self, plan_id: String) -> Result<ReclaimResult, MonitorError> {
        self.ask(|reply| Command::ExecuteReclaim { plan_id, reply })
            .await
    }

    /// Waits until every file-system event delivered before this call is processed and the
    /// resulting snapshot is published (it writes a marker file into each evented root and waits
    /// for its event, then re-measures the dirty items without waiting for the debounce).
    ///
    /// # Errors
    /// [`MonitorError::FlushTimeout`] when a root's marker event does not come within
    /// [`FLUSH_TIMEOUT`]; [`MonitorError::Stopped`].
    pub async fn flush(&self) -> Result<(), MonitorError> {
        self.ask(Command::Flush).await
    }

    /// Samples the watched processes now (as the process-watch interval does) and returns the
    /// `process-leak` alerts this sample fired (they are also stored and broadcast).
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    pub async fn sample_processes(&self) -> Result<Vec<AlertDto>, MonitorError> {
        self.ask(Command::SampleProcesses).await
    }

    /// Checks the auto-reclaim triggers now (at the clock's time) and, when a rule is due, runs
    /// it and returns its run once it ended; when a run is already in progress, returns that one
    /// when it ends. `None` when no rule is due (or the monitor is paused or has no rules).
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    pub async fn check_auto_reclaim(
        &self,
    ) -> Result<Option<crate::autoreclaim::AutoRun>, MonitorError> {
        self.ask(Command::CheckAutoReclaim).await
    }

    /// Takes `catalogue` as the rules from now on (a rule was added to the config) and rescans
    /// every root with it; returns when the new snapshot is published.
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    pub async fn set_catalogue(&self, catalogue: Arc<Catalogue>) -> Result<(), MonitorError> {
        self.ask(|tx| Command::SetCatalogue(catalogue, tx)).await
    }

    /// Hides the groups of unattributed entries whose shape label is in `labels` (config
    /// `[groups] ignore`) from the snapshot from now on; returns when it is published.
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    pub async fn set_ignored_shapes(&self, labels: Vec<String>) -> Result<(), MonitorError> {
        self.ask(|tx| Command::SetIgnoredShapes(labels, tx)).await
    }

    /// The group of the last figures in root `root` (its path as the snapshot shows it) whose
    /// shape label is `label`, with its writers; `None` when there is none (it is hidden, gone,
    /// or not among the groups shown).
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    pub async fn group(
        &self,
        root: String,
        label: String,
    ) -> Result<Option<GroupFigures>, MonitorError> {
        self.ask(|reply| Command::Group { root, label, reply })
            .await
    }

    /// Stops the monitor and waits for its task to finish its current step.
    pub async fn shutdown(&self) {
        let (tx, rx) = oneshot::channel();
        if self.commands.send(Command::Shutdown(tx)).await.is_ok() && rx.await.is_err() {
            tracing::debug!("monitor stopped before acknowledging shutdown");
        }
    }

    /// Test seam: delivers `event` as if root number `root` (index in
    /// [`MonitorOptions::roots`]) had reported it, e.g. a rescan flag or a watch-limit error.
    ///
    /// # Errors
    /// [`MonitorError::Stopped`] when the monitor is gone.
    #[doc(hidden)]
    pub fn inject_watch_event(
        &self,
        root: usize,
        event: notify::Result<notify::Event>,
    ) -> Result<(), MonitorError> {
        self.events
            .send(WatchMsg { root, event })
            .map_err(|_| MonitorError::Stopped)
    }
}
