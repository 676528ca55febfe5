//! Human text of numbers, the one home of each rule: amounts of bytes ([`format_bytes`]), exact
//! sizes as typed and shown in settings ([`parse_size`], [`format_size`]), counts
//! ([`format_count`]), durations and ages ([`format_duration`], [`format_threshold`]), and whole
//! Unix seconds ([`unix_secs`]). The CLI, the tray, alerts, auto-reclaim and the window's Rust
//! side all call these; the window's TypeScript twins are tested against vectors written from
//! them (`ui/tests/generated/human.ts`).

/// Whole seconds since the Unix epoch, as every JSON `*_unix_secs` field and the history DB write
/// times; 0 for a time before 1970.
pub fn unix_secs(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The binary units above bytes, in order: 1 KiB = 1024 B, 1 MiB = 1024 KiB, ...
const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// `n` bytes in binary units, as every front end writes an amount (the window, the tray, the
/// CLI, alerts and notifications): below 1024 a whole number of bytes (`0 B`, `1023 B`); above,
/// the largest unit it reaches, with one decimal below 100 of that unit (`1.5 KiB`, `3.0 GiB`)
/// and none from 100 up (`105 MiB`, `1023 GiB`), rounded half up. A value that rounds to 1024 of
/// a unit reads as `1.0` of the next (`1.0 GiB` for a byte under 1 GiB), up to EiB (`u64::MAX` is
/// `16.0 EiB`). A negative amount (a shrink) keeps its sign as a minus sign, U+2212: `−50.0 MiB`.
/// Callers with a `u64` pass `n.into()`. The UI's `formatBytes` is tested against vectors of this
/// function (`ui/tests/generated/human.ts`).
pub fn format_bytes(n: i128) -> String {
    let sign = if n < 0 { "\u{2212}" } else { "" };
    let abs = n.unsigned_abs();
    if abs < 1024 {
        return format!("{sign}{abs} B");
    }
    let mut unit = 0;
    while unit + 1 < UNITS.len() && abs >= 1u128 << (10 * (unit + 2)) {
        unit += 1;
    }
    // `abs / div`, rounded half up to tenths and to a whole, in integers (no float error).
    let div = 1u128 << (10 * (unit + 1));
    let (q, r) = (abs / div, abs % div);
    let tenths = q * 10 + (20 * r + div) / (2 * div);
    if tenths < 1000 {
        return format!("{sign}{}.{} {}", tenths / 10, tenths % 10, UNITS[unit]);
    }
    let whole = q + (2 * r + div) / (2 * div);
    if whole >= 1024 && unit + 1 < UNITS.len() {
        // 1023.5 of a unit or more: at least 0.9995 of the next, which reads `1.0`.
        return format!("{sign}1.0 {}", UNITS[unit + 1]);
    }
    format!("{sign}{whole} {}", UNITS[unit])
}

/// `n` with a comma between each group of three digits: `999`, `1,000`, `20,003`.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// [`format_count`] of `n` and `noun`, singular for 1 only: `1 item`, `0 items`,
/// `20,003 items`.
pub fn format_count_of(n: u64, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", format_count(n))
}

/// A measured span (growth over it, a time to disk full) as [`format_duration`] writes it, in
/// whole minutes from a minute up (`45 s`, `2 min`, `6 h`, `1 h 30 min`): seconds of a span
/// sampled minutes apart are noise.
pub fn format_span(secs: u64) -> String {
    format_duration(if secs >= 60 { secs / 60 * 60 } else { secs })
}

/// A reclaim threshold as typed: a humantime duration (`90m`, `1h30m`, `1 h 30 min`, `2 d`,
/// `1.5h`; units are case-sensitive: `m` is minutes, `M` months) in whole seconds, rounded down.
/// `None` when the text is not a duration or is under a second (a zero threshold would reclaim
/// items still being written); [`read_threshold`] says why.
pub fn parse_threshold(text: &str) -> Option<u64> {
    read_threshold(text).ok()
}

/// A threshold that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad duration {text:?}: {why} (write e.g. \"90m\", \"12h\" or \"2d 6h\")")]
pub struct ThresholdError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

/// [`parse_threshold`] with the reason a text is refused: the one reader of thresholds, for the
/// CLI, the config and the window (which sends the text as typed and shows this error).
///
/// # Errors
/// [`ThresholdError`] for an empty text, a text humantime cannot read (its own reason: an
/// unknown unit, a number too large), or a duration under a second.
pub fn read_threshold(text: &str) -> Result<u64, ThresholdError> {
    let bad = |why: String| ThresholdError {
        text: text.to_owned(),
        why,
    };
    if text.trim().is_empty() {
        return Err(bad("it is empty".to_owned()));
    }
    let d = humantime::parse_duration(text.trim()).map_err(|e| bad(e.to_string()))?;
    match d.as_secs() {
        0 => Err(bad(
            "it is under a second, and a zero threshold would reclaim items still being written"
                .to_owned(),
        )),
        s => Ok(s),
    }
}

/// An age threshold exactly, in the largest unit that divides it: `90 s`, `5 min`, `90 min`,
/// `1 h`, `3 d` (a threshold is a setting, so it is never rounded as [`format_duration`] rounds).
pub fn format_threshold(secs: u64) -> String {
    match secs {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{} d", s / 86_400),
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
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
    use super::*;

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

    /// Hand-computed: 1 KiB = 1024 B, 1 MiB = 1_048_576 B, 1 GiB = 1_073_741_824 B.
    #[test]
    fn binary_units_as_the_window_writes_them() {
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
        // The alert said "105.0 MiB" where the window said "105 MiB".
        assert_eq!(format_bytes(105 << 20), "105 MiB");
        // Below 99.95 MiB: one decimal; from 99.95 MiB it rounds to 100.0, so none.
        // 99.95 MiB is 104_805_171.2 B.
        assert_eq!(format_bytes(104_805_171), "99.9 MiB"); // 99.949999... MiB
        assert_eq!(format_bytes(104_805_172), "100 MiB"); // 99.950000... MiB

        // 231.1 MiB reads 231 MiB; 1023.5 MiB and up reads as the next unit.
        assert_eq!(format_bytes((231 << 20) + 104_858), "231 MiB");
        assert_eq!(format_bytes((1023 << 20) + (1 << 19) - 1), "1023 MiB"); // 1023.49999 MiB
        assert_eq!(format_bytes((1023 << 20) + (1 << 19)), "1.0 GiB"); // 1023.5 MiB
        assert_eq!(format_bytes((1 << 30) - 1), "1.0 GiB");
        assert_eq!(format_bytes((1023 << 20) + (900 << 20)), "1.9 GiB"); // 1923 MiB
        assert_eq!(format_bytes((1023 << 30) + (900 << 30)), "1.9 TiB"); // 1923 GiB
                                                                         // Ties round half up: 6400 B is 6.25 KiB.
        assert_eq!(format_bytes(6400), "6.3 KiB");
        assert_eq!(format_bytes(6348), "6.2 KiB"); // 6.199 KiB
    }

    #[test]
    fn negative_amounts_keep_their_sign() {
        assert_eq!(format_bytes(-1), "\u{2212}1 B");
        assert_eq!(format_bytes(-(50 << 20)), "\u{2212}50.0 MiB");
        assert_eq!(format_bytes(-(200 << 20)), "\u{2212}200 MiB");
    }

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1000), "1,000");
        assert_eq!(format_count(20_003), "20,003");
        assert_eq!(format_count(699_300), "699,300");
        assert_eq!(format_count(1_234_567), "1,234,567");
        assert_eq!(format_count(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(format_count_of(1, "item"), "1 item");
        assert_eq!(format_count_of(0, "item"), "0 items");
        assert_eq!(format_count_of(20_003, "item"), "20,003 items");
        assert_eq!(format_count_of(1_234_567, "error"), "1,234,567 errors");
    }

    #[test]
    fn spans_are_whole_minutes_from_a_minute_up() {
        assert_eq!(format_span(45), "45 s");
        assert_eq!(format_span(150), "2 min");
        assert_eq!(format_span(6 * 3600 + 59), "6 h");
        assert_eq!(format_span(5400 + 30), "1 h 30 min");
    }

    #[test]
    fn thresholds_read_as_humantime_in_whole_seconds() {
        assert_eq!(parse_threshold("90m"), Some(5400));
        assert_eq!(parse_threshold("1h30m"), Some(5400));
        assert_eq!(parse_threshold("1 h 30 min"), Some(5400));
        assert_eq!(parse_threshold("1.5h"), Some(5400));
        assert_eq!(parse_threshold(" 2 d "), Some(172_800));
        assert_eq!(parse_threshold("1w"), Some(604_800));
        assert_eq!(parse_threshold("0.5s 0.5s"), Some(1));
        assert_eq!(parse_threshold("500ms"), None);
        assert_eq!(parse_threshold("0h"), None);
        assert_eq!(parse_threshold("12"), None);
        assert_eq!(parse_threshold("12H"), None);
        assert_eq!(parse_threshold(""), None);
    }

    #[test]
    fn a_refused_threshold_says_why_and_how_to_write_one() {
        let why = |t: &str| read_threshold(t).expect_err(t).to_string();
        assert_eq!(
            why(" "),
            "bad duration \" \": it is empty (write e.g. \"90m\", \"12h\" or \"2d 6h\")"
        );
        assert!(why("12 parsecs")
            .starts_with("bad duration \"12 parsecs\": unknown time unit \"parsecs\""));
        assert!(why("12").contains("time unit needed"), "{}", why("12"));
        assert!(why("500ms").contains("under a second"));
        assert_eq!(read_threshold("2d 6h"), Ok(194_400));
    }

    #[test]
    fn ages_use_the_largest_exact_unit() {
        assert_eq!(format_threshold(0), "0 s");
        assert_eq!(format_threshold(90), "90 s");
        assert_eq!(format_threshold(300), "5 min");
        assert_eq!(format_threshold(5400), "90 min");
        assert_eq!(format_threshold(3600), "1 h");
        assert_eq!(format_threshold(259_200), "3 d");
    }

    #[test]
    fn times_before_1970_are_0_unix_secs() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::new(1_700_000_000, 999_999_999);
        assert_eq!(unix_secs(t), 1_700_000_000);
        assert_eq!(
            unix_secs(std::time::UNIX_EPOCH - std::time::Duration::from_secs(1)),
            0
        );
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

mod size;

pub use size::{bytes_text, format_size, opt_bytes_text, parse_size, SizeError};
