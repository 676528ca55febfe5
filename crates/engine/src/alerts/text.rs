//! The words of the alerts: short, naming the producer, the amount, the rate and what to do.

use std::time::Duration;

/// A duration rounded to minutes (or seconds under a minute), humantime style (`1h 30m`).
pub(crate) fn format_span(d: Duration) -> String {
    let secs = d.as_secs();
    let rounded = if secs >= 60 { secs / 60 * 60 } else { secs };
    humantime::format_duration(Duration::from_secs(rounded)).to_string()
}

/// The `--older-than` to suggest for a producer: at least an hour, and at least its rule's floor.
pub(crate) fn suggested_older_than(min_age_secs: u64) -> String {
    let secs = min_age_secs.max(3600);
    humantime::format_duration(Duration::from_secs(secs.div_ceil(3600) * 3600)).to_string()
}
