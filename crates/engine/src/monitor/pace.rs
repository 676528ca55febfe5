//! How often a root that cannot be watched by events is polled, swept and rescanned in full: never
//! more often than [`POLL_INTERVAL`] and every [`POLL_FULL_EVERY`]th poll, and never so often that
//! the work takes more than a small share of the time, whatever the root's size.
//!
//! A poll re-stats the dirs between the root and the items and the items written lately; a sweep
//! re-stats every item (700,000 items: 1.8 s here); a full rescan walks them all (15-60 s). At a
//! fixed 60 s, sweeps alone are 3% of a core, all day, on a machine where nothing changes. So each
//! kind of work is paced by its own last cost: the next poll waits at least [`POLL_COST_RATIO`]
//! times what the last poll took (at most 1% of the time), the next sweep [`SWEEP_COST_RATIO`]
//! times what the last sweep took (0.1%), the next full rescan [`FULL_COST_RATIO`] times what the
//! last one took (a scan walks on several threads; at most 0.5% of the wall time). A small root
//! sweeps at every poll and keeps the fixed intervals; a big one is swept and rescanned less often,
//! and the snapshot's watch error says so.

use std::time::Duration;

use tokio::time::Instant;

use super::{POLL_FULL_EVERY, POLL_INTERVAL};

/// A poll waits at least this many times the last poll's cost.
pub const POLL_COST_RATIO: u32 = 100;
/// A sweep (every item re-stat'ed) waits at least this many times the last sweep's cost.
pub const SWEEP_COST_RATIO: u32 = 1_000;
/// A full rescan of a polling root waits at least this many times the last full scan's cost.
pub const FULL_COST_RATIO: u32 = 200;

/// The pace of one root's polls and full rescans.
#[derive(Debug, Clone)]
pub(super) struct Pace {
    /// When the root was last polled or scanned.
    pub last: Instant,
    /// When it was last swept (every item re-stat'ed) or scanned in full.
    pub last_sweep: Instant,
    /// When it was last scanned in full.
    pub last_full: Instant,
    /// Wall time of the last poll that was not a sweep.
    pub poll_cost: Duration,
    /// Wall time of the last sweep.
    pub sweep_cost: Duration,
    /// Wall time of the last full scan.
    pub full_cost: Duration,
}

impl Pace {
    /// A root scanned at `now` (its first scan still to come: no cost known yet).
    pub fn new(now: Instant) -> Pace {
        Pace {
            last: now,
            last_sweep: now,
            last_full: now,
            poll_cost: Duration::ZERO,
            sweep_cost: Duration::ZERO,
            full_cost: Duration::ZERO,
        }
    }

    /// Time between two polls: [`POLL_INTERVAL`], or [`POLL_COST_RATIO`] times the last poll's cost
    /// when that is longer.
    pub fn poll_interval(&self) -> Duration {
        POLL_INTERVAL.max(self.poll_cost * POLL_COST_RATIO)
    }

    /// Time between two sweeps: a poll interval, or [`SWEEP_COST_RATIO`] times the last sweep's
    /// cost when that is longer.
    pub fn sweep_interval(&self) -> Duration {
        self.poll_interval().max(self.sweep_cost * SWEEP_COST_RATIO)
    }

    /// Time between two full rescans: [`POLL_FULL_EVERY`] poll intervals, or [`FULL_COST_RATIO`]
    /// times the last full scan's cost when that is longer.
    pub fn full_interval(&self) -> Duration {
        (self.poll_interval() * POLL_FULL_EVERY).max(self.full_cost * FULL_COST_RATIO)
    }

