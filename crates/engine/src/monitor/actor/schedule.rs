//! When the dirty items are re-measured: at the end of the debounce's quiet time, at once for a
//! flush, a resume or a reclaim, and rescans the watcher asks for no more often than
//! [`MIN_RESCAN_GAP`] per root.

use std::time::Duration;

use tokio::time::Instant;

use super::Actor;

/// Rescans that the watcher asks for (queue overflow, coalesced events) run at most this often per
/// root outside a flush: a busy temp dir (a build writing into it) would otherwise be rescanned back
/// to back. The changes are not lost: the rescan runs when the gap has passed.
const MIN_RESCAN_GAP: Duration = Duration::from_secs(30);

impl Actor {
    /// The next time the loop must wake up by itself: the debounce deadline or a flush timeout.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        let flush = self.flushes.iter().map(|f| f.deadline).min();
        match (self.debounce.deadline(), flush) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// After a batch of events: starts the quiet time, re-measures if it is already over, answers
    /// the flushes whose markers came back.
    pub(super) async fn after_events(&mut self) {
        self.debounce.arm(Instant::now());
        // Under a steady stream of events the timer branch may not get its turn.
        if self.debounce.is_due(Instant::now()) {
            self.on_wake().await;
        }
        self.finish_flushes(false).await;
    }

    /// The loop woke up by itself: re-measures when the quiet time is over, expires late flushes.
    pub(super) async fn on_wake(&mut self) {
        let now = Instant::now();
        if self.debounce.take_due(now) && !self.paused {
            self.process_dirty(false).await;
        }
        let expired = self.flushes.iter().any(|f| f.deadline <= now);
        if expired {
            self.finish_flushes(true).await;
        }
    }

    /// Re-measures the dirty items of every root (and rescans flagged roots), then publishes.
    /// Without `now_please`, a root rescanned less than [`MIN_RESCAN_GAP`] ago keeps its rescan
    /// pending until the gap has passed; a flush, a resume or a reclaim pass `true`.
    pub(super) async fn process_dirty(&mut self, now_please: bool) {
        self.debounce.cancel();
        let mut changed = false;
        for i in 0..self.roots.len() {
            let dirty = self.debounce.take(i);
            if dirty.is_empty() {
                continue;
            }
            if dirty.root_touched && !self.roots[i].root.canonical.is_dir() {
                changed = true;
                self.mark_gone(i);
                continue;
            }
            let since = self.last_poll[i].elapsed();
            if dirty.rescan && !now_please && since < MIN_RESCAN_GAP {
                let due = Instant::now() + (MIN_RESCAN_GAP - since);
                self.debounce.defer(i, dirty, due);
                continue;
            }
            changed = true;
            if dirty.rescan {
                self.rescan_root(i).await;
                continue;
            }
            self.remeasure(i, dirty).await;
        }
        if changed {
            self.analysis_stale = true;
            self.after_update(false).await;
        }
    }
}
