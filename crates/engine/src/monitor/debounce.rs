//! The debounce: what changed in each root since the last update (the dirty sets), and when to
//! re-measure it. The quiet time starts at the first event of a burst and is not extended by the
//! events that follow, so a steady stream of events still gets its re-measures.
//!
//! Pure bookkeeping: no I/O, the time is passed in. It belongs with the watch layer
//! (docs/architecture.md, "Modules": `watch`); it lives here until the watch module can take it
//! without a conflict.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

/// Past this many dirty paths in one root, a rescan of the root is cheaper than re-measures.
pub(super) const MAX_DIRTY: usize = 200_000;

/// What changed in one root since the last update.
#[derive(Debug, Default)]
pub(super) struct Dirty {
    /// Canonical item paths to re-measure.
    pub(super) items: BTreeSet<PathBuf>,
    /// New dirs (not themselves items) to search for claimed items down to the rules' depth.
    pub(super) discover: BTreeSet<PathBuf>,
    /// The root must be rescanned (rescan flag, watcher error, too many changes).
    pub(super) rescan: bool,
    /// The root dir itself was touched (removed, renamed, attributes).
    pub(super) root_touched: bool,
}

impl Dirty {
    /// True when nothing changed.
    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty() && self.discover.is_empty() && !self.rescan && !self.root_touched
    }
}

/// The dirty sets of every root and the debounce deadline.
#[derive(Debug)]
pub(super) struct Debounce {
    dirty: Vec<Dirty>,
    deadline: Option<Instant>,
    quiet: Duration,
}

impl Debounce {
    /// Empty dirty sets for `roots` roots, re-measured `quiet` after the first event of a burst.
    pub(super) fn new(roots: usize, quiet: Duration) -> Debounce {
        Debounce {
            dirty: (0..roots).map(|_| Dirty::default()).collect(),
            deadline: None,
            quiet,
        }
    }

    /// The dirty set of root `i`, to add to.
    pub(super) fn root(&mut self, i: usize) -> &mut Dirty {
        &mut self.dirty[i]
    }

    /// When root `i` holds more than `max` dirty paths, drops them and flags a rescan of the root
    /// instead; returns true then.
    pub(super) fn overflow_to_rescan(&mut self, i: usize, max: usize) -> bool {
        let d = &mut self.dirty[i];
        if d.items.len() + d.discover.len() <= max {
            return false;
        }
        d.items.clear();
        d.discover.clear();
        d.rescan = true;
        true
    }

    /// Starts the quiet time at `now` when something is dirty and no quiet time runs yet.
    pub(super) fn arm(&mut self, now: Instant) {
        if self.deadline.is_none() && self.dirty.iter().any(|d| !d.is_empty()) {
            // `quiet` is bounded by the config; a far one saturates to a day rather than panic.
            self.deadline = Some(
                now.checked_add(self.quiet)
                    .unwrap_or_else(|| now + Duration::from_secs(86_400)),
            );
        }
    }

    /// When the dirty items are due for a re-measure (`None`: nothing waits).
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// True when the deadline has passed at `now`.
    pub(super) fn is_due(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| d <= now)
    }

    /// Clears the deadline if it has passed at `now`; returns true then (time to re-measure).
    pub(super) fn take_due(&mut self, now: Instant) -> bool {
        let due = self.is_due(now);
        if due {
            self.deadline = None;
        }
        due
    }

    /// Clears the deadline (the dirty sets are being processed now).
    pub(super) fn cancel(&mut self) {
        self.deadline = None;
    }

    /// Takes the dirty set of root `i`, leaving it empty.
    pub(super) fn take(&mut self, i: usize) -> Dirty {
        std::mem::take(&mut self.dirty[i])
    }

    /// Forgets what changed in root `i` (it is rescanned, or gone).
    pub(super) fn forget(&mut self, i: usize) {
        self.dirty[i] = Dirty::default();
    }

    /// Puts `dirty` back as root `i`'s set, to be processed no later than `due`.
    pub(super) fn defer(&mut self, i: usize, dirty: Dirty, due: Instant) {
        self.dirty[i] = dirty;
        self.deadline = Some(self.deadline.map_or(due, |d| d.min(due)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_millis(500);

    #[test]
    fn nothing_dirty_arms_no_deadline() {
        let mut d = Debounce::new(2, QUIET);
        d.arm(Instant::now());
        assert_eq!(d.deadline(), None);
    }

    #[test]
    fn the_quiet_time_starts_at_the_first_event_and_is_not_extended() {
        let t0 = Instant::now();
        let mut d = Debounce::new(1, QUIET);
        d.root(0).items.insert("/r/a".into());
        d.arm(t0);
        d.root(0).items.insert("/r/b".into());
        d.arm(t0 + Duration::from_millis(400));
        assert_eq!(d.deadline(), Some(t0 + QUIET));
        assert!(!d.take_due(t0 + Duration::from_millis(499)));
        assert!(d.take_due(t0 + QUIET));
        assert_eq!(d.deadline(), None);
        assert_eq!(d.take(0).items.len(), 2);
        assert!(d.take(0).is_empty());
    }

    #[test]
    fn a_deferred_root_keeps_the_earliest_deadline() {
        let t0 = Instant::now();
        let mut d = Debounce::new(2, QUIET);
        let dirty = Dirty {
            rescan: true,
            ..Dirty::default()
        };
        d.defer(0, dirty, t0 + Duration::from_secs(30));
        d.defer(1, Dirty::default(), t0 + Duration::from_secs(10));
        assert_eq!(d.deadline(), Some(t0 + Duration::from_secs(10)));
        assert!(d.take(0).rescan);
    }

    #[test]
    fn too_many_dirty_paths_become_a_rescan() {
        let mut d = Debounce::new(1, QUIET);
        d.root(0).items.insert("/r/a".into());
        d.root(0).discover.insert("/r/b".into());
        assert!(!d.overflow_to_rescan(0, 2));
        d.root(0).items.insert("/r/c".into());
        assert!(d.overflow_to_rescan(0, 2));
        let dirty = d.take(0);
        assert!(dirty.rescan && dirty.items.is_empty() && dirty.discover.is_empty());
    }
}
