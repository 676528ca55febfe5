//! Human sizes for the tray title and notifications: binary units (KiB = 1024 B).

/// `bytes` in binary units with one decimal above bytes: `512 B`, `1.5 KiB`, `3.0 GiB` (the
/// engine's [`cachewatch::units::format_bytes`], so the tray and the CLI read the same).
pub fn bytes(bytes: u64) -> String {
    cachewatch::units::format_bytes(bytes.into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::bytes;

    #[test]
    fn binary_units_with_one_decimal() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 * 1024 * 1024 + 104_858), "5.1 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(bytes(u64::MAX), "16.0 EiB");
    }
}

/// An age threshold in the largest unit that divides it: `90 s`, `5 min`, `1 h`, `3 d`.
pub fn age(secs: u64) -> String {
    match secs {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{} d", s / 86_400),
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod age_tests {
    use super::age;

    #[test]
    fn ages_use_the_largest_exact_unit() {
        assert_eq!(age(0), "0 s");
        assert_eq!(age(90), "90 s");
        assert_eq!(age(300), "5 min");
        assert_eq!(age(5400), "90 min");
        assert_eq!(age(3600), "1 h");
        assert_eq!(age(259_200), "3 d");
    }
}
