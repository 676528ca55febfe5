//! The range of every duration and count the config file (and the app's settings) accepts, checked
//! while the file is read, so an out-of-range value is an error naming the key, the value, the
//! range and the line, never a value the monitor later overflows on (`every =
//! "18446744073709551615s"` once panicked the monitor task adding it to an instant) or spins on
//! (`every = "1ms"` ran a rule 80 times in 20 s).
//!
//! Each bounded field names one module here in `#[serde(with = "...")]`; the module's `MIN` and
//! `MAX` are the range, inclusive.

use std::fmt::Display;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

const MINUTE: u64 = 60;
const HOUR: u64 = 3600;
const DAY: u64 = 24 * HOUR;

/// `secs` the way the bounds are written in errors: `1s`, `10m`, `6h`, `365d`.
pub fn bound_text(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_nanos() != 0 {
        format!("{}ms", d.as_millis())
    } else if s != 0 && s % DAY == 0 {
        format!("{}d", s / DAY)
    } else if s != 0 && s % HOUR == 0 {
        format!("{}h", s / HOUR)
    } else if s != 0 && s % MINUTE == 0 {
        format!("{}m", s / MINUTE)
    } else {
        format!("{s}s")
    }
}

/// Reads a humantime duration for `key` and checks it is within `min..=max`.
///
/// # Errors
/// `bad duration` when the text is not a duration; `key = "text" is out of range` else.
fn duration_in<'de, D: Deserializer<'de>>(
    d: D,
    key: &str,
    min: Duration,
    max: Duration,
) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    let v = humantime::parse_duration(&s).map_err(|e| {
        serde::de::Error::custom(format!(
            "bad duration {s:?} for {key}: {e} (write e.g. \"30m\", \"6h\", \"3d\")"
        ))
    })?;
    if v < min || v > max {
        return Err(serde::de::Error::custom(format!(
            "{key} = {s:?} is out of range: write a duration between {} and {}",
            bound_text(min),
            bound_text(max)
        )));
    }
    Ok(v)
}

/// Reads a whole number for `key` and checks it is within `min..=max`.
///
/// # Errors
/// The number's own error (not a number, negative); `key = n is out of range` else.
fn count_in<'de, D, T>(d: D, key: &str, min: T, max: T) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + PartialOrd + Display + Copy,
{
    let v = T::deserialize(d)?;
    if v < min || v > max {
        return Err(serde::de::Error::custom(format!(
            "{key} = {v} is out of range: write a number between {min} and {max}"
        )));
    }
    Ok(v)
}

/// A bounded humantime duration field: `name` is the module, `key` the config key.
macro_rules! duration_field {
    ($(#[$doc:meta])* $name:ident, $key:literal, $min:expr, $max:expr) => {
        $(#[$doc])*
        pub mod $name {
            use std::time::Duration;

            #[allow(unused_imports)]
            use super::{secs, DAY, HOUR, MINUTE};

            /// The shortest value accepted.
            pub const MIN: Duration = $min;
            /// The longest value accepted.
            pub const MAX: Duration = $max;

            /// Writes the duration as humantime text (whole seconds).
            pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
                crate::units::duration_text::serialize(d, s)
            }

            /// Reads humantime text within `MIN..=MAX`.
            pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
                super::duration_in(d, $key, MIN, MAX)
            }

            /// The same, for an optional key (`None` when absent: with `#[serde(default)]`).
            pub mod opt {
                use std::time::Duration;

                /// Writes `Some` as humantime text, `None` as nothing.
                pub fn serialize<S: serde::Serializer>(
                    d: &Option<Duration>,
                    s: S,
                ) -> Result<S::Ok, S::Error> {
                    match d {
                        Some(d) => crate::units::duration_text::serialize(d, s),
                        None => s.serialize_none(),
                    }
                }

                /// Reads humantime text within the range.
                pub fn deserialize<'de, D: serde::Deserializer<'de>>(
                    d: D,
                ) -> Result<Option<Duration>, D::Error> {
                    super::deserialize(d).map(Some)
                }
            }
        }
    };
}

