//! How often a root that cannot be watched by events is polled and rescanned in full: never more
//! often than [`POLL_INTERVAL`] and every [`POLL_FULL_EVERY`]th poll, and never so often that the
//! work takes more than a small share of the time, whatever the root's size.
//!
//! A poll of a root of 700,000 items re-stats every one of them (1.8 s here); a full rescan walks
//! them all (15-60 s). At a fixed 60 s that is 3% of a core for the polls and more for the rescans,
//! all day, on a machine where nothing changes. So each kind of work is paced by its own last
//! cost: the next poll waits at least [`POLL_COST_RATIO`] times what the last poll took (at most
//! 1% of the time), the next full rescan at least [`FULL_COST_RATIO`] times what the last one took
//! (a scan walks on several threads; at most 0.5% of the wall time). A small root keeps the fixed
//! intervals; a big one is looked at less often, and the snapshot's watch error says so.

use std::time::Duration;

use tokio::time::Instant;

use super::{POLL_FULL_EVERY, POLL_INTERVAL};

/// A poll waits at least this many times the last poll's cost.
pub const POLL_COST_RATIO: u32 = 100;
/// A full rescan of a polling root waits at least this many times the last full scan's cost.
pub const FULL_COST_RATIO: u32 = 200;

/// The pace of one root's polls and full rescans.
#[derive(Debug, Clone)]
pub(super) struct Pace {
    /// When the root was last polled or scanned.
    pub last: Instant,
    /// When it was last scanned in full.
    pub last_full: Instant,
    /// Wall time of the last poll.
    pub poll_cost: Duration,
    /// Wall time of the last full scan.
    pub full_cost: Duration,
}

impl Pace {
    /// A root scanned at `now` (its first scan still to come: no cost known yet).
    pub fn new(now: Instant) -> Pace {
        Pace {
            last: now,
            last_full: now,
            poll_cost: Duration::ZERO,
            full_cost: Duration::ZERO,
        }
    }

    /// Time between two polls: [`POLL_INTERVAL`], or [`POLL_COST_RATIO`] times the last poll's cost
    /// when that is longer.
    pub fn poll_interval(&self) -> Duration {
        POLL_INTERVAL.max(self.poll_cost * POLL_COST_RATIO)
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

    /// Whether the poll due at `now` should be a full rescan.
    pub fn full_due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_full) >= self.full_interval()
    }

    /// A poll that took `cost` ended at `now`.
    pub fn polled(&mut self, now: Instant, cost: Duration) {
        self.last = now;
        self.poll_cost = cost;
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
    fn a_small_root_keeps_the_fixed_intervals() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.scanned(t0, MS(40));
        p.polled(t0, MS(3));
        assert_eq!(p.poll_interval(), POLL_INTERVAL);
        assert_eq!(p.full_interval(), POLL_INTERVAL * POLL_FULL_EVERY);
        assert!(!p.poll_due(t0 + S(59)));
        assert!(p.poll_due(t0 + S(60)));
        assert!(!p.full_due(t0 + S(599)));
        assert!(p.full_due(t0 + S(600)));
    }

    #[test]
    fn a_costly_poll_spaces_the_next_one_by_a_hundred_times_its_cost() {
        // 700,000 items: a poll re-stats them all in about 1.8 s.
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.scanned(t0, S(15));
        p.polled(t0 + S(60), MS(1_800));
        assert_eq!(p.poll_interval(), S(180));
        assert!(!p.poll_due(t0 + S(60) + S(179)));
        assert!(p.poll_due(t0 + S(60) + S(180)));
        // Ten polls of 180 s (1,800 s) are less than 200 x 15 s: the rescan's own cost decides.
        assert_eq!(p.full_interval(), S(3_000));
        assert!(!p.full_due(t0 + S(2_999)));
        assert!(p.full_due(t0 + S(3_000)));
    }

    #[test]
    fn the_share_of_time_spent_polling_stays_under_one_percent() {
        for cost_ms in [1, 50, 600, 1_800, 20_000] {
            let mut p = Pace::new(Instant::now());
            p.polled(p.last, MS(cost_ms));
            let share = MS(cost_ms).as_secs_f64() / p.poll_interval().as_secs_f64();
            assert!(share <= 0.01, "{cost_ms} ms every {:?}", p.poll_interval());
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
