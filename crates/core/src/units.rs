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

/// Sizes as people type them: `50 MiB`, `1.5GiB`, `20 g`, `4096`. Binary units only (1 KiB =
/// 1024 B, as everywhere in CacheWatch); `MB`/`GB` are refused rather than guessed. The settings
/// show a size with [`format_size`] and read what the user typed with [`parse_size`], so the app
/// and the CLI read sizes one way.
/// The units of an exact size, smallest first, with their factor.
const SIZE_UNITS: [(&str, u64); 5] = [
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

/// A size that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad size {text:?}: {why} (write e.g. \"512 MiB\", \"20 GiB\" or a number of bytes)")]
pub struct SizeError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// The bytes `text` names: a number (decimals allowed: `1.5 GiB`), optional spaces, and an
/// optional unit `B`, `KiB`, `MiB`, `GiB`, `TiB` (any case; `K`, `M`, `G`, `T` alone mean the
/// same). A fraction of a byte is rounded to the nearest byte.
///
/// # Errors
/// [`SizeError`] for an empty text, a missing or negative number, an unknown unit, a decimal unit
/// (`MB`, `GB`: write `MiB`, `GiB`), or a size over `u64::MAX` bytes.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let bad = |why| SizeError {
        text: text.to_owned(),
        why,
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad("it is empty"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim());
    if number.is_empty() {
        return Err(bad(if unit.starts_with('-') {
            "a size cannot be negative"
        } else {
            "it does not start with a number"
        }));
    }
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
        return Err(bad("the number is malformed"));
    }
    let lower = unit.to_ascii_lowercase();
    let factor: u64 = match lower.as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" | "mb" | "gb" | "tb" => {
            return Err(bad("decimal units are ambiguous; use KiB, MiB, GiB or TiB"))
        }
        _ => return Err(bad("unknown unit")),
    };
    // Exact decimal arithmetic (no f64: byte counts past 2^53 must read back unchanged).
    let too_big = || bad("it is larger than 16 EiB");
    let whole = whole.trim_start_matches('0');
    if whole.len() > 20 {
        return Err(too_big());
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad("the number is malformed"))?
    };
    // 20 decimals are far finer than a byte of a TiB; more would overflow below.
    let frac = &frac[..frac.len().min(20)];
    let scale = 10u128.pow(frac.len() as u32);
    let frac: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| bad("the number is malformed"))?
    };
    // frac / scale of a unit, rounded to the nearest byte.
    let frac_bytes = (2 * frac * u128::from(factor) + scale) / (2 * scale);
    let bytes = whole
        .checked_mul(u128::from(factor))
        .and_then(|b| b.checked_add(frac_bytes))
        .ok_or_else(too_big)?;
    u64::try_from(bytes).map_err(|_| too_big())
}

/// `bytes` in the largest binary unit that holds it a whole number of times (`52428800` →
/// `50 MiB`, `1536` → `1536 B`), so reading it back with [`parse_size`] gives the same number.
pub fn format_size(bytes: u64) -> String {
    let (name, factor) = SIZE_UNITS
        .iter()
        .rev()
        .find(|(_, f)| bytes % f == 0 && bytes >= *f)
        .copied()
        .unwrap_or(("B", 1));
    format!("{} {name}", bytes / factor)
}

/// Serde for a byte count in the config file written either as a number (`10737418240`) or as a
/// size text (`"10 GiB"`, read by [`parse_size`]); written back as a number
/// (`#[serde(with = "crate::units::bytes_text")]`).
pub mod bytes_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{parse_size, BytesOrText};

    /// Writes the number.
    pub fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*n)
    }

    /// Reads a number or a size text.
    ///
    /// # Errors
    /// The [`super::SizeError`] text for a size that cannot be read.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match BytesOrText::deserialize(d)? {
            BytesOrText::Bytes(n) => Ok(n),
            BytesOrText::Text(t) => parse_size(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// As [`bytes_text`], for an optional limit (absent: off).
pub mod opt_bytes_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{parse_size, BytesOrText};

    /// Writes the number, or nothing.
    pub fn serialize<S: Serializer>(n: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match n {
            Some(n) => s.serialize_some(n),
            None => s.serialize_none(),
        }
    }

    /// Reads a number or a size text, or nothing.
    ///
    /// # Errors
    /// The [`super::SizeError`] text for a size that cannot be read.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<BytesOrText>::deserialize(d)? {
            None => Ok(None),
            Some(BytesOrText::Bytes(n)) => Ok(Some(n)),
            Some(BytesOrText::Text(t)) => {
                parse_size(&t).map(Some).map_err(serde::de::Error::custom)
            }
        }
    }
}

/// A byte count written as a number or as a size text. Not an untagged enum: a negative or
/// fractional number must say why it is refused, not "data did not match any variant".
enum BytesOrText {
    Bytes(u64),
    Text(String),
}

