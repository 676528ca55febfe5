//! Human units shared by the alerts, the CLI and the menu-bar app.

/// Whole seconds since the Unix epoch, as every JSON `*_unix_secs` field and the history DB write
/// times; 0 for a time before 1970.
pub fn unix_secs(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `n` bytes in binary units (1 KiB = 1024 B) with one decimal above bytes: `0 B`, `1023 B`,
/// `1.5 KiB`, `3.0 GiB`, up to EiB (`u64::MAX` reads `16.0 EiB`). Negative amounts (a shrink)
/// keep their sign: `-50.0 MiB`. Callers with a `u64` pass `n.into()`.
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

/// `secs` seconds as at most two adjacent units, largest first, rounded down: `0 s`, `45 s`,
/// `5 min`, `1 h 30 min`, `1 d`, `2 d 4 h` (`1 d 5 min` reads as noise: `1 d`). The one form of a
/// duration in every text CLI prints, alert and keep reason says, and the window shows (the UI's
/// `formatDuration` is the same).
pub fn format_duration(secs: u64) -> String {
    const STEPS: [(u64, &str); 4] = [(86_400, "d"), (3600, "h"), (60, "min"), (1, "s")];
    if secs == 0 {
        return "0 s".to_owned();
    }
    let mut rest = secs;
    let mut parts: Vec<String> = Vec::with_capacity(2);
    for (size, name) in STEPS {
        if rest >= size {
            parts.push(format!("{} {name}", rest / size));
            rest %= size;
            if parts.len() == 2 {
                break;
            }
        } else if parts.len() == 1 {
            break;
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::{format_bytes, format_duration};

    #[test]
    fn durations_read_as_at_most_two_adjacent_units() {
        assert_eq!(format_duration(0), "0 s");
        assert_eq!(format_duration(45), "45 s");
        assert_eq!(format_duration(300), "5 min");
        assert_eq!(format_duration(5400), "1 h 30 min");
        assert_eq!(format_duration(86_400), "1 d");
        assert_eq!(format_duration(86_400 + 300), "1 d");
        assert_eq!(format_duration(2 * 86_400 + 4 * 3600 + 59), "2 d 4 h");
        assert_eq!(format_duration(2_592_000), "30 d");
    }

    #[test]
    fn bytes_use_binary_units_with_one_decimal() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1024), "1.0 KiB");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(5 * 1024 * 1024), "5.0 MiB");
        // 104_858 B is 0.1 MiB (104_857.6) rounded up.
        assert_eq!(format_bytes(5 * 1024 * 1024 + 104_858), "5.1 MiB");
        assert_eq!(format_bytes(3 << 30), "3.0 GiB");
        assert_eq!(format_bytes((3 << 30) + (512 << 20)), "3.5 GiB");
        assert_eq!(format_bytes(u64::MAX.into()), "16.0 EiB");
    }

    #[test]
    fn negative_amounts_keep_their_sign() {
        assert_eq!(format_bytes(-1), "-1 B");
        assert_eq!(format_bytes(-(50 << 20)), "-50.0 MiB");
    }
}

/// Serde for a `Duration` written as a humantime string (`"90m"`, `"1h 30m"`, `"3d"`), in whole
/// seconds, for config fields (`#[serde(with = "crate::units::duration_text")]`).
///
/// # Errors
/// Deserializing fails with `bad duration "<text>": <why> (write e.g. "30m", "6h", "3d")`.
pub mod duration_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `d`, truncated to whole seconds, as a humantime string.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        let whole = Duration::from_secs(d.as_secs());
        s.serialize_str(&humantime::format_duration(whole).to_string())
    }

    /// Reads a humantime string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(|e| {
            serde::de::Error::custom(format!(
                "bad duration {s:?}: {e} (write e.g. \"30m\", \"6h\", \"3d\")"
            ))
        })
    }
}
