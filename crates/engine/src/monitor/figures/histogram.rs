//! [`AgeHistogram`]: per producer, the items a reclaim could take but for their age, in buckets of
//! absolute time, so "what would a reclaim at threshold T take now" is answered without walking
//! the items, and stays right as time passes.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::units::unix_secs;

/// Items and bytes of a set of items.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Take {
    /// Items (a count).
    pub items: u64,
    /// Their allocated bytes.
    pub allocated_bytes: u64,
    /// Their freeable bytes (allocated less blocks shared with clones).
    pub freeable_bytes: u64,
}

impl Take {
    fn add(&mut self, other: &Take) {
        self.items += other.items;
        self.allocated_bytes += other.allocated_bytes;
        self.freeable_bytes += other.freeable_bytes;
    }
}

/// Bucket width for an item `age_secs` old when the histogram is built: a minute under a day, an
/// hour under 30 days, a day beyond.
fn width_for(age_secs: u64) -> u64 {
    const DAY: u64 = 86_400;
    if age_secs < DAY {
        60
    } else if age_secs < 30 * DAY {
        3_600
    } else {
        DAY
    }
}

/// One producer's histogram: buckets keyed by (start, width), Unix seconds, of the items' age
/// reference (the later of the newest mtime and the name's timestamp: `now − age`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgeHistogram {
    /// The rule's floor (`min_age_secs`): no threshold takes an item younger.
    pub floor_secs: u64,
    buckets: BTreeMap<(u64, u64), Take>,
}

impl AgeHistogram {
    /// A histogram for a rule whose floor is `floor_secs`.
    pub fn new(floor_secs: u64) -> AgeHistogram {
        AgeHistogram {
            floor_secs,
            buckets: BTreeMap::new(),
        }
    }

    /// Adds an item `age_secs` old at `now` with its bytes.
    pub fn add(
        &mut self,
        age_secs: u64,
        allocated_bytes: u64,
        freeable_bytes: u64,
        now: SystemTime,
    ) {
        let reference = unix_secs(now).saturating_sub(age_secs);
        let width = width_for(age_secs);
        let start = reference - reference % width;
        self.buckets.entry((start, width)).or_default().add(&Take {
            items: 1,
            allocated_bytes,
            freeable_bytes,
        });
    }

    /// What a reclaim at `threshold_secs` would take at `now` (any time after the histogram was
    /// built, until the next refresh): the items at least max(threshold, floor) old. Exact to the
    /// bucket width: a bucket counts whole when its start is old enough, so items up to one bucket
    /// (a minute for items under a day old when built, an hour under 30 days, a day beyond)
    /// younger than the threshold may be counted. Items younger than the floor when the histogram
    /// was built are not in it (their owner was not looked at): the figures are refreshed when the
    /// first of them reaches its floor ([`super::Figures::next_crossing`]).
    pub fn take_at(&self, threshold_secs: u64, now: SystemTime) -> Take {
        let needed = threshold_secs.max(self.floor_secs);
        let Some(cutoff) = unix_secs(now).checked_sub(needed) else {
            return Take::default();
        };
        let mut out = Take::default();
        for (_, t) in self.buckets.range(..=(cutoff, u64::MAX)) {
            out.add(t);
        }
        out
    }
}
