#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::*;
use crate::alerts::AlertsConfig;
use crate::reclaim::AuditRecord;
use crate::roots::RootKind;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const T0: u64 = 1_900_000_000;
const HOUR: u64 = 3600;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn root(path: &str) -> Series {
    Series::Root {
        kind: RootKind::Temp,
        path: PathBuf::from(path),
    }
}

fn sample(series: Series, bytes: u64) -> Sample {
    Sample {
        series,
        allocated_bytes: bytes,
        apparent_bytes: bytes,
        items: 1,
    }
}

/// A fake free-space source: one sample per hour of `free` (bytes) on `/` and of each root.
fn record(h: &mut History, hour: u64, free_root: u64, roots: &[(&str, u64)]) {
    let mut samples = volume_samples([("/", free_root, 500 * GIB)]);
    samples.extend(roots.iter().map(|(p, b)| sample(root(p), *b)));
    h.record_samples(at(T0 + hour * HOUR), &samples).unwrap();
}

fn volumes(roots: &[&str]) -> Vec<VolumeRoots> {
    group_by_volume(roots.iter().map(|p| (root(p), Some(PathBuf::from("/")))))
}

fn open() -> (tempfile::TempDir, History) {
    let dir = tempfile::tempdir().unwrap();
    let h = History::open(&dir.path().join("cachewatch.db")).unwrap();
    (dir, h)
}

#[test]
fn free_space_falling_42_gib_while_the_roots_grew_1_2_gib_is_said() {
    let (_dir, mut h) = open();
    // 6 h: free space falls 7 GiB an hour; the two roots grow 100 MiB + 104.8 MiB an hour.
    let grow_t = 1228 * MIB / 12; // 1.2 GiB over 6 h across two roots
    for hour in 0..=6 {
        record(
            &mut h,
            hour,
            400 * GIB - hour * 7 * GIB,
            &[
                ("/t", 10 * GIB + hour * grow_t),
                ("/c", GIB + hour * grow_t),
            ],
        );
    }
    let cfg = AlertsConfig::default();
    let out = unexplained_growth(&h, &volumes(&["/t", "/c"]), &cfg, at(T0 + 6 * HOUR)).unwrap();
    assert_eq!(out.len(), 1);
    let u = &out[0];
    assert_eq!(u.free_fall_bytes, (42 * GIB) as i64);
    assert_eq!(u.roots_growth_bytes, (12 * grow_t) as i64);
    assert_eq!(u.unexplained_bytes, (42 * GIB - 12 * grow_t) as i64);
    assert_eq!((u.from_unix_secs, u.to_unix_secs), (T0, T0 + 6 * HOUR));
    assert!(u.notable);
    assert_eq!(
        u.message(),
        "Free space on / fell 42.0 GiB in 6 h; the watched dirs grew 1.2 GiB: something outside \
         them is growing (for example /private/tmp)."
    );
}

#[test]
fn the_window_starts_at_the_sample_before_it_and_older_samples_are_ignored() {
    let (_dir, mut h) = open();
    // A 100 GiB fall 10 h ago, then 2 GiB over the last 6 h.
    record(&mut h, 0, 300 * GIB, &[("/t", GIB)]);
    record(&mut h, 2, 200 * GIB, &[("/t", GIB)]);
    record(&mut h, 4, 200 * GIB, &[("/t", GIB)]);
    record(&mut h, 10, 198 * GIB, &[("/t", GIB)]);
    let cfg = AlertsConfig::default();
    let u = &unexplained_growth(&h, &volumes(&["/t"]), &cfg, at(T0 + 10 * HOUR)).unwrap()[0];
    assert_eq!(
        (u.from_unix_secs, u.free_fall_bytes),
        (T0 + 4 * HOUR, (2 * GIB) as i64)
    );
}

#[test]
fn growth_the_roots_explain_is_not_said() {
    let (_dir, mut h) = open();
    record(&mut h, 0, 100 * GIB, &[("/t", GIB)]);
    record(&mut h, 1, 95 * GIB, &[("/t", 6 * GIB)]);
    let cfg = AlertsConfig::default();
    let u = &unexplained_growth(&h, &volumes(&["/t"]), &cfg, at(T0 + HOUR)).unwrap()[0];
    assert_eq!(
        (u.free_fall_bytes, u.unexplained_bytes),
        ((5 * GIB) as i64, 0)
    );
    assert!(!u.notable);
}