impl<'de> serde::Deserialize<'de> for BytesOrText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = BytesOrText;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number of bytes or a size such as \"512 MiB\"")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Ok(BytesOrText::Bytes(n))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
                u64::try_from(n).map(BytesOrText::Bytes).map_err(|_| {
                    E::custom(format!(
                        "bad size {n}: a size cannot be negative (write e.g. \"512 MiB\", \"20 GiB\" or a number of bytes)"
                    ))
                })
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Self::Value, E> {
                Err(E::custom(format!(
                    "bad size {n}: a number of bytes is whole; write a fraction of a unit as text, e.g. \"1.5 GiB\""
                )))
            }
            fn visit_str<E: serde::de::Error>(self, t: &str) -> Result<Self::Value, E> {
                Ok(BytesOrText::Text(t.to_owned()))
            }
        }
        d.deserialize_any(Visit)
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn sizes_in_binary_units_parse_to_bytes() {
        assert_eq!(parse_size("50 MiB"), Ok(50 << 20));
        assert_eq!(parse_size("50MiB"), Ok(50 << 20));
        assert_eq!(parse_size(" 20 gib "), Ok(20 << 30));
        assert_eq!(parse_size("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("7 B"), Ok(7));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("1 TiB"), Ok(1 << 40));
    }

    #[test]
    fn what_is_not_a_size_says_why() {
        for (text, why) in [
            ("", "it is empty"),
            ("MiB", "it does not start with a number"),
            ("-5 MiB", "a size cannot be negative"),
            ("1.2.3 MiB", "the number is malformed"),
            (
                "50 MB",
                "decimal units are ambiguous; use KiB, MiB, GiB or TiB",
            ),
            ("50 parsecs", "unknown unit"),
            ("99999999999 TiB", "it is larger than 16 EiB"),
        ] {
            assert_eq!(parse_size(text).map_err(|e| e.why), Err(why), "{text:?}");
        }
        let msg = parse_size("50 MB").expect_err("refused").to_string();
        assert!(msg.starts_with("bad size \"50 MB\""), "{msg}");
    }

    #[test]
    fn the_config_file_takes_sizes_as_numbers_or_text() {
        #[derive(serde::Deserialize)]
        struct Limits {
            #[serde(with = "bytes_text")]
            a: u64,
            #[serde(default, with = "opt_bytes_text")]
            b: Option<u64>,
        }
        let l: Limits = toml::from_str("a = \"50 MiB\"\nb = 1024").expect("reads");
        assert_eq!((l.a, l.b), (50 << 20, Some(1024)));
        let l: Limits = toml::from_str("a = 7").expect("reads");
        assert_eq!((l.a, l.b), (7, None));
        let e = toml::from_str::<Limits>("a = \"50 MB\"")
            .err()
            .expect("refused");
        assert!(e.to_string().contains("bad size \"50 MB\""), "{e}");
    }

    #[test]
    fn byte_counts_past_2_pow_53_read_back_exactly() {
        // f64 would give 9007199254740992 and refuse u64::MAX.
        assert_eq!(parse_size("9007199254740993"), Ok((1 << 53) + 1));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_size("0018446744073709551615 B"), Ok(u64::MAX));
        assert_eq!(
            parse_size("18446744073709551616").map_err(|e| e.why),
            Err("it is larger than 16 EiB")
        );
        assert_eq!(
            parse_size("16777216 TiB").map_err(|e| e.why),
            Err("it is larger than 16 EiB")
        );
        assert_eq!(parse_size("16777215 TiB"), Ok(16_777_215 << 40));
        // Fractions: hand-computed, rounded to the nearest byte.
        assert_eq!(parse_size(".5 KiB"), Ok(512));
        assert_eq!(parse_size("1. KiB"), Ok(1024));
        assert_eq!(parse_size("0.001 KiB"), Ok(1)); // 1.024 B
        assert_eq!(parse_size("0.0004 KiB"), Ok(0)); // 0.4096 B
        assert_eq!(parse_size("1.000000000000000000000001 GiB"), Ok(1 << 30));
        assert_eq!(
            parse_size(".").map_err(|e| e.why),
            Err("the number is malformed")
        );
        for n in [u64::MAX, (1 << 60) + 1, (1 << 53) + 1] {
            assert_eq!(parse_size(&format_size(n)), Ok(n), "{n}");
        }
    }

    #[test]
    fn a_negative_or_fractional_number_in_the_config_says_why() {
        #[derive(Debug, serde::Deserialize)]
        struct Limits {
            #[serde(with = "bytes_text")]
            _a: u64,
        }
        let e = toml::from_str::<Limits>("_a = -1")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("a size cannot be negative"), "{e}");
        let e = toml::from_str::<Limits>("_a = 1.5")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("a number of bytes is whole"), "{e}");
    }

    #[test]
    fn a_formatted_size_reads_back_the_same() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(50 << 20), "50 MiB");
        assert_eq!(format_size(10 << 30), "10 GiB");
        assert_eq!(format_size(1536), "1536 B");
        assert_eq!(format_size(3 << 29), "1536 MiB");
        for n in [0, 1, 1023, 1024, 1536, 50 << 20, 3 << 29, 1 << 40, 5 << 40] {
            assert_eq!(parse_size(&format_size(n)), Ok(n), "{n}");
        }
    }
}
