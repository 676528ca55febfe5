//! Safe reclaim: [`plan`] then [`execute`], under the safety rules listed in
//! `docs/architecture.md` ("Reclaim safety rules").
//!
//! A plan lists the claimed items that may go (with their device, inode, sizes and age) and the
//! items kept with the reason why. Execute ([`Executor`], batch by batch) re-checks every planned
//! item just before deleting it (still inside its root, same device and inode, no mount inside,
//! not modified since the plan, still old enough, owner still dead, not in use per an open-file
//! table re-read before each batch) and deletes relative to file descriptors: each root is opened
//! once and locked (`flock`, so two reclaims of one root never run at once), each item is reached
//! from its root's fd one dir at a time without following symlinks or crossing mounts, and removed
//! with `unlinkat` relative to its parent's fd. A symlink is removed as a link and never followed;
//! an ancestor swapped for a symlink after the check cannot redirect the deletion.
//!
//! What stays racy: a process may open a file in an item after its batch's open-file re-read
//! (the window is one batch); a plain file's name swapped, inside the same in-root dir, between
//! its final check and its `unlinkat` removes the swapped-in name (never anything outside the
//! root).
//!
//! Age is `now − max(newest mtime in the item, the name's `ts` capture)`: the younger reading wins,
//! so a name timestamp protects an item whose files carry old mtimes (extracted archives), and a
//! recent write protects an item whose name says it is old.
//!
//! Three forms of plan: [`plan`] holds every item of an [`crate::inventory::Inventory`];
//! [`plan_streamed`] decides each item while the scan streams it ([`Planner`]), sums a
//! [`PlanSummary`] and spools the items ([`Spool`]: memory up to [`MEMORY_RECORDS`], then an
//! unlinked temp file with exact records), so the CLI plans and executes 700k items in flat
//! memory; and [`PlanPass`] decides items handed in chunks (the live monitor's compact inventory)
//! with one set of guards for the whole pass, into a [`PlanSink`] (the same sums and spools). All
//! execute through [`Executor`] in audited batches.

mod access;
mod attempt;
mod beneath;
mod error;
mod execute;
mod keep;
mod last_use;
mod measure;
mod pass;
pub mod path_text;
mod plan;
mod rules;
mod run;
mod spool;
pub mod staged;
mod stream;
#[cfg(test)]
mod tests;
mod tree;
pub mod unix_secs;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use error::ReclaimError;
pub use execute::{
    Batch, BatchOutcome, Checkpoint, CheckpointFn, ExecuteOptions, Executor, DEFAULT_BATCH_SIZE,
    DEFAULT_LOCK_WAIT,
};
pub use keep::{KeepCode, KeepReason, NewestCloneGuard, PlanGuards};
pub use last_use::newest_access;
pub use pass::{Decision, PlanPass};
pub use plan::{plan, plan_id_of, Planner};
use rules::{held_protected, held_root, last_use_of, needed_secs, protected_paths};
pub use rules::{read_age, read_age_used, AgeClock, AgeReading};
pub use run::execute;
pub use spool::{Record, Spool, MEMORY_RECORDS};
pub use stream::{plan_streamed, KeptGroup, PlanSink, PlanSummary, ProducerPlan, StreamedPlan};

/// What the user asked to reclaim.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// The user's age threshold; items younger are kept (a rule's `min_age_secs` may raise it).
    #[cfg_attr(feature = "ts", ts(type = "{ secs: number, nanos: number }"))]
    pub older_than: Duration,
    /// Producer ids to reclaim; empty means every producer with `reclaim = "auto"`.
    pub producers: Vec<String>,
    /// Paths no deletion may reach: an item that is one of them or holds one is kept
    /// ([`KeepReason::HoldsProtected`]). The caller passes its data dir and config dir; [`plan`]
    /// adds the user's home dir and the canonical form of each path that exists, and the plan's
    /// copy of the policy carries the full list to [`execute`]. Empty when absent from JSON.
    #[serde(default, with = "path_text::many")]
    #[cfg_attr(feature = "ts", ts(type = "Array<string>"))]
    pub protected: Vec<PathBuf>,
}

/// The audit record of one deletion attempt, for the history DB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When (JSON: `time_unix_secs`, whole seconds).
    #[serde(rename = "time_unix_secs", with = "unix_secs")]
    pub time: SystemTime,
    /// The item's path.
    #[serde(with = "path_text")]
    pub path: PathBuf,
    /// Rule id.
    pub producer: String,
    /// Allocated bytes the item had in the plan.
    pub allocated_bytes: u64,
    /// What became of it (written as `deleted`, `already-gone`, `skipped: <reason>`,
    /// `error: <message>`).
    pub outcome: AuditOutcome,
}

