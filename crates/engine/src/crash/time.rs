//! The time format of crash reports: `2025-06-01 10:22:33.00 +0200` (`.ips`) and the legacy
//! `Date/Time:` line, which is the same with up to nine fraction digits.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parses an `.ips` time such as `2025-06-01 10:22:33.00 +0200` (fraction and zone optional;
/// no zone means UTC). `None` when it is not in that form.
pub fn parse_ips_time(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let (date, rest) = s.split_once(' ')?;
    let mut d = date.split('-');
    let year: i64 = d.next()?.parse().ok()?;
    let month: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    if d.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (clock, zone) = match rest.split_once(' ') {
        Some((c, z)) => (c, Some(z.trim())),
        None => (rest, None),
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (clock, None),
    };
    let mut t = hms.split(':');
    let hour: i64 = t.next()?.parse().ok()?;
    let minute: i64 = t.next()?.parse().ok()?;
    let second: i64 = t.next()?.parse().ok()?;
    if t.next().is_some() || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let nanos = match frac {
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            let n: u32 = f.parse().ok()?;
            n * 10u32.pow(9 - f.len() as u32)
        }
        Some(_) => return None,
        None => 0,
    };
    let offset_secs: i64 = match zone {
        None => 0,
        Some(z) => {
            let (sign, digits) = match z.as_bytes().first()? {
                b'+' => (1, &z[1..]),
                b'-' => (-1, &z[1..]),
                _ => return None,
            };
            let digits = digits.replace(':', "");
            if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let h: i64 = digits[..2].parse().ok()?;
            let m: i64 = digits[2..].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let local = days * 86_400 + hour * 3600 + minute * 60 + second;
    let unix = local - offset_secs;
    let secs = u64::try_from(unix).ok()?;
    Some(UNIX_EPOCH + Duration::new(secs, nanos))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ips_time_with_zone_and_fraction() {
        // 2025-06-01 08:22:33.25 UTC; `date -u -d '2025-06-01 08:22:33' +%s` = 1748766153.
        let t = parse_ips_time("2025-06-01 10:22:33.25 +0200").unwrap();
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap(),
            Duration::new(1_748_766_153, 250_000_000)
        );
        let t = parse_ips_time("2024-02-29 23:59:59 -0130").unwrap();
        // 2024-03-01 01:29:59 UTC = 1709256599.
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
            1_709_256_599
        );
        assert_eq!(parse_ips_time("1970-01-01 00:00:00").unwrap(), UNIX_EPOCH);
    }

    #[test]
    fn ips_time_rejects_garbage() {
        for bad in [
            "",
            "yesterday",
            "2025-13-01 00:00:00",
            "2025-06-01 25:00:00",
            "2025-06-01 10:00:00 CEST",
        ] {
            assert_eq!(parse_ips_time(bad), None, "{bad:?}");
        }
    }
}
