//! The shapes the engine sends out: serde (and, with the feature `ts`, ts-rs) DTOs with no logic.
//! The bottom floor of the engine: it imports no other engine module, and every module may use it
//! (an alert's [`AlertDto`], a root's [`WatchMode`], a reclaim's [`ReclaimPreview`]).
//! [`crate::snapshot::Snapshot`] gathers them with the features' own DTOs.
//!
//! Times at this edge are Unix seconds, sizes bytes; the unit is in every name. The UI's types are
//! generated from these (feature `ts`, `cargo test -p cachewatch-app --lib bindings` writes
//! `ui/src/bindings/`).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use base64::Engine as _;
use cachewatch_core::catalogue::{ProducerKind, ReclaimMode};
use cachewatch_core::roots::RootKind;
use serde::{Deserialize, Serialize};

mod reclaim;
mod scan;

pub use reclaim::{
    KeptGroupDto, PreviewProducer, ReclaimEstimate, ReclaimPreview, ReclaimResult, KEPT_EXAMPLES,
    PREVIEW_ITEMS, RESULT_ITEMS,
};
pub use scan::{ScanErrorDto, ScanReportDto};

/// A path that is not UTF-8, as the JSON carries it: its exact bytes in standard base64 (with
/// padding), beside the path's lossy text (each invalid byte U+FFFD), in a sibling field
/// `<field>_bytes`; `None` for a UTF-8 path, whose text is exact. Decoded, the bytes name the
/// entry on disk: a script acts on them, never on the lossy text.
pub fn path_bytes(p: &Path) -> Option<String> {
    let bytes = p.as_os_str().as_bytes();
    std::str::from_utf8(bytes)
        .is_err()
        .then(|| base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// What the monitor is doing.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MonitorState {
    /// The first (or a re) scan is running.
    Scanning,
    /// Watching for events.
    Watching,
    /// Paused by the user: no events processed, no alerts.
    Paused,
}

/// Progress of a running scan, as the snapshot sends it (the live counters a scan updates are
/// [`cachewatch_core::scan::ScanProgress`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "ScanProgress"))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanProgressDto {
    /// Roots finished.
    pub roots_done: u32,
    /// Roots to scan.
    pub roots_total: u32,
    /// Entries (files, dirs and symlinks) listed so far by this scan, over every root scanned so
    /// far, the one being scanned included (updated about once a second while a root is
    /// scanned).
    #[serde(default)]
    pub entries_done: u64,
}

/// How a root is being watched.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatchMode {
    /// Live file-system events (FSEvents, inotify).
    Events,
    /// Polled every 60 s: each dir between the root and its items and each item written in the
    /// last hour re-stat'ed (every item at a sweep: each poll on a small root, every 30-60
    /// minutes at 700,000 items), only what moved re-measured, a full rescan every tenth poll or
    /// less often (Linux ran out of inotify watches; macOS FSEvents has no such limit).
    Polling,
    /// Not watched: an error (see `watch_error`), or a one-shot scan (`cachewatch scan`), which
    /// watches nothing.
    Off,
}

/// Whether a root's path still leads to the dir the monitor watches. A root that is not `ok` has
/// its figures zeroed (nothing is counted through a link or at a path that is not there), is not
/// watched, and is rescanned when a real dir is at its path again.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RootStatus {
    /// A real dir (no symbolic link on its path).
    #[default]
    Ok,
    /// Nothing at the path (removed or moved away), or a dir on its way cannot be searched.
    Missing,
    /// The root, or a dir on its path, is now a symbolic link: never followed.
    ReplacedByLink,
    /// Something other than a dir is at the path (a file, a socket, ...).
    NotADir,
}

impl RootStatus {
    /// The kebab-case word serde writes (`ok`, `missing`, `replaced-by-link`, `not-a-dir`).
    pub fn as_str(self) -> &'static str {
        match self {
            RootStatus::Ok => "ok",
            RootStatus::Missing => "missing",
            RootStatus::ReplacedByLink => "replaced-by-link",
            RootStatus::NotADir => "not-a-dir",
        }
    }
}