/// What became of one planned item, as its audit row says it. The history database and the JSON
/// hold it as text, the same words as always (`attempt`, `interrupted`, `deleted`,
/// `already-gone`, `skipped: <reason>`, `error: <message>`), parsed back into this type; a text
/// of none of these forms (a row written by another version) reads back unchanged as
/// [`AuditOutcome::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum AuditOutcome {
    /// Written before the deletion is tried, replaced by the real outcome after it.
    Attempt,
    /// How a row still at [`AuditOutcome::Attempt`] reads back: the process stopped before the
    /// outcome was written, so the deletion may or may not have happened.
    Interrupted,
    /// Deleted.
    Deleted,
    /// Gone before execute reached it (not an error).
    AlreadyGone,
    /// Kept at the re-check just before deleting; the keep reason in words.
    Skipped(String),
    /// Failed; the error's message.
    Error(String),
    /// A text of none of the forms above, kept as it was.
    Other(String),
}

impl AuditOutcome {
    /// The word of [`AuditOutcome::Attempt`].
    pub const ATTEMPT: &'static str = "attempt";
    /// The word of [`AuditOutcome::Interrupted`].
    pub const INTERRUPTED: &'static str = "interrupted";
    /// The word of [`AuditOutcome::Deleted`].
    pub const DELETED: &'static str = "deleted";
    /// The word of [`AuditOutcome::AlreadyGone`].
    pub const ALREADY_GONE: &'static str = "already-gone";

    /// The outcome `text` writes (never fails: an unknown text is [`AuditOutcome::Other`]).
    pub fn parse(text: &str) -> AuditOutcome {
        match text {
            Self::ATTEMPT => return AuditOutcome::Attempt,
            Self::INTERRUPTED => return AuditOutcome::Interrupted,
            Self::DELETED => return AuditOutcome::Deleted,
            Self::ALREADY_GONE => return AuditOutcome::AlreadyGone,
            _ => {}
        }
        if let Some(reason) = text.strip_prefix("skipped: ") {
            AuditOutcome::Skipped(reason.to_owned())
        } else if let Some(message) = text.strip_prefix("error: ") {
            AuditOutcome::Error(message.to_owned())
        } else {
            AuditOutcome::Other(text.to_owned())
        }
    }

    /// The outcome's first word: `attempt`, `interrupted`, `deleted`, `already-gone`, `skipped`,
    /// `error`, or for [`AuditOutcome::Other`] its text up to the first `:`.
    pub fn word(&self) -> &str {
        match self {
            AuditOutcome::Attempt => Self::ATTEMPT,
            AuditOutcome::Interrupted => Self::INTERRUPTED,
            AuditOutcome::Deleted => Self::DELETED,
            AuditOutcome::AlreadyGone => Self::ALREADY_GONE,
            AuditOutcome::Skipped(_) => "skipped",
            AuditOutcome::Error(_) => "error",
            AuditOutcome::Other(t) => t.split(':').next().unwrap_or_default(),
        }
    }

    /// What follows the word: the keep reason, the error's message, or for
    /// [`AuditOutcome::Other`] its text after the first `:` (trimmed); empty for the others.
    pub fn detail(&self) -> &str {
        match self {
            AuditOutcome::Skipped(t) | AuditOutcome::Error(t) => t,
            AuditOutcome::Other(t) => t.split_once(':').map_or("", |(_, rest)| rest.trim()),
            _ => "",
        }
    }
}

impl std::fmt::Display for AuditOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditOutcome::Skipped(reason) => write!(f, "skipped: {reason}"),
            AuditOutcome::Error(message) => write!(f, "error: {message}"),
            AuditOutcome::Other(text) => f.write_str(text),
            other => f.write_str(other.word()),
        }
    }
}

impl From<&str> for AuditOutcome {
    fn from(text: &str) -> AuditOutcome {
        AuditOutcome::parse(text)
    }
}

impl From<String> for AuditOutcome {
    fn from(text: String) -> AuditOutcome {
        AuditOutcome::parse(&text)
    }
}

impl From<AuditOutcome> for String {
    fn from(o: AuditOutcome) -> String {
        o.to_string()
    }
}

impl PartialEq<str> for AuditOutcome {
    fn eq(&self, text: &str) -> bool {
        *self == AuditOutcome::parse(text)
    }
}

impl PartialEq<&str> for AuditOutcome {
    fn eq(&self, text: &&str) -> bool {
        *self == AuditOutcome::parse(text)
    }
}

