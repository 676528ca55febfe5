//! The words of the alerts: short, naming the producer, the amount, the rate and what to do.

use std::time::Duration;

/// `n` bytes in binary units with one decimal (`512 B`, `1.5 KiB`, `3.0 GiB`); negative values
/// keep their sign.
pub fn format_bytes(n: i128) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let sign = if n < 0 { "-" } else { "" };
    let abs = n.unsigned_abs();
    if abs < 1024 {
        return format!("{sign}{abs} B");
    }
    let mut unit = 0;
    let mut scaled = abs as f64 / 1024.0;
    while scaled >= 1024.0 && unit + 1 < UNITS.len() {
        scaled /= 1024.0;
        unit += 1;
    }
    format!("{sign}{scaled:.1} {}", UNITS[unit])
}

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
