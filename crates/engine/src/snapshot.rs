//! The `Snapshot`: the whole state the monitor publishes, which the app, the CLI (`status --json`)
//! and `/metrics` read. It gathers the shapes of [`crate::dto`] with the features' own DTOs (crash
//! groups, growth outside the roots, auto-reclaim); the shapes are re-exported here, so
//! `cachewatch::snapshot::AlertDto` still names them.

use serde::{Deserialize, Serialize};

pub use crate::dto::{
    AlertDto, ItemDto, MonitorState, ObservedGrowth, ProducerDto, RootDto, RootStatus,
    ScanProgress, SuggestedReclaim, UnattributedDto, UnattributedGroupDto, WatchMode, WriterDto,
    UNREADABLE_LISTED,
};

/// The whole state the monitor publishes.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// When it was made, Unix seconds.
    pub taken_at_unix_secs: u64,
    /// What the monitor is doing.
    pub state: MonitorState,
    /// Progress while scanning.
    pub scan_progress: ScanProgress,
    /// The current reclaim age threshold, seconds.
    pub threshold_secs: u64,
    /// Allocated bytes of all roots.
    pub total_allocated_bytes: u64,
    /// Apparent bytes of all roots.
    pub total_apparent_bytes: u64,
    /// Seconds until the fullest watched volume is full at the total's growth rate; `None` unless
    /// that rate held steady over at least an hour (`history::steady_eta`).
    pub disk_full_eta_secs: Option<u64>,
    /// The span, seconds, the ETA's rate was observed over (steady); `None` with no ETA.
    #[serde(default)]
    pub disk_full_eta_span_secs: Option<u64>,
    /// Growth of all roots over the span observed (at most the last day), reclaims kept out.
    #[serde(default)]
    pub total_growth: Option<ObservedGrowth>,
    /// Growth outside the watched roots, per volume holding one: free-space fall minus the roots'
    /// growth over the last `unexplained_growth_window` of samples (`outside_growth`); `notable`
    /// ones are worth saying. Empty without history. The gauge
    /// `cachewatch_unexplained_growth_bytes{mount}` is each entry's `unexplained_bytes`.
    #[serde(default)]
    pub unexplained_growth: Vec<crate::outside_growth::Unexplained>,
    /// Per root.
    pub roots: Vec<RootDto>,
    /// Per producer, largest allocated first.
    pub producers: Vec<ProducerDto>,
    /// Groups of unattributed entries by name shape (unknown producers), largest first, at
    /// most 20; computed with the reclaim figures (empty until then).
    #[serde(default)]
    pub unattributed_groups: Vec<UnattributedGroupDto>,
    /// Groups left out of `unattributed_groups` for their shape label being ignored.
    #[serde(default)]
    pub hidden_groups: u64,
    /// The shape labels ignored (config `[groups] ignore`), for the window to list and undo.
    #[serde(default)]
    pub ignored_shapes: Vec<String>,
    /// Top unattributed entries, largest first (at most 20).
    pub unattributed: Vec<UnattributedDto>,
    /// Recent alerts, newest first (at most 20).
    pub alerts: Vec<AlertDto>,
    /// Crash reports grouped by process and signature, newest report first.
    #[serde(default)]
    pub crash_groups: Vec<crate::crash::CrashGroupDto>,
    /// Problems worth showing (history DB unavailable, a root not watched, ...).
    pub errors: Vec<String>,
    /// Auto-reclaim: rules, last runs, a drain's progress, totals since start.
    #[serde(default)]
    pub auto_reclaim: crate::autoreclaim::AutoReclaimDto,
    /// When the monitor last showed it was running, Unix seconds of the system clock: set on
    /// every publish and refreshed at least every minute while nothing changes
    /// (`monitor::HEARTBEAT`). Now minus this is the snapshot's age: a window shows figures older
    /// than a few minutes as stale, `/metrics` says it as `cachewatch_snapshot_age_seconds`.
    #[serde(default)]
    pub live_at_unix_secs: u64,
    /// Why the monitor task stopped, when it stopped on a panic: this snapshot is then its last and
    /// its figures are frozen (`cachewatch watch` exits non-zero so launchd restarts it; the app
    /// says to restart it). `None` while it runs.
    #[serde(default)]
    pub stopped: Option<String>,
}
