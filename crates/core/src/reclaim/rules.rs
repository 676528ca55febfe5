//! The checks plan and execute share: roots and protected paths held, age, owners, the rule's mode.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::Policy;

/// The first of `roots` that `item` is or holds (an ancestor of), if any.
pub(super) fn held_root<'a>(item: &Path, roots: &'a [PathBuf]) -> Option<&'a PathBuf> {
    roots.iter().find(|r| r.starts_with(item))
}

/// The protected paths in force: `given` plus the user's home dir (read now, through
/// `directories`), each as given (when absolute) and canonical (when it exists), sorted,
/// deduplicated.
pub(super) fn protected_paths(given: &[PathBuf]) -> Vec<PathBuf> {
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
pub(super) fn held_protected<'a>(forms: &[&Path], protected: &'a [PathBuf]) -> Option<&'a PathBuf> {
    protected
        .iter()
        .find(|p| forms.iter().any(|item| p.starts_with(item)))
}

/// Whole seconds from `earlier` to `now`, 0 when `earlier` is in the future.
pub(super) fn secs_between(earlier: SystemTime, now: SystemTime) -> u64 {
    now.duration_since(earlier).map_or(0, |d| d.as_secs())
}

/// The reading of an item's age: `now − max(newest mtime, name ts)`, seconds; 0 when neither is
/// known (an item of unknown age is treated as brand new).
pub(super) fn age_secs(
    newest_mtime: Option<SystemTime>,
    name_ts: Option<SystemTime>,
    now: SystemTime,
) -> u64 {
    match newest_mtime.into_iter().chain(name_ts).max() {
        Some(t) => secs_between(t, now),
        None => 0,
    }
}

/// Which clock gave an item its age (see [`read_age`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgeClock {
    /// The newest mtime inside the item (its newest change).
    NewestChange,
    /// The time in its name (the rule's `ts` capture), later than its newest change.
    NameTime,
    /// Neither is known: the item counts as brand new.
    Unknown,
}

/// An item's age as plan and execute read it, with the clock that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AgeReading {
    /// `now` − the later of the two times, seconds (0 when that time is in the future).
    pub age_secs: u64,
    /// Which of the two times was the later.
    pub clock: AgeClock,
}

/// The age of an item whose newest change is `newest_mtime` and whose name says `name_ts`: from
/// the later of the two, so a recent write protects an item whose name says it is old, and a
/// name's time protects an extracted archive with old mtimes.
pub fn read_age(
    newest_mtime: Option<SystemTime>,
    name_ts: Option<SystemTime>,
    now: SystemTime,
) -> AgeReading {
    let clock = match (newest_mtime, name_ts) {
        (Some(m), Some(t)) if t > m => AgeClock::NameTime,
        (None, Some(_)) => AgeClock::NameTime,
        (Some(_), _) => AgeClock::NewestChange,
        (None, None) => AgeClock::Unknown,
    };
    AgeReading {
        age_secs: age_secs(newest_mtime, name_ts, now),
        clock,
    }
}

/// Needed age, seconds: max(threshold, the rule's floor).
pub(super) fn needed_secs(policy: &Policy, rule: &crate::catalogue::Rule) -> u64 {
    policy.older_than.as_secs().max(rule.min_age_secs)
}