#[test]
fn thresholds_are_min_bytes_and_a_ratio_of_the_roots_growth() {
    let u = |unexplained: u64, roots: u64| Unexplained {
        mount: "/".into(),
        from_unix_secs: 0,
        to_unix_secs: 1,
        free_fall_bytes: (unexplained + roots) as i64,
        roots_growth_bytes: roots as i64,
        unexplained_bytes: unexplained as i64,
        left_out_secs: 0,
        notable: false,
        message: String::new(),
    };
    assert!(u(GIB, 0).is_notable(GIB, 1));
    assert!(!u(GIB - 1, 0).is_notable(GIB, 1));
    assert!(u(3 * GIB, 3 * GIB).is_notable(GIB, 1));
    assert!(!u(3 * GIB, 3 * GIB + 1).is_notable(GIB, 1));
    assert!(!u(3 * GIB, GIB).is_notable(GIB, 10));
}

#[test]
fn a_reclaim_that_freed_less_than_it_removed_does_not_fake_growth_outside() {
    let (_dir, mut h) = open();
    // Hour 0 -> 1: nothing outside grows. A reclaim at 0:30 removes 20 GiB of clones from /t
    // but frees only 1 GiB (they shared blocks): the root shrank 20 GiB, free space rose 1 GiB.
    record(&mut h, 0, 100 * GIB, &[("/t", 30 * GIB)]);
    let rec = AuditRecord {
        time: at(T0 + HOUR / 2),
        path: PathBuf::from("/t/clone"),
        producer: "chromium-code-sign-clone".into(),
        allocated_bytes: 20 * GIB,
        outcome: "deleted".into(),
    };
    let ids = h.begin_reclaims(&[rec]).unwrap();
    h.finish_reclaims(&[(ids[0], "deleted".into())]).unwrap();
    record(&mut h, 1, 101 * GIB, &[("/t", 10 * GIB)]);
    // Hour 1 -> 2: 4 GiB outside, nothing in the roots; well after the reclaim's tail.
    record(&mut h, 2, 97 * GIB, &[("/t", 10 * GIB)]);
    let cfg = AlertsConfig::default();
    let u = &unexplained_growth(&h, &volumes(&["/t"]), &cfg, at(T0 + 2 * HOUR)).unwrap()[0];
    assert_eq!(u.left_out_secs, HOUR, "the reclaim's hour is left out");
    assert_eq!(
        u.unexplained_bytes,
        (4 * GIB) as i64,
        "not 23 GiB, and not hidden"
    );
    assert!(
        u.message().contains("(1 h with reclaims left out)"),
        "{}",
        u.message()
    );
}

#[test]
fn a_reclaim_just_before_a_pair_leaves_it_out_but_an_already_gone_row_does_not() {
    let (_dir, mut h) = open();
    record(&mut h, 0, 100 * GIB, &[("/t", 30 * GIB)]);
    let row = |secs: u64, outcome: &str| AuditRecord {
        time: at(secs),
        path: PathBuf::from("/t/x"),
        producer: "p".into(),
        allocated_bytes: GIB,
        outcome: outcome.into(),
    };
    // Recorded 5 min before the pair 1 -> 2 started: a long reclaim still deleting.
    let ids = h
        .begin_reclaims(&[row(T0 + HOUR - 300, "deleted")])
        .unwrap();
    h.finish_reclaims(&[(ids[0], "deleted".into())]).unwrap();
    record(&mut h, 1, 100 * GIB, &[("/t", 30 * GIB)]);
    record(&mut h, 2, 110 * GIB, &[("/t", 10 * GIB)]);
    let ids = h.begin_reclaims(&[row(T0 + 2 * HOUR + 60, "x")]).unwrap();
    h.finish_reclaims(&[(ids[0], "already-gone".into())])
        .unwrap();
    record(&mut h, 3, 98 * GIB, &[("/t", 10 * GIB)]);
    let cfg = AlertsConfig::default();
    let u = &unexplained_growth(&h, &volumes(&["/t"]), &cfg, at(T0 + 3 * HOUR)).unwrap()[0];
    assert_eq!(u.left_out_secs, 2 * HOUR);
    assert_eq!(u.unexplained_bytes, (12 * GIB) as i64);
}

#[test]
fn roots_on_another_volume_are_compared_with_their_own_volume() {
    let (_dir, mut h) = open();
    for hour in 0..=1 {
        let mut s = volume_samples([
            ("/", 100 * GIB - hour * 5 * GIB, 500 * GIB),
            ("/Volumes/x", 50 * GIB - hour * 3 * GIB, 100 * GIB),
        ]);
        s.push(sample(root("/t"), GIB));
        s.push(sample(root("/Volumes/x/c"), GIB + hour * 3 * GIB));
        h.record_samples(at(T0 + hour * HOUR), &s).unwrap();
    }
    let groups = group_by_volume([
        (root("/t"), Some(PathBuf::from("/"))),
        (root("/Volumes/x/c"), Some(PathBuf::from("/Volumes/x"))),
        (root("/gone"), None),
    ]);
    assert_eq!(groups.len(), 2);
    let cfg = AlertsConfig::default();
    let out = unexplained_growth(&h, &groups, &cfg, at(T0 + HOUR)).unwrap();
    let by: Vec<(&str, i64, bool)> = out
        .iter()
        .map(|u| (u.mount.as_str(), u.unexplained_bytes, u.notable))
        .collect();
    assert_eq!(
        by,
        [("/", (5 * GIB) as i64, true), ("/Volumes/x", 0, false)]
    );
}