    /// Whether a poll is due at `now`.
    pub fn poll_due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last) >= self.poll_interval()
    }

    /// Whether the poll due at `now` should be a sweep.
    pub fn sweep_due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_sweep) >= self.sweep_interval()
    }

    /// Whether the poll due at `now` should be a full rescan.
    pub fn full_due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_full) >= self.full_interval()
    }

    /// A poll that took `cost` ended at `now`; with `swept`, it re-stat'ed every item.
    pub fn polled(&mut self, now: Instant, cost: Duration, swept: bool) {
        self.last = now;
        if swept {
            self.last_sweep = now;
            self.sweep_cost = cost;
        } else {
            self.poll_cost = cost;
        }
    }

    /// The root was looked at `now` without a cost to learn from (a scan that failed, a retry of
    /// its unwatched paths): the next poll waits a poll interval from now. `last_full` stays, so a
    /// failed scan is tried again as a full rescan.
    pub fn tried(&mut self, now: Instant) {
        self.last = now;
    }

    /// A full scan that took `cost` ended at `now`.
    pub fn scanned(&mut self, now: Instant, cost: Duration) {
        self.last = now;
        self.last_sweep = now;
        self.last_full = now;
        self.full_cost = cost;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;
    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn a_small_root_keeps_the_fixed_intervals_and_sweeps_at_every_poll() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.scanned(t0, MS(40));
        assert!(!p.poll_due(t0 + S(59)));
        assert!(p.poll_due(t0 + S(60)));
        assert!(p.sweep_due(t0 + S(60)));
        p.polled(t0 + S(60), MS(3), true);
        assert_eq!(p.poll_interval(), POLL_INTERVAL);
        assert_eq!(p.sweep_interval(), POLL_INTERVAL);
        assert_eq!(p.full_interval(), POLL_INTERVAL * POLL_FULL_EVERY);
        assert!(p.sweep_due(t0 + S(120)));
        assert!(!p.full_due(t0 + S(599)));
        assert!(p.full_due(t0 + S(600)));
    }

    #[test]
    fn a_costly_sweep_waits_a_thousand_times_its_cost_and_polls_go_on_between() {
        // 700,000 items: a sweep re-stats them all in about 1.8 s; a poll of the dirs and the
        // items written lately takes a few ms.
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.scanned(t0, S(15));
        // The first poll knows no sweep cost yet: it is a sweep.
        assert!(p.sweep_due(t0 + S(60)));
        p.polled(t0 + S(60), MS(1_800), true);
        assert_eq!(p.sweep_interval(), S(1_800));
        assert_eq!(
            p.poll_interval(),
            POLL_INTERVAL,
            "a sweep's cost does not space the polls"
        );
        assert!(p.poll_due(t0 + S(120)));
        assert!(!p.sweep_due(t0 + S(120)));
        p.polled(t0 + S(120), MS(4), false);
        assert_eq!(p.poll_interval(), POLL_INTERVAL);
        assert!(!p.sweep_due(t0 + S(60) + S(1_799)));
        assert!(p.sweep_due(t0 + S(60) + S(1_800)));
        // Ten polls of 60 s are less than 200 x 15 s: the rescan's own cost decides.
        assert_eq!(p.full_interval(), S(3_000));
        assert!(!p.full_due(t0 + S(2_999)));
        assert!(p.full_due(t0 + S(3_000)));
        // A full rescan is a sweep too.
        p.scanned(t0 + S(3_000), S(15));
        assert!(!p.sweep_due(t0 + S(3_060)));
    }

    #[test]
    fn a_costly_poll_spaces_the_next_one_by_a_hundred_times_its_cost() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.polled(t0, MS(1_800), false);
        assert_eq!(p.poll_interval(), S(180));
        assert!(!p.poll_due(t0 + S(179)));
        assert!(p.poll_due(t0 + S(180)));
    }

    #[test]
    fn the_share_of_time_spent_polling_sweeping_and_rescanning_stays_small() {
        for cost_ms in [1, 50, 600, 1_800, 20_000] {
            let mut p = Pace::new(Instant::now());
            p.polled(p.last, MS(cost_ms), false);
            let share = MS(cost_ms).as_secs_f64() / p.poll_interval().as_secs_f64();
            assert!(share <= 0.01, "{cost_ms} ms every {:?}", p.poll_interval());
            p.polled(p.last, MS(cost_ms * 3), true);
            let share = MS(cost_ms * 3).as_secs_f64() / p.sweep_interval().as_secs_f64();
            assert!(
                share <= 0.001,
                "sweep of {cost_ms}x3 ms every {:?}",
                p.sweep_interval()
            );
            p.scanned(p.last, MS(cost_ms * 10));
            let share = MS(cost_ms * 10).as_secs_f64() / p.full_interval().as_secs_f64();
            assert!(
                share <= 0.005,
                "{cost_ms}0 ms every {:?}",
                p.full_interval()
            );
        }
    }
}
