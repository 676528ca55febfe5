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

/// Which clock gave an item its age (see [`read_age`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgeClock {
    /// The newest mtime inside the item (its newest change).
    NewestChange,
    /// The newest access time of a file inside a cache (its last use), later than its newest
    /// change and than the time in its name.
    LastUse,
    /// The time in its name (the rule's `ts` capture), later than its newest change.
    NameTime,
    /// Neither is known: the item counts as brand new.
    Unknown,
}

/// An item's age as plan and execute read it, with the clock that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AgeReading {
    /// `now` − the latest of the times read, seconds (0 when that time is in the future).
    pub age_secs: u64,
    /// Which of the times was the latest.
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
    read_age_used(newest_mtime, None, name_ts, now)
}

/// [`read_age`] of a cache (`kind = "cache"`) whose files were last read at `last_use` (their
/// newest access time, as the volume records it): a cache ages from its last use when that is
/// later than its newest change, as clang prunes its module cache by access time. Leaks keep
/// [`read_age`]: a leftover read by a backup tool or an indexer is still a leftover. On a volume
/// that does not record accesses (`noatime`) an access time is never later than the file's
/// creation, so the newest change decides, as for a leak.
pub fn read_age_used(
    newest_mtime: Option<SystemTime>,
    last_use: Option<SystemTime>,
    name_ts: Option<SystemTime>,
    now: SystemTime,
) -> AgeReading {
    let candidates = [
        (newest_mtime, AgeClock::NewestChange),
        (name_ts, AgeClock::NameTime),
        (last_use, AgeClock::LastUse),
    ];
    // The latest time wins; on a tie the earlier entry's clock is named.
    let mut best: Option<(SystemTime, AgeClock)> = None;
    for (t, clock) in candidates {
        match (t, best) {
            (Some(t), Some((b, _))) if t <= b => {}
            (Some(t), _) => best = Some((t, clock)),
            (None, _) => {}
        }
    }
    match best {
        Some((t, clock)) => AgeReading {
            age_secs: secs_between(t, now),
            clock,
        },
        None => AgeReading {
            age_secs: 0,
            clock: AgeClock::Unknown,
        },
    }
}

/// The last use of an item of `rule` that counts towards its age: the newest access time of a
/// file inside it (read by `read`, called only for `kind = "cache"` rules), `None` for any other
/// kind.
pub(super) fn last_use_of(
    rule: &crate::catalogue::Rule,
    read: impl FnOnce() -> Option<SystemTime>,
) -> Option<SystemTime> {
    (rule.kind == crate::catalogue::ProducerKind::Cache)
        .then(read)
        .flatten()
}

/// Needed age, seconds: max(threshold, the rule's floor).
pub(super) fn needed_secs(policy: &Policy, rule: &crate::catalogue::Rule) -> u64 {
    policy.older_than.as_secs().max(rule.min_age_secs)
}
