//! Safe reclaim: `plan` then `execute`, under the safety rules of `../shared/DESIGN.md`.
//!
//! SKELETON — owned by the reclaim helper; the signatures below are the agreed interface.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// What the user asked to reclaim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// The user's age threshold; items younger are kept (a rule's `min_age_secs` may raise it).
    pub older_than: Duration,
    /// Producer ids to reclaim; empty means every producer with `reclaim = "auto"`.
    pub producers: Vec<String>,
}

/// Why an item was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum KeepReason {
    /// Younger than max(threshold, the rule's floor).
    TooYoung {
        /// Age of the item, seconds.
        age_secs: u64,
        /// The age it needs, seconds.
        needed_secs: u64,
    },
    /// The owner pid in the name is alive and started before the item was born.
    OwnerAlive {
        /// The owner pid.
        pid: u32,
    },
    /// A process has a file in it open.
    InUse {
        /// The process.
        pid: u32,
        /// The open file.
        path: PathBuf,
    },
    /// One of the rule's named processes runs.
    AppRunning {
        /// The process name.
        name: String,
    },
    /// The rule says `reclaim = "never"` or `kind = "system"`.
    Never,
    /// The rule says `reclaim = "manual"` and it was not named.
    Manual,
    /// Changed between plan and execute (device, inode, age or use).
    Changed {
        /// What changed.
        what: String,
    },
}

/// The audit record of one deletion attempt, for the history DB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When.
    pub time: SystemTime,
    /// The item's path.
    pub path: PathBuf,
    /// Rule id.
    pub producer: String,
    /// Allocated bytes the item had in the plan.
    pub allocated_bytes: u64,
    /// `deleted`, `already-gone`, `skipped: <reason>` or `error: <message>`.
    pub outcome: String,
}