/// At most this many unreadable paths are listed per root in a snapshot.
pub const UNREADABLE_LISTED: usize = 20;

/// One root in a snapshot.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootDto {
    /// The root kind (`temp`, `cache`, `container-temp`, ...).
    pub kind: RootKind,
    /// The path as given (lossy text when not UTF-8).
    pub path: String,
    /// Only when `path` is not UTF-8: its exact bytes in base64 ([`path_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The path with symlinks resolved (lossy text when not UTF-8).
    #[serde(default)]
    pub canonical: String,
    /// Only when `canonical` is not UTF-8: its exact bytes in base64 ([`path_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_bytes: Option<String>,
    /// For a `container-temp` root: the container's bundle id (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// Whether the path still leads to the real dir watched; when not, the figures below are
    /// zero and `watch_error` says what happened.
    #[serde(default)]
    pub state: RootStatus,
    /// Allocated bytes of the whole root (as `du -k`).
    pub allocated_bytes: u64,
    /// Apparent bytes (as `du -b`).
    pub apparent_bytes: u64,
    /// Items (claimed + unattributed).
    pub items: u64,
    /// Non-directory entries (a hard-linked inode counted once).
    #[serde(default)]
    pub files: u64,
    /// Directories, the root included.
    #[serde(default)]
    pub dirs: u64,
    /// Entries that vanished between their listing and their `lstat` in a one-shot scan
    /// (`cachewatch scan`); 0 in a snapshot, whose scans follow events instead.
    #[serde(default)]
    pub vanished: u64,
    /// Free bytes on the root's volume, as the system shows them (on macOS Finder's figure,
    /// purgeable space included); `None` when unknown.
    pub free_bytes: Option<u64>,
    /// Part of `free_bytes` that is purgeable (the system deletes it when space is needed) rather
    /// than free now: macOS (APFS) only, 0 elsewhere; `None` when unknown.
    #[serde(default)]
    pub purgeable_bytes: Option<u64>,
    /// Total bytes of the root's volume; `None` when unknown.
    pub volume_bytes: Option<u64>,
    /// Mount point of the root's volume (longest mount-point prefix of its canonical path);
    /// `None` when unknown.
    #[serde(default)]
    pub mount: Option<String>,
    /// How it is watched.
    pub watch_mode: WatchMode,
    /// Why it is not watched by events, if so.
    pub watch_error: Option<String>,
    /// Unreadable paths counted in the last scan.
    pub unreadable: u64,
    /// The unreadable paths of the last scan, at most [`UNREADABLE_LISTED`] of them (`unreadable`
    /// counts them all).
    #[serde(default)]
    pub unreadable_paths: Vec<String>,
    /// Paths below an evented root that are not watched by events (their watch failed, e.g. an
    /// unreadable dir): the rest of the root stays watched and these are tried again every 60 s.
    /// Empty when the whole root is watched, or polls (`watch_mode`).
    #[serde(default)]
    pub unwatched_paths: Vec<String>,
    /// Full rescans of this root since the monitor started, the first scan excluded (rescan
    /// flags, event queue overflows, watcher errors, polling, a root that came back).
    #[serde(default)]
    pub rescans: u64,
}

/// One of a producer's items, for the expanded row.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemDto {
    /// Absolute path.
    pub path: String,
    /// Allocated bytes.
    pub allocated_bytes: u64,
    /// Seconds since the newest mtime in the item.
    pub age_secs: u64,
}

/// How a series changed over the span the history actually observed (at most a day): say it as
/// "+105 MiB in the last 3 min", never extrapolated to a day. Reclaims are kept out (a reclaim is
/// not negative growth).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedGrowth {
    /// Change of allocated bytes over the span, reclaimed bytes added back.
    pub bytes: i64,
    /// Change of the item count over the span, reclaimed items added back.
    pub items: i64,
    /// The span observed, seconds (from the first sample in the window to the newest).
    pub span_secs: u64,
}

