//! The monitor's link to the history database and the alert rules: samples at a fixed interval and
//! on large changes, growth rates and chart series for the snapshot ([`samples`]), alerts evaluated
//! after each update and stored ([`alerts`]), whether the database is in use ([`availability`]),
//! and the problem and notice lines of the snapshot ([`notices`]).
//!
//! A locked database is a passing condition: history is skipped for
//! [`LOCKED_RETRY`](availability::LOCKED_RETRY) and tried again. Any other failure (a full disk, a
//! corrupt file) closes it and opens it again with backoff, reported in the snapshot's errors and
//! by a `history-unavailable` alert meanwhile ([`availability`]). The file is never deleted.

mod alerts;
mod availability;
mod error;
mod io;
mod notices;
mod samples;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::alerts::Alerter;
use crate::dto::AlertDto;
use crate::history::{Growth, History};

use super::MonitorOptions;
pub use error::RecordError;
use notices::Notices;
pub use samples::GrowthFigures;

/// The writers the history database remembers, by group key ([`crate::history::group_key`]).
pub type StoredWriters = BTreeMap<Vec<u8>, Vec<crate::history::StoredWriter>>;

/// Alerts kept for the snapshot.
const RECENT_ALERTS: usize = 20;

/// History and alerts, as the monitor uses them.
#[derive(Debug)]
pub struct Recorder {
    /// The open database; `None` without history (for good, or until a locked open is retried).
    db: Option<Arc<Mutex<History>>>,
    /// The database file, for retrying an open that found it locked.
    db_path: Option<PathBuf>,
    /// The database was locked, or failed and was closed: history is skipped until then (clock
    /// time), then tried again.
    retry_at: Option<SystemTime>,
    /// Failed opens in a row since the database was last open (the backoff).
    failures: u32,
    /// Alerts raised by the history link itself (`history-unavailable`), fired with the next
    /// evaluation.
    raised: Vec<AlertDto>,
    /// Why there is no database (the snapshot line), for a reclaim refused without audit rows.
    unavailable: Option<String>,
    notices: Notices,
    alerts: Vec<AlertDto>,
    growth: BTreeMap<String, GrowthFigures>,
    charts: BTreeMap<String, Vec<(u64, u64)>>,
    total_growth: Option<Growth>,
    total_recent: Option<Growth>,
    sample_interval: Duration,
    last_sample_at: Option<SystemTime>,
    last_sampled: BTreeMap<String, (u64, u64)>,
    alerter: Alerter,
    alert_growth: BTreeMap<String, Growth>,
    /// Per group of unattributed entries (by its stored key): what the monitor saw of it, oldest
    /// first, for its growth: the group's samples read back from the history database at each
    /// sample (so a restart does not start it over), and a note a minute in between.
    group_trail: BTreeMap<Vec<u8>, std::collections::VecDeque<(SystemTime, u64, u64)>>,
    /// The groups' `(allocated bytes, items)` at the last sample, for the large-change rule.
    last_group_sampled: BTreeMap<Vec<u8>, (u64, u64)>,
    /// The writers the history database remembers, by group key, as read at the last sample.
    stored_writers: Arc<StoredWriters>,
    crashes: crate::crash::CrashWatch,
    /// Growth outside the roots per volume, from the last sample (`crate::outside_growth`).
    unexplained: Vec<crate::outside_growth::Unexplained>,
}

impl Recorder {
    /// Opens the history database of `opts` (if any); a failure is kept as an error line (a locked
    /// database is opened again later, see [`Recorder::reopen_due`]).
    pub fn new(opts: &MonitorOptions) -> Recorder {
        let (db, alerts, failed) = match opts.db_path.as_deref().map(io::open) {
            None => (None, Vec::new(), None),
            Some(Ok((db, alerts))) => (Some(Arc::new(Mutex::new(db))), alerts, None),
            Some(Err(e)) => (None, Vec::new(), Some(e)),
        };
        let mut alerter = Alerter::new(opts.alerts.clone());
        // A restart does not fire again what fired within the cooldown.
        alerter.restore(&alerts);
        let mut recorder = Recorder {
            crashes: crate::crash::CrashWatch::new(&opts.roots, opts.alerts.crash_loop.clone()),
            alerter,
            alert_growth: BTreeMap::new(),
            group_trail: BTreeMap::new(),
            last_group_sampled: BTreeMap::new(),
            stored_writers: Arc::new(BTreeMap::new()),
            unexplained: Vec::new(),
            db,
            db_path: opts.db_path.clone(),
            retry_at: None,
            failures: 0,
            raised: Vec::new(),
            unavailable: None,
            notices: Notices::default(),
            alerts,
            growth: BTreeMap::new(),
            charts: BTreeMap::new(),
            total_growth: None,
            total_recent: None,
            sample_interval: opts.sample_interval,
            last_sample_at: None,
            last_sampled: BTreeMap::new(),
        };
        if let Some(e) = failed {
            recorder.open_failed(RecordError::from(e), opts.clock.now());
        }
        recorder
    }

    /// Problems and notices for the snapshot.
    pub fn errors(&self) -> &[String] {
        self.notices.lines()
    }

    /// Adds a problem for the snapshot.
    pub fn error(&mut self, e: String) {
        self.notices.push(e);
    }

    /// Removes the problem lines starting with `prefix` (the condition is over).
    pub fn forget_error(&mut self, prefix: &str) {
        self.notices.forget(prefix);
    }

    /// The writers the history database remembers, by group key, as read at the last sample
    /// (empty before the first, and without history).
    pub fn stored_writers(&self) -> Arc<StoredWriters> {
        self.stored_writers.clone()
    }

    /// Recent alerts, newest first.
    pub fn recent_alerts(&self) -> Vec<AlertDto> {
        self.alerts.clone()
    }
}
