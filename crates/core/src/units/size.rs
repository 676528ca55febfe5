//! Sizes as people type them: `50 MiB`, `1.5GiB`, `20 g`, `4096`, and the serde forms of size
//! fields. Binary units only (1 KiB = 1024 B, as everywhere in CacheWatch); `MB`/`GB` are refused
//! rather than guessed. The settings show a size with [`format_size`] and read what the user
//! typed with [`parse_size`], so the app and the CLI read sizes one way.

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