/// One producer in a snapshot.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProducerDto {
    /// Rule id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// `leak`, `cache`, `report` or `system`.
    pub kind: ProducerKind,
    /// `auto`, `manual` or `never`.
    pub reclaim: ReclaimMode,
    /// True when reclaim may delete its items at all (its rule is not `reclaim = "never"` nor
    /// `kind = "system"`, and is in the catalogue): the window offers a reclaim only then.
    #[serde(default)]
    pub reclaimable: bool,
    /// Allocated bytes of its items.
    pub allocated_bytes: u64,
    /// Apparent bytes of its items.
    pub apparent_bytes: u64,
    /// Number of items.
    pub items: u64,
    /// Number of files inside its items.
    pub files: u64,
    /// Growth over the last hour, bytes (negative when it shrank); `None` without history.
    pub growth_bytes_per_hour: Option<i64>,
    /// Growth over the last day, bytes; `None` without history.
    pub growth_bytes_per_day: Option<i64>,
    /// Growth over the last day, items; `None` without history.
    pub growth_items_per_day: Option<i64>,
    /// Growth over the span observed (at most the last day), reclaims kept out; `None` without
    /// two samples. What the UI shows.
    #[serde(default)]
    pub growth: Option<ObservedGrowth>,
    /// Bytes of items whose owner pid (in the name) is dead or reused, by the owner rule reclaim
    /// applies (`cachewatch_core::owner`); items whose name yields no pid are never counted.
    pub orphan_bytes: u64,
    /// Bytes a reclaim at the current threshold would free.
    pub reclaimable_bytes: u64,
    /// Items a reclaim at the current threshold would delete.
    pub reclaimable_items: u64,
    /// Upstream report URLs.
    pub evidence: Vec<String>,
    /// What the catalogue says about it.
    pub notes: String,
    /// The tool's own clean-up command when the tool manages this cache (`brew cleanup`): the
    /// window offers it before deleting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// Largest items, at most 10.
    pub top_items: Vec<ItemDto>,
    /// Samples for the chart: `[unix_secs, allocated_bytes]`, oldest first, last 7 days.
    pub history: Vec<(u64, u64)>,
}

/// An unattributed top-level entry.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnattributedDto {
    /// Absolute path (lossy text when not UTF-8).
    pub path: String,
    /// Only when `path` is not UTF-8: its exact bytes in base64 ([`path_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// Root kind.
    pub root_kind: RootKind,
    /// Allocated bytes (outside claimed items).
    pub allocated_bytes: u64,
    /// Apparent bytes.
    pub apparent_bytes: u64,
}

/// A group of unattributed top-level entries of one root sharing a name shape: a producer no
/// rule knows yet ([`crate::shapes`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnattributedGroupDto {
    /// The shape (`tmp<rand8>/`, `.<hex16>-<digits8>.dylib`).
    pub shape: String,
    /// The shape's label: the shape with a backslash written `\\`, so it names the group's bytes
    /// without doubt ([`crate::shapes::Shape::label`]); the group's key, with `root`, and
    /// what `[groups] ignore` lists.
    #[serde(default)]
    pub label: String,
    /// Root kind.
    pub root_kind: RootKind,
    /// The root's path (canonical; lossy text when not UTF-8).
    pub root: String,
    /// Only when `root` is not UTF-8: its exact bytes in base64 ([`path_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_bytes: Option<String>,
    /// Number of members.
    pub items: u64,
    /// Allocated bytes of the members.
    pub allocated_bytes: u64,
    /// Apparent bytes of the members.
    pub apparent_bytes: u64,
    /// The oldest of the members' newest mtimes, unix seconds.
    pub oldest_mtime: Option<u64>,
    /// The newest mtime of any member, unix seconds.
    pub newest_mtime: Option<u64>,
    /// Up to three member names.
    pub examples: Vec<String>,
    /// Processes holding a file open (or mapped, or their working dir) inside a member when the
    /// figures were last computed.
    pub writers: Vec<WriterDto>,
    /// What names the process that wrote the members: each kind of evidence found, with how
    /// many members agree (strongest first; empty when nothing names a writer).
    #[serde(default)]
    pub evidence: Vec<EvidenceDto>,
    /// Every writer the evidence names has exited while the members remain: a confirmed leak
    /// of `allocated_bytes` (false while a writer runs, or none is known).
    #[serde(default)]
    pub confirmed_leak: bool,
    /// The key the group's history is stored under, as hex: what
    /// [`crate::api::group_history`] takes to chart its growth.
    #[serde(default)]
    pub history_key: String,
}

