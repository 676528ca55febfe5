//! Alert rules over real history samples, with a manual clock: growth by bytes or items, free
//! disk, disk-full ETA, total limit, cooldowns (also across a restart), config parsing.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch::alerts::{
    format_bytes, Alert, AlertInputs, AlertRule, Alerter, AlertsConfig, ProducerInput,
};
use cachewatch::dto::AlertDto;
use cachewatch::history::{disk_full_eta, History, Sample, Series};
use cachewatch_core::catalogue::ReclaimMode;
use cachewatch_core::clock::{Clock, ManualClock};

const START: u64 = 1_700_006_400;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const HOUR: Duration = Duration::from_secs(3600);

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn gpu(growth: Option<cachewatch::history::Growth>, bytes: u64, items: u64) -> ProducerInput {
    ProducerInput {
        id: "metal-gpuarchiver".into(),
        name: "Metal gpuarchiver".into(),
        allocated_bytes: bytes,
        items,
        growth,
        reclaim: ReclaimMode::Auto,
        min_age_secs: 300,
        evidence: vec!["https://example.org/report/1".into()],
        managed_by: None,
    }
}

/// Records two samples of `series` one hour apart (START and START + 1 h) and returns the
/// 1-hour growth the history computes at START + 1 h.
fn hour_of_growth(
    h: &mut History,
    series: Series,
    (b0, i0): (u64, u64),
    (b1, i1): (u64, u64),
) -> cachewatch::history::Growth {
    for (at, b, i) in [(START, b0, i0), (START + 3600, b1, i1)] {
        h.record_samples(
            t(at),
            &[Sample {
                series: series.clone(),
                allocated_bytes: b,
                apparent_bytes: b,
                items: i,
            }],
        )
        .expect("record");
    }
    h.growth(&series, HOUR, t(START + 3600))
        .expect("query")
        .expect("two samples")
}

#[test]
fn thousands_of_small_dirs_fire_producer_growth_by_items_with_the_reclaim_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.db")).expect("open");
    // +50 MiB (far below 1 GiB) but +6000 items (above 5000) in one hour.
    let g = hour_of_growth(
        &mut h,
        Series::Producer("metal-gpuarchiver".into()),
        (10 * MIB, 100),
        (60 * MIB, 6100),
    );
    assert_eq!((g.bytes, g.items), (50 * MIB as i64, 6000));
    let clock = ManualClock::new(t(START + 3600));
    let mut alerter = Alerter::new(AlertsConfig::default());
    let inputs = AlertInputs {
        producers: vec![gpu(Some(g), 60 * MIB, 6100)],
        ..AlertInputs::default()
    };
    let fired = alerter.evaluate(&inputs, clock.now());
    assert_eq!(fired.len(), 1, "{fired:?}");
    let a = &fired[0];
    assert_eq!(a.rule, AlertRule::ProducerGrowth);
    assert_eq!(a.producer.as_deref(), Some("metal-gpuarchiver"));
    assert_eq!(
        a.message,
        "Metal gpuarchiver grew 50.0 MiB and 6000 items in 1 h (50.0 MiB/h); now 60.0 MiB in 6100 \
         items. Reclaim: cachewatch reclaim --producer metal-gpuarchiver --older-than 1h. \
         Upstream: https://example.org/report/1"
    );
    let dto = a.to_dto(7);
    assert_eq!(dto.rule, "producer-growth");
    assert_eq!(dto.time_unix_secs, START + 3600);
    assert_eq!(Alert::from_dto(&dto).as_ref(), Some(a));
}

#[test]
fn byte_growth_fires_alone_and_small_growth_does_not() {
    let g = |bytes: i64, items: i64, secs: u64| cachewatch::history::Growth {
        bytes,
        items,
        from: t(START),
        to: t(START + secs),
    };
    let now = t(START + 7200);
    let cases = [
        // (growth, fires): 2 GiB and 10 items in 1 h → bytes rule.
        (g(2 * GIB as i64, 10, 3600), true),
        // just under both limits
        (g(GIB as i64 - 1, 4999, 3600), false),
        // exactly at the byte limit
        (g(GIB as i64, 0, 3600), true),
        // 1.5 GiB over 2 h of sparse samples is 0.75 GiB per 1 h window: silent
        (g(3 * GIB as i64 / 2, 0, 7200), false),
        // shrinking
        (g(-(5 * GIB as i64), -9000, 3600), false),
    ];
    for (growth, fires) in cases {
        let mut alerter = Alerter::new(AlertsConfig::default());
        let inputs = AlertInputs {
            producers: vec![gpu(Some(growth), 0, 0)],
            ..AlertInputs::default()
        };
        assert_eq!(
            alerter.evaluate(&inputs, now).len(),
            usize::from(fires),
            "{growth:?}"
        );
    }
    // Without history nothing fires.
    let mut alerter = Alerter::new(AlertsConfig::default());
    let inputs = AlertInputs {
        producers: vec![gpu(None, 100 * GIB, 1_000_000)],
        ..AlertInputs::default()
    };
    assert!(alerter.evaluate(&inputs, now).is_empty());
}

