//! Human sizes and counts for the tray title, dialogs and notifications, written as the window
//! writes them (`ui/src/format.ts`), so the same figure reads the same everywhere: binary units
//! (KiB = 1024 B), counts with thousands separators.

const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// `bytes` in binary units as the window's `formatBytes`: one decimal below 100 of a unit, none
/// from 100 up, a value that rounds to 1024 moves up a unit: `512 B`, `1.5 KiB`, `231 MiB`,
/// `3.0 GiB`.
pub fn bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut unit = 0;
    let mut value = bytes as f64 / 1024.0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let mut text = if (value * 10.0).round() / 10.0 < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{}", value.round())
    };
    if text.parse::<f64>().is_ok_and(|v| v >= 1024.0) && unit + 1 < UNITS.len() {
        unit += 1;
        text = format!("{:.1}", text.parse::<f64>().unwrap_or(1024.0) / 1024.0);
    }
    format!("{text} {}", UNITS[unit])
}

/// A count with thousands separators and its noun, singular for 1: `1 item`, `20,003 items` (the
/// window's `formatCount`).
pub fn count(n: u64, noun: &str) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    let s = if n == 1 { "" } else { "s" };
    format!("{out} {noun}{s}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::bytes;

    #[test]
    fn binary_units_as_the_window_writes_them() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 * 1024 * 1024 + 104_858), "5.1 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(bytes(u64::MAX), "16.0 EiB");
        // Issue 12 §5: the tray said "231.1 MiB" where the window said "231 MiB".
        assert_eq!(bytes(231 * 1024 * 1024 + 104_858), "231 MiB");
        assert_eq!(bytes(1023 * 1024 * 1024 + 900 * 1024 * 1024), "1.9 GiB");
        assert_eq!(bytes(1024 * 1024 * 1024 - 1), "1.0 GiB");
    }

    /// Issue 12 §5: "20,003" in the window and "20003" in the tray's dialog.
    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(super::count(1, "item"), "1 item");
        assert_eq!(super::count(0, "item"), "0 items");
        assert_eq!(super::count(999, "item"), "999 items");
        assert_eq!(super::count(20_003, "item"), "20,003 items");
        assert_eq!(super::count(1_234_567, "error"), "1,234,567 errors");
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