/// The kinds of evidence that name a group's writer.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceKindDto {
    /// A numeric run of the members' names is the pid of a process alive when each was born.
    PidInName,
    /// The members were born within seconds after starts of one executable (more often than at
    /// shifted control instants).
    CreatedAtLaunch,
    /// The process held a file open (or mapped, or its working dir) inside a member when the
    /// group was last looked at.
    Held,
    /// A bundle id (`com.example.App`) in the members' paths.
    InPath,
}

/// One piece of evidence naming the writer of a group.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceDto {
    /// What kind of evidence.
    pub kind: EvidenceKindDto,
    /// The writer's executable name (the bundle id for `in-path`).
    pub name: String,
    /// The writer's executable path, where known.
    pub exe: Option<String>,
    /// The writer's app bundle id, where known.
    pub app: Option<String>,
    /// Members that agree (for `held`: processes holding a member).
    pub agree: u64,
    /// Members looked at (at most a few thousand of a large group; for `held`, the group's
    /// members).
    pub total: u64,
    /// For `pid-in-name`: members whose writer has exited, or that no seen process explains
    /// (orphans); `None` for the other kinds.
    pub orphans: Option<u64>,
    /// True when a writer this evidence names still runs.
    pub alive: bool,
    /// When such a writer was last seen alive, Unix seconds, where known.
    pub last_seen_unix_secs: Option<u64>,
}

/// A process seen writing into a group.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterDto {
    /// Process id.
    pub pid: u32,
    /// Executable name.
    pub name: String,
}

/// The rule an alert fired by: the kebab-case word of [`AlertDto::rule`].
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlertRule {
    /// A producer grew more than the configured bytes or items in the growth window.
    ProducerGrowth,
    /// All watched dirs together hold more than the limit.
    TotalLimit,
    /// Free space on a watched volume is below the limit.
    FreeDisk,
    /// At the recent growth rate the disk is full sooner than the limit.
    DiskFullEta,
    /// A process keeps crashing (`crate::crash`).
    CrashLoop,
    /// Free space fell by much more than the watched dirs grew (`crate::outside_growth`); only
    /// when the config's `unexplained_growth_alert` is on.
    UnexplainedGrowth,
    /// A group of unattributed entries sharing a name shape (a producer no rule knows,
    /// `crate::shapes`) grew past the producer-growth limits.
    UnknownProducerGrowth,
    /// A watched root was removed, or replaced by a symbolic link or a non-dir: fired by the
    /// monitor when it sees the change (at most once per root within the cooldown), not by the
    /// evaluator.
    RootGone,
    /// A watched process's memory kept growing (`crate::process_leaks`): fired by the monitor.
    ProcessLeak,
    /// The monitor task stopped on a panic: fired once, as it stops.
    MonitorStopped,
    /// The history database could not be opened or written: the monitor runs without it.
    HistoryUnavailable,
    /// An auto-reclaim rule freed space (announced by the monitor).
    AutoReclaim,
}

impl AlertRule {
    /// All rules.
    pub const ALL: [AlertRule; 12] = [
        AlertRule::ProducerGrowth,
        AlertRule::TotalLimit,
        AlertRule::FreeDisk,
        AlertRule::DiskFullEta,
        AlertRule::CrashLoop,
        AlertRule::UnexplainedGrowth,
        AlertRule::UnknownProducerGrowth,
        AlertRule::RootGone,
        AlertRule::ProcessLeak,
        AlertRule::MonitorStopped,
        AlertRule::HistoryUnavailable,
        AlertRule::AutoReclaim,
    ];

