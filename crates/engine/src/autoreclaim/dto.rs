//! The snapshot's `auto_reclaim` field: the rules, their last runs, a drain's progress and the
//! totals since the monitor started (what `/metrics` counts).

use serde::{Deserialize, Serialize};

use super::AutoRun;

/// Auto-reclaim in a snapshot. Every field defaults, so a snapshot without it reads.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AutoReclaimDto {
    /// True when rules are configured and not switched off (`watch --no-auto-reclaim`).
    pub enabled: bool,
    /// The run in progress, if any.
    pub progress: Option<AutoReclaimProgress>,
    /// One per configured rule, in config order.
    pub rules: Vec<AutoRuleDto>,
    /// What the rules deleted since the monitor started, per producer, by id.
    pub reclaimed: Vec<ReclaimedDto>,
}

/// A drain in progress.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AutoReclaimProgress {
    /// The rule's name.
    pub rule: String,
    /// Planned items attempted so far.
    pub items_done: u64,
    /// Planned items in all.
    pub items_total: u64,
    /// Items deleted so far.
    pub deleted_items: u64,
    /// Allocated bytes of those items (as planned).
    pub deleted_bytes: u64,
}

/// One rule.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AutoRuleDto {
    /// Its name (the `rule` label of the metrics).
    pub rule: String,
    /// Its producer ids.
    pub producers: Vec<String>,
    /// Its age threshold, seconds.
    pub older_than_secs: u64,
    /// Runs since the monitor started.
    pub runs: u64,
    /// The last run, if any.
    pub last_run: Option<AutoRun>,
    /// Why the last run freed nothing (kept everything), said once per condition.
    pub note: Option<String>,
}

/// What the rules deleted of one producer since the monitor started.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReclaimedDto {
    /// Producer id.
    pub producer: String,
    /// Items deleted.
    pub items: u64,
    /// Allocated bytes freed.
    pub bytes: u64,
}