#[test]
fn one_sample_or_none_gives_nothing() {
    let (_dir, mut h) = open();
    let cfg = AlertsConfig::default();
    assert!(unexplained_growth(&h, &volumes(&["/t"]), &cfg, at(T0))
        .unwrap()
        .is_empty());
    record(&mut h, 0, 100 * GIB, &[("/t", GIB)]);
    assert!(unexplained_growth(&h, &volumes(&["/t"]), &cfg, at(T0))
        .unwrap()
        .is_empty());
}

#[test]
fn volume_free_series_are_not_growth_in_grown_since() {
    let (_dir, mut h) = open();
    record(&mut h, 0, 100 * GIB, &[("/t", GIB)]);
    record(&mut h, 1, 90 * GIB, &[("/t", 2 * GIB)]);
    let grown = h.grown_since(at(T0), at(T0 + HOUR)).unwrap();
    assert!(grown
        .iter()
        .all(|(s, _)| !matches!(s, Series::VolumeFree { .. })));
    assert!(h
        .all_series()
        .unwrap()
        .contains(&Series::VolumeFree { mount: "/".into() }));
}

#[test]
fn the_unexplained_growth_alert_is_off_by_default_and_fires_once_per_cooldown_when_on() {
    use crate::alerts::{AlertInputs, AlertRule, Alerter};
    let notable = Unexplained {
        mount: "/".into(),
        from_unix_secs: T0,
        to_unix_secs: T0 + 6 * HOUR,
        free_fall_bytes: (42 * GIB) as i64,
        roots_growth_bytes: (2 * GIB) as i64,
        unexplained_bytes: (40 * GIB) as i64,
        left_out_secs: 0,
        notable: true,
        message: String::new(),
    };
    let inputs = AlertInputs {
        groups: Vec::new(),
        unexplained: vec![notable],
        ..AlertInputs::default()
    };
    let quiet = AlertsConfig {
        free_disk_min_bytes: 0,
        disk_full_eta_min_hours: 0,
        ..AlertsConfig::default()
    };
    assert!(Alerter::new(quiet.clone())
        .evaluate(&inputs, at(T0))
        .is_empty());
    let mut on = Alerter::new(AlertsConfig {
        unexplained_growth_alert: true,
        ..quiet
    });
    let fired = on.evaluate(&inputs, at(T0));
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].rule, AlertRule::UnexplainedGrowth);
    assert_eq!(fired[0].rule.as_str(), "unexplained-growth");
    assert!(fired[0]
        .message
        .starts_with("Free space on / fell 42.0 GiB in 6 h;"));
    assert!(
        fired[0].message.ends_with("It grew 40.0 GiB."),
        "{}",
        fired[0].message
    );
    assert!(on.evaluate(&inputs, at(T0 + HOUR)).is_empty(), "cooldown");
}

/// The window showed this sentence from its own copy of the rule (ui/src/views/outside-growth.ts);
/// it now shows the engine's `message` field, so the engine's sentence is held to the same texts.
#[test]
fn says_the_fall_the_span_and_what_the_watched_dirs_did() {
    let u = |roots_growth_bytes: i64, left_out_secs: u64| Unexplained {
        mount: "/".into(),
        from_unix_secs: T0,
        to_unix_secs: T0 + 6 * HOUR,
        free_fall_bytes: (42 * GIB) as i64,
        roots_growth_bytes,
        unexplained_bytes: 0,
        left_out_secs,
        notable: true,
        message: String::new(),
    };
    assert_eq!(
        u(1_288_490_189, 0).message(),
        "Free space on / fell 42.0 GiB in 6 h; the watched dirs grew 1.2 GiB: something outside \
         them is growing (for example /private/tmp)."
    );
    assert_eq!(
        u(-3 * GIB as i64, 5400).message(),
        "Free space on / fell 42.0 GiB in 6 h (1 h 30 min with reclaims left out); the watched \
         dirs shrank 3.0 GiB: something outside them is growing (for example /private/tmp)."
    );
}