    /// The kebab-case word serde writes (`producer-growth`, `crash-loop`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            AlertRule::ProducerGrowth => "producer-growth",
            AlertRule::TotalLimit => "total-limit",
            AlertRule::FreeDisk => "free-disk",
            AlertRule::DiskFullEta => "disk-full-eta",
            AlertRule::CrashLoop => "crash-loop",
            AlertRule::UnexplainedGrowth => "unexplained-growth",
            AlertRule::UnknownProducerGrowth => "unknown-producer-growth",
            AlertRule::RootGone => "root-gone",
            AlertRule::ProcessLeak => "process-leak",
            AlertRule::MonitorStopped => "monitor-stopped",
            AlertRule::HistoryUnavailable => "history-unavailable",
            AlertRule::AutoReclaim => "auto-reclaim",
        }
    }

    /// The rule named `s` (as [`AlertRule::as_str`]); `None` for an unknown name.
    pub fn parse(s: &str) -> Option<AlertRule> {
        AlertRule::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// Lets a rule be compared with its word (`a.rule == "crash-loop"`).
impl PartialEq<&str> for AlertRule {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for AlertRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An alert that fired.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertDto {
    /// Row id in the history DB (0 when the DB is unavailable).
    pub id: i64,
    /// When it fired, Unix seconds.
    pub time_unix_secs: u64,
    /// The alert rule (`producer-growth`, `total-limit`, `free-disk`, `disk-full-eta`, `crash-loop`, ...).
    pub rule: AlertRule,
    /// The producer, where it is about one.
    pub producer: Option<String>,
    /// Short title.
    pub title: String,
    /// The text: producer, amount, rate, what to do.
    pub message: String,
    /// `message` as the window and notifications show it: without the sentences that tell a
    /// terminal user which `cachewatch` command to run (the app offers the action instead).
    #[serde(default)]
    pub app_message: String,
    /// The reclaim the alert suggests (a `producer-growth` alert of a producer reclaim may
    /// delete), as the command in `message` says it.
    #[serde(default)]
    pub suggested_reclaim: Option<SuggestedReclaim>,
}

/// The reclaim an alert suggests: one producer's items older than a threshold.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuggestedReclaim {
    /// The producer (rule id).
    pub producer: String,
    /// The suggested threshold, seconds (at least an hour, and at least the rule's floor).
    pub older_than_secs: u64,
}

/// What started an auto-reclaim run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// `every` elapsed since the last run.
    Interval,
    /// More items than `when_items_over`.
    Items,
    /// More bytes than `when_bytes_over`.
    Bytes,
    /// Less free space than `when_free_below`.
    FreeSpace,
    /// Asked for (`cachewatch reclaim --rules`, a test).
    #[default]
    Manual,
}

impl Trigger {
    /// The name stored in the history: `interval`, `items`, `bytes`, `free-space`, `manual`.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Interval => "interval",
            Trigger::Items => "items",
            Trigger::Bytes => "bytes",
            Trigger::FreeSpace => "free-space",
            Trigger::Manual => "manual",
        }
    }
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an auto-reclaim run ended.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Every planned item was attempted.
    #[default]
    Done,
    /// Stopped between batches by a pause or a shutdown.
    Paused,
    /// Nothing or not everything could be attempted (no audit rows, a root busy).
    Failed,
}

impl RunStatus {
    /// The word stored in the history: `done`, `paused`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Done => "done",
            RunStatus::Paused => "paused",
            RunStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Lets a status be compared with its word (`run.status == "failed"`).
impl PartialEq<&str> for RunStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Lets a trigger be compared with its word (`run.trigger == "manual"`).
impl PartialEq<&str> for Trigger {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests;