/// One item a plan would delete.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedItem {
    /// Absolute path of the item, under `root`.
    #[serde(with = "path_text")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub path: PathBuf,
    /// Canonical path of the root the item lies in; execute refuses anything not strictly inside it.
    #[serde(with = "path_text")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub root: PathBuf,
    /// Rule id.
    pub producer: String,
    /// Allocated bytes at scan time (`st_blocks * 512`, hard links once).
    pub allocated_bytes: u64,
    /// Apparent bytes at scan time (`st_size` summed).
    pub apparent_bytes: u64,
    /// Bytes deleting it frees, at scan time: allocated less blocks shared with files outside it
    /// (APFS clones, reflinks); see [`crate::inventory::Measure::freeable_bytes`].
    #[serde(default)]
    pub freeable_bytes: u64,
    /// Age at plan time, seconds (see the module docs for how age is read).
    pub age_secs: u64,
    /// Device id of the item (`st_dev`).
    pub dev: u64,
    /// Inode of the item (`st_ino`).
    pub ino: u64,
    /// True when the item is a symlink (the link goes, the target stays).
    pub is_symlink: bool,
    /// Newest mtime in the item at scan time; anything newer at execute keeps the item (JSON:
    /// `newest_mtime_unix_secs`, whole seconds).
    #[serde(rename = "newest_mtime_unix_secs", with = "unix_secs::opt")]
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub newest_mtime: Option<SystemTime>,
    /// The name's `ts` capture, when the rule has one (JSON: `name_ts_unix_secs`).
    #[serde(
        default,
        rename = "name_ts_unix_secs",
        with = "unix_secs::opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub name_ts: Option<SystemTime>,
    /// The owner pid from the name, when the rule has `owner.pid_in_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_pid: Option<u32>,
    /// The app that owns the item (its path's `bundle` capture, or the container's bundle id; see
    /// [`crate::owner::owner_app`]): execute keeps the item when that app runs by then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_app: Option<String>,
    /// The item's birth (the name's `ts` when captured, else the scan's birth time); an owner pid
    /// that started after it is a reused pid (JSON: `birth_time_unix_secs`).
    #[serde(
        default,
        rename = "birth_time_unix_secs",
        with = "unix_secs::opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub birth_time: Option<SystemTime>,
    /// The item's own birth time from the scan (`statx`/`st_birthtime`); a different one at execute
    /// means the item was replaced, even when the inode number was reused (JSON:
    /// `born_unix_secs`).
    #[serde(
        default,
        rename = "born_unix_secs",
        with = "unix_secs::opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub born: Option<SystemTime>,
}

/// An item kept, with why.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptItem {
    /// Absolute path of the item.
    #[serde(with = "path_text")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub path: PathBuf,
    /// Rule id.
    pub producer: String,
    /// Why it is kept (serialized inline: `"reason": "too-young", "age_secs": ...`).
    #[serde(flatten)]
    pub reason: KeepReason,
}

/// What [`plan`] decided: the items to delete and the items kept.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimPlan {
    /// Stable id: 32 hex digits hashed from the policy and every planned item's path, device and
    /// inode (not from the time), so the same state gives the same id.
    pub id: String,
    /// When the plan was made (the `now` given to [`plan`]; JSON: `created_unix_secs`).
    #[serde(rename = "created_unix_secs", with = "unix_secs")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub created: SystemTime,
    /// The policy it was made under.
    pub policy: Policy,
    /// Items to delete, in path order.
    pub items: Vec<PlannedItem>,
    /// Items kept, in path order.
    pub kept: Vec<KeptItem>,
    /// Every root of the inventory (canonical and as given, sorted, deduplicated): execute refuses
    /// an item that is one of them or holds one, whatever root the item lies in.
    #[serde(default, with = "path_text::many")]
    #[cfg_attr(feature = "ts", ts(type = "Array<string>"))]
    pub roots: Vec<PathBuf>,
    /// Sum of the planned items' allocated bytes.
    pub planned_bytes: u64,
    /// Sum of the planned items' freeable bytes: what executing the plan frees (a lower bound when
    /// planned items share blocks with each other, e.g. clones of one app version).
    #[serde(default)]
    pub planned_freeable_bytes: u64,
}

/// An item execute deleted.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletedItem {
    /// Absolute path it had.
    #[serde(with = "path_text")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub path: PathBuf,
    /// Rule id.
    pub producer: String,
    /// Allocated bytes re-measured just before deleting (hard links shared with another deleted
    /// item counted in the first one only).
    pub allocated_bytes: u64,
}

/// An item execute could not handle, as `{path, message}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimErrorEntry {
    /// The item (empty for an error about the whole plan).
    #[serde(with = "path_text")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub path: PathBuf,
    /// The error, as [`ReclaimError`] displays it.
    pub message: String,
}

/// What [`execute`] did.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimReport {
    /// Items deleted, in plan order.
    pub deleted: Vec<DeletedItem>,
    /// Items skipped at the re-check, with why.
    pub kept: Vec<KeptItem>,
    /// Items that were gone before execute reached them (not an error).
    #[serde(with = "path_text::many")]
    #[cfg_attr(feature = "ts", ts(type = "Array<string>"))]
    pub already_gone: Vec<PathBuf>,
    /// Sum of the deleted items' re-measured allocated bytes.
    pub freed_bytes: u64,
    /// Items that failed.
    pub errors: Vec<ReclaimErrorEntry>,
}