#[test]
fn cooldown_fires_once_stays_silent_then_fires_again() {
    let clock = ManualClock::new(t(START));
    let mut alerter = Alerter::new(AlertsConfig::default()); // cooldown 6 h
    let inputs = AlertInputs {
        free_bytes: Some(5 * GIB),
        ..AlertInputs::default()
    };
    assert_eq!(alerter.evaluate(&inputs, clock.now()).len(), 1);
    clock.advance(HOUR);
    assert!(alerter.evaluate(&inputs, clock.now()).is_empty());
    clock.advance(Duration::from_secs(5 * 3600 - 1)); // 6 h − 1 s after firing
    assert!(alerter.evaluate(&inputs, clock.now()).is_empty());
    clock.advance(Duration::from_secs(1)); // exactly 6 h
    let again = alerter.evaluate(&inputs, clock.now());
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].time, t(START + 6 * 3600));

    // The cooldown is per producer: another producer fires while the first is silent.
    let growth = cachewatch::history::Growth {
        bytes: 0,
        items: 9000,
        from: t(START),
        to: t(START + 3600),
    };
    let mut other = gpu(Some(growth), 0, 9000);
    other.id = "onnxruntime".into();
    let both = AlertInputs {
        producers: vec![gpu(Some(growth), 0, 9000), other],
        ..AlertInputs::default()
    };
    let mut alerter = Alerter::new(AlertsConfig::default());
    assert_eq!(alerter.evaluate(&both, t(START)).len(), 2);
    let only_first = AlertInputs {
        producers: vec![both.producers[0].clone()],
        ..AlertInputs::default()
    };
    let mut alerter = Alerter::new(AlertsConfig::default());
    assert_eq!(alerter.evaluate(&only_first, t(START)).len(), 1);
    assert_eq!(alerter.evaluate(&both, t(START + 60)).len(), 1);
}

#[test]
fn restored_cooldowns_survive_a_restart_through_the_history_db() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.db");
    let inputs = AlertInputs {
        free_bytes: Some(GIB),
        disk_full_eta: Some(Duration::from_secs(10 * 3600)),
        ..AlertInputs::default()
    };
    {
        let mut h = History::open(&path).expect("open");
        let mut alerter = Alerter::new(AlertsConfig::default());
        let fired = alerter.evaluate(&inputs, t(START));
        assert_eq!(
            fired.iter().map(|a| a.rule).collect::<Vec<_>>(),
            vec![AlertRule::FreeDisk, AlertRule::DiskFullEta]
        );
        for a in &fired {
            h.record_alert(&a.to_dto(0)).expect("store");
        }
    }
    // Restart 2 h later: the stored alerts keep both rules silent until START + 6 h.
    let h = History::open(&path).expect("reopen");
    let mut alerter = Alerter::new(AlertsConfig::default());
    alerter.restore(&h.recent_alerts(20).expect("recent"));
    assert!(alerter.evaluate(&inputs, t(START + 2 * 3600)).is_empty());
    assert_eq!(alerter.evaluate(&inputs, t(START + 6 * 3600)).len(), 2);
    // A fresh alerter without the restore would have repeated them.
    assert_eq!(
        Alerter::new(AlertsConfig::default())
            .evaluate(&inputs, t(START + 2 * 3600))
            .len(),
        2
    );
}