/// A bounded whole-number field of type `ty`.
macro_rules! count_field {
    ($(#[$doc:meta])* $name:ident, $key:literal, $ty:ty, $min:expr, $max:expr) => {
        $(#[$doc])*
        pub mod $name {
            #[allow(unused_imports)]
            use super::{DAY, HOUR, MINUTE};

            /// The least value accepted.
            pub const MIN: $ty = $min;
            /// The greatest value accepted.
            pub const MAX: $ty = $max;

            /// Writes the number.
            pub fn serialize<S: serde::Serializer>(v: &$ty, s: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(v, s)
            }

            /// Reads a number within `MIN..=MAX`.
            pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                super::count_in::<D, $ty>(d, $key, MIN, MAX)
            }
        }
    };
}

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

duration_field!(
    /// `[reclaim] older_than` and `[[auto_reclaim]] older_than`: 0 (everything) to 10 years.
    older_than, "older_than", secs(0), secs(3650 * DAY)
);
duration_field!(
    /// `[[auto_reclaim]] every`: 1 s to 365 d (a rule is checked at most every second).
    every, "every", secs(1), secs(365 * DAY)
);
duration_field!(
    /// `[alerts] producer_growth_window`: 1 m to 30 d (the history keeps about that much).
    growth_window, "producer_growth_window", secs(MINUTE), secs(30 * DAY)
);
duration_field!(
    /// `[alerts] unexplained_growth_window`: 1 m to 30 d.
    unexplained_window, "unexplained_growth_window", secs(MINUTE), secs(30 * DAY)
);
duration_field!(
    /// `[alerts] cooldown`: 0 (none) to 365 d.
    cooldown, "cooldown", secs(0), secs(365 * DAY)
);
duration_field!(
    /// `[alerts.crash_loop] crash_loop_window`: 1 s to 30 d.
    crash_loop_window, "crash_loop_window", secs(1), secs(30 * DAY)
);
duration_field!(
    /// `[alerts.crash_loop] crash_loop_cooldown`: 0 (none) to 365 d.
    crash_loop_cooldown, "crash_loop_cooldown", secs(0), secs(365 * DAY)
);
count_field!(
    /// `[watch] debounce_ms`: 0 to 600,000 (10 minutes).
    debounce_ms, "debounce_ms", u64, 0, 600_000
);
count_field!(
    /// `[monitor] sample_interval_secs`: 1 to 604,800 (7 days).
    sample_interval_secs, "sample_interval_secs", u64, 1, 7 * DAY
);
count_field!(
    /// `[alerts] disk_full_eta_min_hours`: 0 (off) to 8,760 (a year).
    disk_full_eta_min_hours, "disk_full_eta_min_hours", u64, 0, 8760
);
count_field!(
    /// `[alerts] producer_growth_items`: 0 (off) to a billion.
    producer_growth_items, "producer_growth_items", u64, 0, 1_000_000_000
);
count_field!(
    /// `[alerts] unexplained_growth_min_ratio`: 0 to 1,000.
    unexplained_growth_min_ratio, "unexplained_growth_min_ratio", u64, 0, 1000
);
count_field!(
    /// `[alerts.crash_loop] crash_loop_reports`: 0 (off) to 10,000.
    crash_loop_reports, "crash_loop_reports", u32, 0, 10_000
);
count_field!(
    /// `[[process_watch]] min_thread_rise`: 1 to 1,000,000.
    min_thread_rise, "min_thread_rise", u32, 1, 1_000_000
);
count_field!(
    /// `[[process_watch]] window_secs`: 1 to 604,800 (7 days).
    process_window_secs, "window_secs", u64, 1, 7 * DAY
);
count_field!(
    /// `[[process_watch]] sample_interval_secs`: 1 to 86,400 (a day).
    process_sample_interval_secs, "sample_interval_secs", u64, 1, DAY
);
