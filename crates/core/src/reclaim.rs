//! Safe reclaim: [`plan`] then [`execute`], under the safety rules of `../shared/DESIGN.md`.
//!
//! A plan lists the claimed items that may go (with their device, inode, sizes and age) and the
//! items kept with the reason why. Execute re-checks every planned item just before deleting it
//! (still inside its root, same device and inode, not modified since the plan, still old enough,
//! owner still dead, not in use) and deletes with `remove_dir_all` / `remove_file`, so a symlink is
//! removed as a link and never followed.
//!
//! Age is `now − max(newest mtime in the item, the name's `ts` capture)`: the younger reading wins,
//! so a name timestamp protects an item whose files carry old mtimes (extracted archives), and a
//! recent write protects an item whose name says it is old.

mod execute;
mod keep;
mod measure;
pub mod path_text;
mod plan;
#[cfg(test)]
mod tests;
pub mod unix_secs;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use execute::execute;
pub use keep::KeepReason;
pub use plan::plan;

/// What the user asked to reclaim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// The user's age threshold; items younger are kept (a rule's `min_age_secs` may raise it).
    pub older_than: Duration,
    /// Producer ids to reclaim; empty means every producer with `reclaim = "auto"`.
    pub producers: Vec<String>,
    /// Paths no deletion may reach: an item that is one of them or holds one is kept
    /// ([`KeepReason::HoldsProtected`]). The caller passes its data dir and config dir; [`plan`]
    /// adds the user's home dir and the canonical form of each path that exists, and the plan's
    /// copy of the policy carries the full list to [`execute`]. Empty when absent from JSON.
    #[serde(default, with = "path_text::many")]
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
    /// `deleted`, `already-gone`, `skipped: <reason>` or `error: <message>`.
    pub outcome: String,
}

/// One item a plan would delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedItem {
    /// Absolute path of the item, under `root`.
    #[serde(with = "path_text")]
    pub path: PathBuf,
    /// Canonical path of the root the item lies in; execute refuses anything not strictly inside it.
    #[serde(with = "path_text")]
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
    pub newest_mtime: Option<SystemTime>,
    /// The name's `ts` capture, when the rule has one (JSON: `name_ts_unix_secs`).
    #[serde(
        default,
        rename = "name_ts_unix_secs",
        with = "unix_secs::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub name_ts: Option<SystemTime>,
    /// The owner pid from the name, when the rule has `owner.pid_in_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_pid: Option<u32>,
    /// The item's birth (the name's `ts` when captured, else the scan's birth time); an owner pid
    /// that started after it is a reused pid (JSON: `birth_time_unix_secs`).
    #[serde(
        default,
        rename = "birth_time_unix_secs",
        with = "unix_secs::opt",
        skip_serializing_if = "Option::is_none"
    )]
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
    pub born: Option<SystemTime>,
}

/// An item kept, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptItem {
    /// Absolute path of the item.
    #[serde(with = "path_text")]
    pub path: PathBuf,
    /// Rule id.
    pub producer: String,
    /// Why it is kept (serialized inline: `"reason": "too-young", "age_secs": ...`).
    #[serde(flatten)]
    pub reason: KeepReason,
}

/// What [`plan`] decided: the items to delete and the items kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimPlan {
    /// Stable id: 32 hex digits hashed from the policy and every planned item's path, device and
    /// inode (not from the time), so the same state gives the same id.
    pub id: String,
    /// When the plan was made (the `now` given to [`plan`]; JSON: `created_unix_secs`).
    #[serde(rename = "created_unix_secs", with = "unix_secs")]
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
    pub roots: Vec<PathBuf>,
    /// Sum of the planned items' allocated bytes.
    pub planned_bytes: u64,
    /// Sum of the planned items' freeable bytes: what executing the plan frees (a lower bound when
    /// planned items share blocks with each other, e.g. clones of one app version).
    #[serde(default)]
    pub planned_freeable_bytes: u64,
}

/// An item execute deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletedItem {
    /// Absolute path it had.
    #[serde(with = "path_text")]
    pub path: PathBuf,
    /// Rule id.
    pub producer: String,
    /// Allocated bytes re-measured just before deleting (hard links shared with another deleted
    /// item counted in the first one only).
    pub allocated_bytes: u64,
}

/// An item execute could not handle, as `{path, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimErrorEntry {
    /// The item (empty for an error about the whole plan).
    #[serde(with = "path_text")]
    pub path: PathBuf,
    /// The error, as [`ReclaimError`] displays it.
    pub message: String,
}

