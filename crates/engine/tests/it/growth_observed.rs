//! Growth is said over the span actually observed, reclaims are kept out of it, and
//! the disk-full ETA is given only for a trend that held steady for at least an hour.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use cachewatch::history::{steady_eta, History, Sample, Series};
use cachewatch_core::reclaim::AuditRecord;

const START: u64 = 1_900_000_000;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn at(h: &mut History, secs: u64, bytes: u64, items: u64) {
    let s = |series| Sample {
        series,
        allocated_bytes: bytes,
        apparent_bytes: bytes,
        items,
    };
    h.record_samples(
        t(secs),
        &[
            s(Series::Producer("katago-coreml".into())),
            s(Series::Total),
        ],
    )
    .unwrap();
}

fn open() -> (tempfile::TempDir, History) {
    let dir = tempfile::tempdir().unwrap();
    let h = History::open(&dir.path().join("cachewatch.db")).unwrap();
    (dir, h)
}

/// Regression: two minutes into a leak the window said "+31.6 GiB/day" and "full in 1 d 20 h".
#[test]
fn two_minutes_of_a_leak_give_the_observed_change_and_no_eta() {
    let (_d, mut h) = open();
    at(&mut h, START, 0, 0);
    at(&mut h, START + 180, 105 * MIB, 40);
    let series = Series::Producer("katago-coreml".into());
    let g = h
        .observed_growth(&series, Duration::from_secs(86_400), t(START + 180))
        .unwrap()
        .unwrap();
    assert_eq!((g.bytes, g.items), (105 * MIB as i64, 40));
    assert_eq!(
        g.span(),
        Duration::from_secs(180),
        "the span observed, not a day"
    );
    let total = h
        .observed_growth(&Series::Total, Duration::from_secs(86_400), t(START + 180))
        .unwrap()
        .unwrap();
    assert_eq!(steady_eta(100 * GIB, &total, Some(&total)), None);
}

/// Regression: a reclaim showed as "-12.8 GiB/day".
#[test]
fn a_reclaim_is_not_negative_growth() {
    let (_d, mut h) = open();
    at(&mut h, START, 800 * MIB, 100);
    h.record_reclaims(&[AuditRecord {
        time: t(START + 60),
        path: PathBuf::from("/tmp/model_1_0_1.mlmodelc"),
        producer: "katago-coreml".into(),
        allocated_bytes: 700 * MIB,
        outcome: "deleted".into(),
    }])
    .unwrap();
    at(&mut h, START + 120, 110 * MIB, 100);
    let series = Series::Producer("katago-coreml".into());
    let g = h
        .observed_growth(&series, Duration::from_secs(86_400), t(START + 120))
        .unwrap()
        .unwrap();
    // 800 − 700 reclaimed (1 item) + 10 written since (1 item): +10 MiB and +1 item, as if the
    // reclaim had not happened.
    assert_eq!((g.bytes, g.items), (10 * MIB as i64, 1));
    let total = h
        .observed_growth(&Series::Total, Duration::from_secs(86_400), t(START + 120))
        .unwrap()
        .unwrap();
    assert_eq!(total.bytes, 10 * MIB as i64);
}

/// A steady hour gives an ETA with its rate; the same hour followed by a stop gives none.
#[test]
fn the_eta_needs_a_steady_hour_and_goes_when_the_leak_stops() {
    let (_d, mut h) = open();
    for i in 0..=12u64 {
        at(&mut h, START + i * 300, i * 100 * MIB, i);
    }
    let now = t(START + 3600);
    let whole = h
        .observed_growth(&Series::Total, Duration::from_secs(86_400), now)
        .unwrap()
        .unwrap();
    let recent_span = cachewatch::history::recent_window(&whole);
    assert_eq!(recent_span, Duration::from_secs(900));
    let recent = h
        .observed_growth(&Series::Total, recent_span, now)
        .unwrap()
        .unwrap();
    // 1200 MiB an hour: 12000 MiB free last 10 h.
    assert_eq!(
        steady_eta(12_000 * MIB, &whole, Some(&recent)),
        Some(Duration::from_secs(36_000))
    );

    // The leak stops: 20 more minutes with nothing written.
    for i in 13..=16u64 {
        at(&mut h, START + i * 300, 1200 * MIB, 12);
    }
    let now = t(START + 16 * 300);
    let whole = h
        .observed_growth(&Series::Total, Duration::from_secs(86_400), now)
        .unwrap()
        .unwrap();
    let recent = h
        .observed_growth(
            &Series::Total,
            cachewatch::history::recent_window(&whole),
            now,
        )
        .unwrap()
        .unwrap();
    assert_eq!(recent.bytes, 0);
    assert_eq!(steady_eta(12_000 * MIB, &whole, Some(&recent)), None);
}

/// Regression: an alert ten seconds into a burst said "(25.3 MiB/h)", a rate nobody observed.
#[test]
fn a_growth_alert_from_seconds_of_data_gives_no_hourly_rate() {
    use cachewatch::alerts::{AlertInputs, Alerter, AlertsConfig, ProducerInput};
    use cachewatch_core::catalogue::ReclaimMode;
    let g = cachewatch::history::Growth {
        bytes: 72 * 1024,
        items: 9,
        from: t(START),
        to: t(START + 10),
    };
    let mut alerter = Alerter::new(AlertsConfig {
        producer_growth_items: 5,
        ..AlertsConfig::default()
    });
    let inputs = AlertInputs {
        producers: vec![ProducerInput {
            id: "metal-gpuarchiver".into(),
            name: "Metal gpuarchiver".into(),
            allocated_bytes: 1800 * 1024,
            items: 31,
            growth: Some(g),
            reclaim: ReclaimMode::Auto,
            min_age_secs: 300,
            evidence: Vec::new(),
            managed_by: None,
        }],
        ..AlertInputs::default()
    };
    let fired = alerter.evaluate(&inputs, t(START + 10));
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert!(
        fired[0].message.starts_with(
            "Metal gpuarchiver grew 72.0 KiB and 9 items in 10 s; now 1.8 MiB in 31 items."
        ),
        "{}",
        fired[0].message
    );
}
