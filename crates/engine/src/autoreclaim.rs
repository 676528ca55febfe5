//! Automatic reclaim: rules in the config (`[[auto_reclaim]]`) that keep a leak down without
//! anyone clicking.
//!
//! ```toml
//! [[auto_reclaim]]
//! producers = ["metal-gpuarchiver"]   # catalogue ids
//! older_than = "1h"                   # the age threshold (the producer's floor still applies)
//! every = "10m"                       # run on this interval ...
//! when_items_over = 20000             # ... and/or when the producers hold more items than this
//! when_bytes_over = 10737418240       # ... or more allocated bytes than this
//! when_free_below = 21474836480       # ... or a watched volume's free bytes fall below this
//! ```
//!
//! No rule is configured by default: nothing is deleted until the user asks. The monitor checks
//! the triggers ([`due`]) after each update and on a short tick, and runs a due rule through the
//! same plan and audited execute as the CLI ([`run::run_rule`]): every safety rule applies, each
//! batch's audit rows are written before the batch is deleted, kept items keep their reasons, and
//! without a history database nothing is deleted. Each run is one row of the history's
//! `auto_reclaim_runs` table ([`AutoRun`]).
//!
//! Threshold triggers (items, bytes, free space) fire as soon as the condition holds, then at most
//! once per [`RETRIGGER_GAP`] while it keeps holding (a rule that keeps everything would otherwise
//! run back to back).

pub mod config;
mod dto;
pub mod run;
mod text;

use std::time::{Duration, SystemTime};

pub use crate::dto::{RunStatus, Trigger};
pub use crate::history::{AutoRun, ProducerFreed};
pub use dto::{AutoReclaimDto, AutoReclaimProgress, AutoRuleDto, ReclaimedDto};
pub use text::{announcement, kept_by_code, nothing_freed};

/// The shortest gap between two runs of a rule started by a threshold trigger (clock time).
pub const RETRIGGER_GAP: Duration = Duration::from_secs(60);

/// Items per batch of an auto-reclaim drain: the open-file table is re-read, the audit rows are
/// written and a pause is noticed between batches.
pub const BATCH_SIZE: usize = 512;

/// A validated `[[auto_reclaim]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoRule {
    /// Its name: `name` in the config, else the producer ids joined with `+` (the `rule` label of
    /// `cachewatch_auto_reclaim_runs_total`).
    pub name: String,
    /// Catalogue ids, all known to the catalogue.
    pub producers: Vec<String>,
    /// Only items older than this (a producer's `min_age_secs` may raise it).
    pub older_than: Duration,
    /// Run on this interval.
    pub every: Option<Duration>,
    /// Run when the producers hold more items than this.
    pub when_items_over: Option<u64>,
    /// Run when the producers hold more allocated bytes than this.
    pub when_bytes_over: Option<u64>,
    /// Run when a watched volume has fewer free bytes than this.
    pub when_free_below: Option<u64>,
}

/// The figures a rule's triggers look at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Items of the rule's producers.
    pub items: u64,
    /// Allocated bytes of the rule's producers.
    pub bytes: u64,
    /// The least free bytes of the watched volumes; `None` when unknown.
    pub free_bytes: Option<u64>,
}

/// Which trigger of `rule` fires at `now`, given its last run (`None`: never ran in this
/// process): the interval once `every` has passed since the last run (at once when it never ran),
/// a threshold as soon as it is crossed and then at most once per [`RETRIGGER_GAP`].
pub fn due(
    rule: &AutoRule,
    last_run: Option<SystemTime>,
    now: SystemTime,
    f: &Figures,
) -> Option<Trigger> {
    // A gap that runs past the end of time is never over (checked: an unchecked add panicked).
    let since =
        |gap: Duration| last_run.map_or(true, |t| t.checked_add(gap).is_some_and(|at| now >= at));
    if rule.every.is_some_and(since) {
        return Some(Trigger::Interval);
    }
    if !since(RETRIGGER_GAP) {
        return None;
    }
    if rule.when_items_over.is_some_and(|n| f.items > n) {
        Some(Trigger::Items)
    } else if rule.when_bytes_over.is_some_and(|n| f.bytes > n) {
        Some(Trigger::Bytes)
    } else if rule
        .when_free_below
        .is_some_and(|n| f.free_bytes.is_some_and(|free| free < n))
    {
        Some(Trigger::FreeSpace)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> AutoRule {
        AutoRule {
            name: "r".into(),
            producers: vec!["p".into()],
            older_than: Duration::from_secs(3600),
            every: None,
            when_items_over: None,
            when_bytes_over: None,
            when_free_below: None,
        }
    }

    const T0: Duration = Duration::from_secs(1_900_000_000);

    #[test]
    fn interval_fires_at_once_then_every_period() {
        let r = AutoRule {
            every: Some(Duration::from_secs(600)),
            ..rule()
        };
        let t0 = SystemTime::UNIX_EPOCH + T0;
        let f = Figures::default();
        assert_eq!(due(&r, None, t0, &f), Some(Trigger::Interval));
        assert_eq!(due(&r, Some(t0), t0 + Duration::from_secs(599), &f), None);
        assert_eq!(
            due(&r, Some(t0), t0 + Duration::from_secs(600), &f),
            Some(Trigger::Interval)
        );
    }

    #[test]
    fn thresholds_fire_when_crossed_and_wait_the_gap_while_they_hold() {
        let t0 = SystemTime::UNIX_EPOCH + T0;
        let items = AutoRule {
            when_items_over: Some(10),
            ..rule()
        };
        let bytes = AutoRule {
            when_bytes_over: Some(1000),
            ..rule()
        };
        let free = AutoRule {
            when_free_below: Some(500),
            ..rule()
        };
        let at = |items, bytes, free| Figures {
            items,
            bytes,
            free_bytes: free,
        };
        assert_eq!(due(&items, None, t0, &at(10, 0, None)), None);
        assert_eq!(
            due(&items, None, t0, &at(11, 0, None)),
            Some(Trigger::Items)
        );
        assert_eq!(due(&bytes, None, t0, &at(0, 1000, None)), None);
        assert_eq!(
            due(&bytes, None, t0, &at(0, 1001, None)),
            Some(Trigger::Bytes)
        );
        assert_eq!(due(&free, None, t0, &at(0, 0, None)), None, "unknown free");
        assert_eq!(due(&free, None, t0, &at(0, 0, Some(500))), None);
        assert_eq!(
            due(&free, None, t0, &at(0, 0, Some(499))),
            Some(Trigger::FreeSpace)
        );
        let gap = RETRIGGER_GAP - Duration::from_secs(1);
        assert_eq!(due(&items, Some(t0), t0 + gap, &at(99, 0, None)), None);
        assert_eq!(
            due(&items, Some(t0), t0 + RETRIGGER_GAP, &at(99, 0, None)),
            Some(Trigger::Items)
        );
    }
}