/// What [`execute`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimReport {
    /// Items deleted, in plan order.
    pub deleted: Vec<DeletedItem>,
    /// Items skipped at the re-check, with why.
    pub kept: Vec<KeptItem>,
    /// Items that were gone before execute reached them (not an error).
    #[serde(with = "path_text::many")]
    pub already_gone: Vec<PathBuf>,
    /// Sum of the deleted items' re-measured allocated bytes.
    pub freed_bytes: u64,
    /// Items that failed.
    pub errors: Vec<ReclaimErrorEntry>,
}

/// Errors of one item's re-check or deletion.
#[derive(Debug, thiserror::Error)]
pub enum ReclaimError {
    /// The plan's id does not match its contents: it was edited or corrupted.
    #[error("plan id {found:?} does not match its items (expected {expected:?}); make a new plan")]
    PlanMismatch {
        /// The id the plan carries.
        found: String,
        /// The id its contents hash to.
        expected: String,
    },
    /// The path is not a plain absolute path with a final name (`..`, a root, empty).
    #[error("refusing {path:?}: not an absolute path ending in a plain name")]
    BadPath {
        /// The path.
        path: PathBuf,
    },
    /// The item does not lie strictly inside its root (after resolving its parent).
    #[error("refusing {path:?}: it resolves to {resolved:?}, not inside root {root:?}")]
    OutsideRoot {
        /// The path in the plan.
        path: PathBuf,
        /// Where its parent resolves to, joined with its name.
        resolved: PathBuf,
        /// The root.
        root: PathBuf,
    },
    /// Resolving the item's parent dir failed.
    #[error("cannot resolve the parent of {path:?}: {source}")]
    Canonicalize {
        /// The item.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `lstat` of the item or an entry in it failed.
    #[error("cannot stat {path:?}: {source}")]
    Stat {
        /// The entry.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Listing a dir inside the item failed (so its age cannot be checked).
    #[error("cannot list {path:?}: {source}")]
    ReadDir {
        /// The dir.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Deleting the item failed (part of it may be gone).
    #[error("cannot delete {path:?}: {source}")]
    Remove {
        /// The item.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl ReclaimError {
    fn entry(&self, path: &std::path::Path) -> ReclaimErrorEntry {
        ReclaimErrorEntry {
            path: path.to_path_buf(),
            message: self.to_string(),
        }
    }
}

/// The first of `roots` that `item` is or holds (an ancestor of), if any.
fn held_root<'a>(item: &std::path::Path, roots: &'a [PathBuf]) -> Option<&'a PathBuf> {
    roots.iter().find(|r| r.starts_with(item))
}

/// The protected paths in force: `given` plus the user's home dir (read now, through
/// `directories`), each as given (when absolute) and canonical (when it exists), sorted,
/// deduplicated.
fn protected_paths(given: &[PathBuf]) -> Vec<PathBuf> {
    let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
    let mut out: Vec<PathBuf> = given
        .iter()
        .cloned()
        .chain(home)
        .filter(|p| p.is_absolute())
        .flat_map(|p| {
            let canonical = std::fs::canonicalize(&p).ok();
            std::iter::once(p).chain(canonical)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The first of `protected` that any of `forms` (one item's path, as found and resolved) is or
/// holds.
fn held_protected<'a>(forms: &[&std::path::Path], protected: &'a [PathBuf]) -> Option<&'a PathBuf> {
    protected
        .iter()
        .find(|p| forms.iter().any(|item| p.starts_with(item)))
}

/// Whole seconds from `earlier` to `now`, 0 when `earlier` is in the future.
fn secs_between(earlier: SystemTime, now: SystemTime) -> u64 {
    now.duration_since(earlier).map_or(0, |d| d.as_secs())
}

/// The reading of an item's age: `now − max(newest mtime, name ts)`, seconds; 0 when neither is
/// known (an item of unknown age is treated as brand new).
fn age_secs(newest_mtime: Option<SystemTime>, name_ts: Option<SystemTime>, now: SystemTime) -> u64 {
    match newest_mtime.into_iter().chain(name_ts).max() {
        Some(t) => secs_between(t, now),
        None => 0,
    }
}

/// Needed age, seconds: max(threshold, the rule's floor).
fn needed_secs(policy: &Policy, rule: &crate::catalogue::Rule) -> u64 {
    policy.older_than.as_secs().max(rule.min_age_secs)
}

/// True when the rule forbids deleting (`reclaim = "never"` or `kind = "system"`).
fn rule_forbids(rule: &crate::catalogue::Rule) -> bool {
    rule.reclaim == crate::catalogue::ReclaimMode::Never
        || rule.kind == crate::catalogue::ProducerKind::System
}