#[test]
fn disk_full_eta_from_history_growth_fires_below_24_hours() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.db")).expect("open");
    // The total grew 1 GiB in an hour; with 20 GiB free that is 20 h to full.
    let g = hour_of_growth(&mut h, Series::Total, (5 * GIB, 10), (6 * GIB, 20));
    let eta = disk_full_eta(20 * GIB, &g).expect("growing");
    assert_eq!(eta, Duration::from_secs(20 * 3600));
    let mut alerter = Alerter::new(AlertsConfig::default());
    let inputs = AlertInputs {
        free_bytes: Some(20 * GIB), // above the 10 GiB free-disk limit: only the ETA fires
        disk_full_eta: Some(eta),
        ..AlertInputs::default()
    };
    let fired = alerter.evaluate(&inputs, t(START + 3600));
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].rule, AlertRule::DiskFullEta);
    assert_eq!(
        fired[0].message,
        "At the recent growth rate the disk is full in 20 h (20.0 GiB free). See what grew with \
         `cachewatch history --since 24h`."
    );
    // 30 GiB free: 30 h, above 24 h: silent.
    let mut alerter = Alerter::new(AlertsConfig::default());
    let later = AlertInputs {
        free_bytes: Some(30 * GIB),
        disk_full_eta: disk_full_eta(30 * GIB, &g),
        ..AlertInputs::default()
    };
    assert!(alerter.evaluate(&later, t(START + 3600)).is_empty());
}

#[test]
fn total_limit_is_off_by_default_and_fires_when_set() {
    let inputs = AlertInputs {
        total_allocated_bytes: 500 * GIB,
        ..AlertInputs::default()
    };
    assert!(Alerter::new(AlertsConfig::default())
        .evaluate(&inputs, t(START))
        .is_empty());
    let config = AlertsConfig {
        total_limit_bytes: Some(100 * GIB),
        ..AlertsConfig::default()
    };
    let fired = Alerter::new(config).evaluate(&inputs, t(START));
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].rule, AlertRule::TotalLimit);
    assert!(fired[0].message.contains("500 GiB"), "{}", fired[0].message);
    assert!(fired[0].message.contains("100 GiB"), "{}", fired[0].message);
}

#[test]
fn crash_loop_alerts_pass_through_and_do_not_take_a_cooldown_here() {
    let crash = AlertDto::new(
        START,
        cachewatch::dto::AlertRule::CrashLoop,
        None,
        "KataGo keeps crashing",
        "katago crashed 6 times in the last 10m",
    );
    let inputs = AlertInputs {
        crash_alerts: vec![crash.clone()],
        ..AlertInputs::default()
    };
    let mut alerter = Alerter::new(AlertsConfig::default());
    for _ in 0..2 {
        let fired = alerter.evaluate(&inputs, t(START));
        assert_eq!(fired.len(), 1);
        assert_eq!(fired[0].to_dto(0), crash);
    }
}

#[test]
fn config_parses_humantime_windows_defaults_and_rejects_typos() {
    #[derive(serde::Deserialize)]
    struct File {
        alerts: AlertsConfig,
    }
    let f: File = toml::from_str(
        "[alerts]\nproducer_growth_items = 2000\nproducer_growth_window = \"30m\"\n\
         cooldown = \"1h 30m\"\ntotal_limit_bytes = 1000\n[alerts.crash_loop]\n\
         crash_loop_reports = 3\n",
    )
    .expect("parse");
    let c = f.alerts;
    assert_eq!(c.producer_growth_items, 2000);
    assert_eq!(c.producer_growth_window, Duration::from_secs(1800));
    assert_eq!(c.cooldown, Duration::from_secs(5400));
    assert_eq!(c.total_limit_bytes, Some(1000));
    assert_eq!(c.crash_loop.crash_loop_reports, 3);
    // unset fields keep their defaults
    assert_eq!(c.producer_growth_bytes, GIB);
    assert_eq!(c.free_disk_min_bytes, 10 * GIB);
    assert_eq!(c.disk_full_eta_min_hours, 24);

    let d = AlertsConfig::default();
    assert_eq!(d.producer_growth_window, HOUR);
    assert_eq!(d.cooldown, Duration::from_secs(6 * 3600));
    assert_eq!(d.total_limit_bytes, None);
    // round trip
    let text = toml::to_string(&d).expect("serialize");
    assert!(text.contains("cooldown = \"6h\""), "{text}");
    assert_eq!(toml::from_str::<AlertsConfig>(&text).expect("reparse"), d);

    let typo = toml::from_str::<AlertsConfig>("producer_growth_itmes = 5").expect_err("typo");
    assert!(typo.to_string().contains("producer_growth_itmes"), "{typo}");
    let bad = toml::from_str::<AlertsConfig>("cooldown = \"soon\"").expect_err("bad duration");
    assert!(bad.to_string().contains("soon"), "{bad}");
}

