//! Version-keyed caches (`versioned = true`): which item is the newest version of its series.

use std::cmp::Ordering;
use std::path::Path;

use super::{Catalogue, Rule};

/// Compares two version strings chunk by chunk: runs of digits numerically (`9` < `10`, leading
/// zeros ignored), other runs as text, so `13.6.0` < `14.5.1`, `2023.3` < `2024.1`,
/// `1124` < `1200`. A version that is a prefix of the other is the older.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (chunks(a), chunks(b));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) => {
                let o = match (digits(p), digits(q)) {
                    (true, true) => {
                        let (p, q) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                        p.len().cmp(&q.len()).then_with(|| p.cmp(q))
                    }
                    _ => p.cmp(q),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

fn digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// Maximal runs of digits and of non-digits.
fn chunks(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let first = rest.bytes().next()?;
        let end = rest
            .bytes()
            .position(|b| b.is_ascii_digit() != first.is_ascii_digit())
            .unwrap_or(rest.len());
        let (head, tail) = rest.split_at(end);
        rest = tail;
        Some(head)
    })
}

impl Catalogue {
    /// The `(series, version)` a `versioned` rule reads from an item's file name, `None` when the
    /// rule is not versioned or the name yields no version. The series is empty when the regex
    /// captures none.
    pub fn version_of(&self, rule: &Rule, name: &str) -> Option<(String, String)> {
        let i = self
            .rules
            .binary_search_by(|r| r.id.as_str().cmp(&rule.id))
            .ok()?;
        let caps = self.versions.get(i)?.as_ref()?.captures(name)?;
        let version = caps.name("version")?.as_str().to_owned();
        let series = caps.name("series").map_or("", |m| m.as_str()).to_owned();
        Some((series, version))
    }

    /// When the item at `path` (absolute) is an item of a `versioned` `rule` and no sibling (an
    /// entry of the same dir, read now) holds a newer version of the same series, its version:
    /// the version reclaim must keep. `None` when a newer sibling exists, or the rule is not
    /// versioned. A dir that cannot be read counts the item as the newest (safe default).
    pub fn newest_version(&self, rule: &Rule, path: &Path) -> Option<String> {
        let name = path.file_name()?.to_str()?;
        let (series, version) = self.version_of(rule, name)?;
        let Some(parent) = path.parent() else {
            return Some(version);
        };
        let Ok(entries) = std::fs::read_dir(parent) else {
            return Some(version);
        };
        let newer = entries.flatten().any(|e| {
            let other = e.file_name();
            other.to_str().is_some_and(|o| {
                o != name
                    && self.version_of(rule, o).is_some_and(|(s, v)| {
                        s == series && compare_versions(&v, &version) == Ordering::Greater
                    })
            })
        });
        (!newer).then_some(version)
    }
}

#[cfg(test)]
mod tests {
    use super::compare_versions;
    use std::cmp::Ordering::*;

    #[test]
    fn versions_compare_by_numeric_chunks() {
        assert_eq!(compare_versions("13.6.0", "14.5.1"), Less);
        assert_eq!(compare_versions("9.0.0", "13.6.0"), Less);
        assert_eq!(compare_versions("14.5.10", "14.5.9"), Greater);
        assert_eq!(compare_versions("2023.3", "2024.1"), Less);
        assert_eq!(compare_versions("1124", "1200"), Less);
        assert_eq!(compare_versions("26.0.0", "22.11.0"), Greater);
        assert_eq!(compare_versions("1.0", "1.0.1"), Less);
        assert_eq!(compare_versions("007", "7"), Equal);
    }
}
