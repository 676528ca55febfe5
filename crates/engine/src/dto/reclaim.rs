//! What the app's window is sent of a reclaim plan: a bounded preview ([`ReclaimPreview`]: sums
//! per producer, kept counts by reason with a few examples, the largest planned items and the
//! count of the rest), and of its execute a bounded result ([`ReclaimResult`]), so a plan of 700k
//! items crosses IPC as a few KiB. The plan itself stays in the engine by its id.

use serde::{Deserialize, Serialize};

use crate::reclaim::{DeletedItem, KeepCode, KeptItem, PlannedItem, ReclaimErrorEntry};

/// Planned items a preview lists (the largest).
pub const PREVIEW_ITEMS: usize = 100;
/// Kept items named per reason in a preview.
pub const KEPT_EXAMPLES: usize = 3;
/// Items of each kind (deleted, kept, errors) a result lists.
pub const RESULT_ITEMS: usize = 100;

/// One producer's planned items, summed.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewProducer {
    /// Rule id.
    pub producer: String,
    /// Items planned (a count).
    pub items: u64,
    /// Their allocated bytes.
    pub allocated_bytes: u64,
    /// Their freeable bytes (allocated less blocks shared with clones).
    pub freeable_bytes: u64,
    /// The oldest one's age, seconds.
    pub oldest_age_secs: u64,
    /// The tool's own clean-up command when the tool manages this cache (`brew cleanup`): the
    /// confirmations name it as the better first step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
}

/// The items kept for one kind of reason, counted, with a few named.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptGroupDto {
    /// The reason word (`too-young`, `owner-alive`, ...).
    pub reason: KeepCode,
    /// Items kept for it (a count).
    pub items: u64,
    /// The first few of them (at most [`KEPT_EXAMPLES`]), in plan order.
    pub examples: Vec<KeptItem>,
}

/// A reclaim plan as the window sees it: the figures of the whole plan, the largest items.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimPreview {
    /// The plan's id: execute takes it, and only it (the engine holds the items).
    pub id: String,
    /// When the plan was made, Unix seconds.
    pub created_unix_secs: u64,
    /// The threshold it was made at, seconds.
    pub threshold_secs: u64,
    /// Items planned (a count).
    pub planned_items: u64,
    /// Sum of the planned items' allocated bytes.
    pub planned_bytes: u64,
    /// Sum of the planned items' freeable bytes: what executing the plan frees (a lower bound when
    /// planned items share blocks with each other).
    pub planned_freeable_bytes: u64,
    /// Planned items per producer, by id.
    pub producers: Vec<PreviewProducer>,
    /// Items kept (a count).
    pub kept_items: u64,
    /// Kept items by reason, most first.
    pub kept: Vec<KeptGroupDto>,
    /// The largest planned items (freeable bytes, then allocated, then path), at most
    /// [`PREVIEW_ITEMS`]; `planned_items` says how many there are in all.
    pub largest: Vec<PlannedItem>,
}

/// What executing a plan did, as the window sees it: the counts of the whole execute and the
/// first items of each kind.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimResult {
    /// Items deleted (a count).
    pub deleted_items: u64,
    /// Allocated bytes freed, re-measured just before deleting.
    pub freed_bytes: u64,
    /// Items skipped at the re-check (a count).
    pub kept_items: u64,
    /// Items gone before execute reached them (a count; not an error).
    pub already_gone_items: u64,
    /// Errors (a count), audit problems included.
    pub error_count: u64,
    /// The first deleted items (at most [`RESULT_ITEMS`]), in plan order.
    pub deleted: Vec<DeletedItem>,
    /// The first items skipped at the re-check, with why (at most [`RESULT_ITEMS`]).
    pub kept: Vec<KeptItem>,
    /// The first errors (at most [`RESULT_ITEMS`]).
    pub errors: Vec<ReclaimErrorEntry>,
}

/// What a reclaim at a threshold would take now, read from the monitor's per-producer age
/// histograms without walking the items: for a threshold control that moves often. Exact to the
/// histograms' bucket width (a minute for items under a day old, an hour under 30 days, a day
/// beyond, ages as of the last refresh of the figures); the confirm step still makes the real
/// plan.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimEstimate {
    /// The threshold asked about, seconds.
    pub threshold_secs: u64,
    /// Items it would take (a count).
    pub items: u64,
    /// Their allocated bytes.
    pub allocated_bytes: u64,
    /// Their freeable bytes (allocated less blocks shared with clones).
    pub freeable_bytes: u64,
    /// Per producer with something to take, by id (`oldest_age_secs` is 0: not tracked).
    pub producers: Vec<PreviewProducer>,
    /// When the histograms were last built, Unix seconds (items changed since are not in them).
    pub as_of_unix_secs: u64,
}
