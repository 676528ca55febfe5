//! Sizes as people type them: `50 MiB`, `1.5GiB`, `20 g`, `4096`. Binary units only (1 KiB =
//! 1024 B, as everywhere in CacheWatch); `MB`/`GB` are refused rather than guessed. The settings
//! panel shows a size with [`format_size`] and sends what the user typed through [`parse_size`],
//! so the app and the CLI read sizes one way.

/// The units, smallest first, with their factor.
const UNITS: [(&str, u64); 5] = [
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
    let value: f64 = number.parse().map_err(|_| bad("the number is malformed"))?;
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
    let bytes = (value * factor as f64).round();
    if !(0.0..=u64::MAX as f64).contains(&bytes) || bytes >= u64::MAX as f64 {
        return Err(bad("it is larger than 16 EiB"));
    }
    Ok(bytes as u64)
}

/// `bytes` in the largest binary unit that holds it a whole number of times (`52428800` →
/// `50 MiB`, `1536` → `1536 B`), so reading it back with [`parse_size`] gives the same number.
pub fn format_size(bytes: u64) -> String {
    let (name, factor) = UNITS
        .iter()
        .rev()
        .find(|(_, f)| bytes % f == 0 && bytes >= *f)
        .copied()
        .unwrap_or(("B", 1));
    format!("{} {name}", bytes / factor)
}

/// Serde for a byte count in the config file written either as a number (`10737418240`) or as a
/// size text (`"10 GiB"`, read by [`parse_size`]); written back as a number
/// (`#[serde(with = "crate::api::size_text::bytes")]`).
pub mod bytes {
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

/// As [`bytes`], for an optional limit (absent: off).
pub mod opt_bytes {
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

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum BytesOrText {
    Bytes(u64),
    Text(String),
}

#[cfg(test)]
mod tests {
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
            #[serde(with = "bytes")]
            a: u64,
            #[serde(default, with = "opt_bytes")]
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
