//! Unit tests of the catalogue internals.
#![allow(clippy::unwrap_used)]

use super::matcher::{glob_depth, parse_ts};
use super::*;
use std::time::{Duration, UNIX_EPOCH};

#[test]
fn builtin_loads() {
    let c = Catalogue::builtin();
    assert!(c.rules().len() >= 25, "{} rules", c.rules().len());
}

#[test]
fn ts_is_seconds_or_millis_above_1e11() {
    assert_eq!(
        parse_ts("1718000000"),
        Some(UNIX_EPOCH + Duration::from_secs(1_718_000_000))
    );
    assert_eq!(
        parse_ts("1540372541734"),
        Some(UNIX_EPOCH + Duration::from_millis(1_540_372_541_734))
    );
    // 10^11 itself is still seconds; one more is milliseconds.
    assert_eq!(
        parse_ts("100000000000"),
        Some(UNIX_EPOCH + Duration::from_secs(100_000_000_000))
    );
    assert_eq!(
        parse_ts("100000000001"),
        Some(UNIX_EPOCH + Duration::from_millis(100_000_000_001))
    );
    assert_eq!(parse_ts("12a"), None);
}

#[test]
fn glob_depth_counts_separators_outside_classes() {
    assert_eq!(glob_depth("a"), Some(1));
    assert_eq!(glob_depth("*/com.apple.gpuarchiver/gpuarchiver-*"), Some(3));
    assert_eq!(glob_depth("a/{b,c}"), Some(2));
    assert_eq!(glob_depth("a/{b,c/d}"), None);
    assert_eq!(glob_depth("a[/]b"), None);
    assert_eq!(glob_depth(r"a\/b"), Some(1));
}