#[test]
fn byte_amounts_read_in_binary_units() {
    assert_eq!(format_bytes(0), "0 B");
    assert_eq!(format_bytes(1023), "1023 B");
    assert_eq!(format_bytes(1536), "1.5 KiB");
    assert_eq!(format_bytes(i128::from(3 * GIB)), "3.0 GiB");
    assert_eq!(format_bytes(-(i128::from(50 * MIB))), "\u{2212}50.0 MiB");
}

/// An unknown producer (a group of unattributed entries of one name shape) that grows past the
/// producer-growth limits fires `unknown-producer-growth` with its shape, rate and writer, once
/// per cooldown, like a producer.
#[test]
fn an_unknown_producer_growing_fires_with_its_shape_rate_and_writer() {
    let mut alerter = Alerter::new(AlertsConfig::default());
    let g = cachewatch::history::Growth {
        bytes: (3 * GIB) as i64,
        items: 3400,
        from: t(START),
        to: t(START + 3600),
    };
    let group = cachewatch::alerts::GroupInput {
        shape: ".<hex16>-<digits8>.dylib".into(),
        label: ".<hex16>-<digits8>.dylib".into(),
        root: "/tmp".into(),
        allocated_bytes: 190 * GIB,
        items: 81_653,
        growth: Some(g),
        writer: Some("bun (pid 4242)".into()),
        confirmed_leak: false,
    };
    let inputs = AlertInputs {
        groups: vec![group.clone()],
        ..AlertInputs::default()
    };
    let fired = alerter.evaluate(&inputs, t(START + 3600));
    assert_eq!(fired.len(), 1, "{fired:?}");
    let a = &fired[0];
    assert_eq!(a.rule, AlertRule::UnknownProducerGrowth);
    assert_eq!(
        a.title,
        "Unknown producer growing: .<hex16>-<digits8>.dylib"
    );
    assert!(a.message.contains("(3.0 GiB/h)"), "{}", a.message);
    assert!(
        a.message.contains("Written by bun (pid 4242)."),
        "{}",
        a.message
    );
    assert!(
        a.message
            .contains("cachewatch rules add --id ID -- '.<hex16>-<digits8>.dylib'"),
        "{}",
        a.message
    );
    // Within the cooldown: silent. Below the limits: silent.
    assert!(alerter.evaluate(&inputs, t(START + 3700)).is_empty());
    let mut small = group;
    small.growth = Some(cachewatch::history::Growth {
        bytes: MIB as i64,
        items: 3,
        ..g
    });
    let mut fresh = Alerter::new(AlertsConfig::default());
    let quiet = AlertInputs {
        groups: vec![small],
        ..AlertInputs::default()
    };
    assert!(fresh.evaluate(&quiet, t(START + 3600)).is_empty());
    assert!(!a.message.contains("confirmed leak"), "{}", a.message);
}

/// A growing group whose writers have all exited says so, with the bytes it holds.
#[test]
fn an_unknown_producer_whose_writers_exited_is_a_confirmed_leak_in_the_alert() {
    let mut alerter = Alerter::new(AlertsConfig::default());
    let group = cachewatch::alerts::GroupInput {
        shape: "wrk_<digits4-7>_<digits1>_<ts>/".into(),
        label: "wrk_<digits4-7>_<digits1>_<ts>/".into(),
        root: "/tmp".into(),
        allocated_bytes: 3 * GIB,
        items: 6000,
        growth: Some(cachewatch::history::Growth {
            bytes: GIB as i64,
            items: 5000,
            from: t(START),
            to: t(START + 3600),
        }),
        writer: Some("katago (exited; last seen 2 h ago)".into()),
        confirmed_leak: true,
    };
    let inputs = AlertInputs {
        groups: vec![group],
        ..AlertInputs::default()
    };
    let fired = alerter.evaluate(&inputs, t(START + 3600));
    assert_eq!(fired.len(), 1, "{fired:?}");
    let m = &fired[0].message;
    assert!(
        m.contains("Written by katago (exited; last seen 2 h ago). Its writers have all exited: a confirmed leak of 3.0 GiB."),
        "{m}"
    );
}
