//! History DB: open, reclaim audit rows, samples, growth, downsampling, persistence, corruption.

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use cachewatch::history::{History, HistoryError, SCHEMA_VERSION};
use cachewatch_core::reclaim::AuditRecord;

fn t(secs: u64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

#[test]
fn open_creates_parent_dir_and_file_with_current_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a/b/cachewatch.db");
    let h = History::open(&path).expect("open");
    assert!(path.is_file());
    assert_eq!(h.path(), path);
    drop(h);
    let conn = rusqlite::Connection::open(&path).expect("raw open");
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("user_version");
    assert_eq!(v, SCHEMA_VERSION);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
}

#[test]
fn reclaim_rows_round_trip_including_non_utf8_paths_and_survive_reopen() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/gpuarchiver-\xff\xfe"));
    let recs = [
        AuditRecord {
            time: t(1_000),
            path: PathBuf::from("/tmp/katago/a.mlmodelc"),
            producer: "katago-coreml".into(),
            allocated_bytes: 4096 * 3,
            outcome: "deleted".into(),
        },
        AuditRecord {
            time: t(2_000),
            path: odd.clone(),
            producer: "metal-gpuarchiver".into(),
            allocated_bytes: u64::MAX,
            outcome: "skipped: in use".into(),
        },
    ];
    {
        let mut h = History::open(&path).expect("open");
        h.record_reclaim(&recs[0]).expect("record");
        h.record_reclaims(&recs[1..]).expect("record many");
    }
    let h = History::open(&path).expect("reopen");
    assert_eq!(
        h.reclaims(t(0)).expect("all"),
        recs[..1]
            .iter()
            .cloned()
            .chain([AuditRecord {
                allocated_bytes: i64::MAX as u64, // saturated at SQLite's integer range
                ..recs[1].clone()
            }])
            .collect::<Vec<_>>()
    );
    let later = h.reclaims(t(1_001)).expect("since");
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].path, odd);
    assert_eq!(
        h.last_reclaim("katago-coreml").expect("last"),
        Some(t(1_000))
    );
    // a skipped attempt is not a reclaim
    assert_eq!(h.last_reclaim("metal-gpuarchiver").expect("last"), None);
}

#[test]
fn corrupt_file_is_reported_with_its_path_and_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 13) as u8).collect();
    std::fs::write(&path, &garbage).expect("write garbage");
    let err = History::open(&path).expect_err("garbage must not open");
    assert!(err.is_corrupt(), "{err:?}");
    assert!(matches!(err, HistoryError::Corrupt { .. }));
    let msg = err.to_string();
    assert!(msg.contains(&*path.to_string_lossy()), "{msg}");
    assert_eq!(std::fs::read(&path).expect("read back"), garbage);
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(names, vec![std::ffi::OsString::from("cachewatch.db")]);
    let err = History::open_read_only(&path).expect_err("read-only too");
    assert!(err.is_corrupt(), "{err:?}");
}

use cachewatch::history::{disk_full_eta, Growth, Sample, Series};
use cachewatch_core::RootKind;

/// A day-aligned start (1_700_006_400 = 19_676 × 86_400), so hour and day buckets are easy to
/// count by hand.
const START: u64 = 1_700_006_400;

fn sample(series: Series, allocated_bytes: u64, items: u64) -> Sample {
    Sample {
        series,
        allocated_bytes,
        apparent_bytes: allocated_bytes / 2,
        items,
    }
}

fn katago() -> Series {
    Series::Producer("katago-coreml".into())
}

/// Samples every 10 minutes for 3 h: k = 0..=18, allocated = 1000 + 10·k², items = 3·k.
fn three_hours_of_katago(h: &mut History) {
    for k in 0..=18u64 {
        h.record_samples(
            t(START + k * 600),
            &[sample(katago(), 1000 + 10 * k * k, 3 * k)],
        )
        .expect("record");
    }
}

#[test]
fn growth_over_windows_uses_the_sample_at_the_window_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.db")).expect("open");
    three_hours_of_katago(&mut h);
    let now = t(START + 3 * 3600 + 300); // 5 min after the last sample (k = 18)

    // 1 h: base is the newest sample at or before now − 1 h = START + 2 h 5 min → k = 12.
    // bytes: 10·18² − 10·12² = 3240 − 1440 = 1800; items: 54 − 36 = 18.
    let g = h
        .growth(&katago(), Duration::from_secs(3600), now)
        .expect("q")
        .expect("some");
    assert_eq!(
        g,
        Growth {
            bytes: 1800,
            items: 18,
            from: t(START + 12 * 600),
            to: t(START + 18 * 600)
        }
    );
    assert_eq!(g.span(), Duration::from_secs(3600));
    assert_eq!(g.bytes_per(Duration::from_secs(3600)), Some(1800));

    // 24 h with 3 h of history: from the first sample (k = 0): 3240 bytes, 54 items over 3 h.
    let g = h
        .growth(&katago(), Duration::from_secs(86_400), now)
        .expect("q")
        .expect("some");
    assert_eq!((g.bytes, g.items, g.from), (3240, 54, t(START)));
    assert_eq!(g.bytes_per(Duration::from_secs(3600)), Some(1080)); // 3240 / 3

    // Unknown series, and a window ending before the first sample: no growth.
    assert_eq!(
        h.growth(&Series::Total, Duration::from_secs(3600), now)
            .expect("q"),
        None
    );
    assert_eq!(
        h.growth(&katago(), Duration::from_secs(3600), t(START + 60))
            .expect("q"),
        None
    );

    // The chart series from k = 16 on.
    let pts = h.series(&katago(), t(START + 16 * 600)).expect("series");
    assert_eq!(
        pts,
        vec![
            (t(START + 9600), 1000 + 2560, 48),
            (t(START + 10_200), 1000 + 2890, 51),
            (t(START + 10_800), 1000 + 3240, 54),
        ]
    );
}

#[test]
fn disk_full_eta_is_free_bytes_over_the_growth_rate() {
    let g = Growth {
        bytes: 1800,
        items: 0,
        from: t(START),
        to: t(START + 3600),
    };
    // 0.5 B/s: 9000 free bytes last 18 000 s.
    assert_eq!(disk_full_eta(9000, &g), Some(Duration::from_secs(18_000)));
    // 10 GiB free at 1 GiB/h: 10 h.
    let gib = 1u64 << 30;
    let fast = Growth {
        bytes: gib as i64,
        ..g
    };
    assert_eq!(
        disk_full_eta(10 * gib, &fast),
        Some(Duration::from_secs(36_000))
    );
    assert_eq!(disk_full_eta(9000, &Growth { bytes: 0, ..g }), None);
    assert_eq!(disk_full_eta(9000, &Growth { bytes: -5, ..g }), None);
    assert_eq!(disk_full_eta(9000, &Growth { to: g.from, ..g }), None);
}

#[test]
fn grown_since_sorts_by_byte_growth_and_measures_late_series_from_their_first_sample() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.db")).expect("open");
    let gpu = Series::Producer("metal-gpuarchiver".into());
    let root = Series::Root {
        kind: RootKind::Temp,
        path: "/tmp".into(),
    };
    h.record_samples(
        t(START),
        &[sample(katago(), 100, 1), sample(root.clone(), 5000, 10)],
    )
    .expect("r");
    h.record_samples(t(START + 600), &[sample(gpu.clone(), 0, 0)])
        .expect("r");
    h.record_samples(
        t(START + 1200),
        &[
            sample(katago(), 600, 2),
            sample(gpu.clone(), 2000, 4000),
            sample(root.clone(), 4900, 9),
        ],
    )
    .expect("r");
    let grown = h.grown_since(t(START + 300), t(START + 1200)).expect("q");
    assert_eq!(
        grown,
        vec![
            (
                gpu,
                Growth {
                    bytes: 2000,
                    items: 4000,
                    from: t(START + 600), // first sampled after `since`
                    to: t(START + 1200)
                }
            ),
            (
                katago(),
                Growth {
                    bytes: 500,
                    items: 1,
                    from: t(START),
                    to: t(START + 1200)
                }
            ),
            (
                root,
                Growth {
                    bytes: -100,
                    items: -1,
                    from: t(START),
                    to: t(START + 1200)
                }
            ),
        ]
    );
}

#[test]
fn regrowth_after_reclaim_counts_from_the_first_sample_after_the_last_deletion() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.db")).expect("open");
    h.record_samples(t(START), &[sample(katago(), 9000, 30)])
        .expect("r");
    let deleted = |secs, outcome: &str| AuditRecord {
        time: t(secs),
        path: "/tmp/k".into(),
        producer: "katago-coreml".into(),
        allocated_bytes: 300,
        outcome: outcome.into(),
    };
    assert_eq!(
        h.regrowth_after_reclaim("katago-coreml", t(START + 5000))
            .expect("q"),
        None
    );
    h.record_reclaims(&[
        deleted(START + 100, "deleted"),
        deleted(START + 200, "deleted"),
    ])
    .expect("r");
    h.record_reclaim(&deleted(START + 900, "skipped: in use"))
        .expect("r");
    h.record_samples(t(START + 300), &[sample(katago(), 100, 1)])
        .expect("r");
    h.record_samples(t(START + 4000), &[sample(katago(), 2600, 11)])
        .expect("r");
    // last deletion at +200 (the skipped one at +900 does not count); first sample after: +300.
    assert_eq!(
        h.regrowth_after_reclaim("katago-coreml", t(START + 5000))
            .expect("q"),
        Some(Growth {
            bytes: 2500,
            items: 10,
            from: t(START + 300),
            to: t(START + 4000)
        })
    );
}

#[test]
fn last_samples_and_alerts_survive_a_restart() {
    use cachewatch::dto::{AlertDto, AlertRule};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.db");
    let alert = |secs: u64, rule: AlertRule| {
        AlertDto::new(secs, rule, Some("katago-coreml".into()), "t", "m")
    };
    {
        let mut h = History::open(&path).expect("open");
        three_hours_of_katago(&mut h);
        h.record_samples(t(START + 60), &[sample(Series::Total, 7, 1)])
            .expect("r");
        assert_eq!(
            h.record_alert(&alert(START, AlertRule::ProducerGrowth))
                .expect("a"),
            1
        );
        assert_eq!(
            h.record_alert(&alert(START + 10, AlertRule::FreeDisk))
                .expect("a"),
            2
        );
    }
    let h = History::open(&path).expect("reopen");
    assert_eq!(
        h.last_samples().expect("last"),
        vec![
            (t(START + 18 * 600), sample(katago(), 1000 + 3240, 54)),
            (t(START + 60), sample(Series::Total, 7, 1)),
        ]
    );
    let recent = h.recent_alerts(5).expect("alerts");
    assert_eq!(
        recent,
        vec![
            AlertDto {
                id: 2,
                ..alert(START + 10, AlertRule::FreeDisk)
            },
            AlertDto {
                id: 1,
                ..alert(START, AlertRule::ProducerGrowth)
            }
        ]
    );
    assert_eq!(h.recent_alerts(1).expect("alerts").len(), 1);
}

#[test]
fn compact_keeps_minutes_for_48h_hours_for_30d_days_for_400d() {
    use cachewatch::history::MAX_ROWS_PER_SERIES;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.db")).expect("open");
    // A week of minute samples: i = 0..10_080 at START + 60·i; allocated = 10·i, items = i.
    let minutes = 7 * 1440u64;
    for i in 0..minutes {
        h.record_samples(t(START + 60 * i), &[sample(katago(), 10 * i, i)])
            .expect("r");
    }
    let now = t(START + 7 * 86_400);
    let before_24h = h
        .growth(&katago(), Duration::from_secs(86_400), now)
        .expect("q");

    // Minute tier: time ≥ now − 48 h ⇔ i ≥ (604 800 − 172 800) / 60 = 7200 → 2880 rows.
    // Hour tier: i < 7200 = 120 hours, the last sample of each (i = 60·h + 59) → 120 rows.
    let report = h.compact(now).expect("compact");
    assert_eq!(report.samples_deleted, minutes - 3000);
    let rows = h.series(&katago(), t(0)).expect("rows");
    assert_eq!(rows.len(), 3000);
    let expected_hourly: Vec<_> = (0..120u64)
        .map(|hour| {
            let i = 60 * hour + 59;
            (t(START + 60 * i), 10 * i, i)
        })
        .collect();
    assert_eq!(rows[..120], expected_hourly[..]);
    assert_eq!(rows[120], (t(START + 60 * 7200), 72_000, 7200));
    // Idempotent, and the recent growth is unchanged (its points are kept).
    assert_eq!(h.compact(now).expect("again").samples_deleted, 0);
    assert_eq!(
        h.growth(&katago(), Duration::from_secs(86_400), now)
            .expect("q"),
        before_24h
    );

    // 40 days later everything is older than 30 d: one row per UTC day, the day's last minute.
    let later = t(START + 40 * 86_400);
    h.compact(later).expect("compact");
    let rows = h.series(&katago(), t(0)).expect("rows");
    let expected_daily: Vec<_> = (1..=7u64)
        .map(|day| {
            let i = 1440 * day - 1;
            (t(START + 60 * i), 10 * i, i)
        })
        .collect();
    assert_eq!(rows, expected_daily);
    assert!((rows.len() as u64) <= MAX_ROWS_PER_SERIES);

    // Past the 400-day retention the series is gone.
    let report = h.compact(t(START + 408 * 86_400)).expect("compact");
    assert_eq!(report.samples_deleted, 7);
    assert_eq!(h.series(&katago(), t(0)).expect("rows"), vec![]);
    assert_eq!(h.last_samples().expect("last"), vec![]);
}

#[test]
fn locked_database_is_reported_as_locked_with_its_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.db");
    let mut h = History::open(&path).expect("open");
    let other = rusqlite::Connection::open(&path).expect("raw open");
    other.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    let err = h
        .record_samples(t(START), &[sample(Series::Total, 1, 1)])
        .expect_err("locked");
    assert!(err.is_locked(), "{err:?}");
    assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    other.execute_batch("COMMIT").expect("unlock");
    h.record_samples(t(START), &[sample(Series::Total, 1, 1)])
        .expect("works once unlocked");
}

/// Figures, not a check: `cargo test --release --test history -- --ignored --nocapture`.
/// 40 series (30 producers, 9 roots, total) sampled every minute for 30 days, then compacted.
#[test]
#[ignore = "benchmark: prints figures"]
fn bench_a_month_of_minute_samples_for_40_series_compacts_to_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.db");
    let mut h = History::open(&path).expect("open");
    let series: Vec<Series> = (0..30)
        .map(|i| Series::Producer(format!("producer-{i:02}")))
        .chain((0..9).map(|i| Series::Root {
            kind: RootKind::Cache,
            path: format!("/root/{i}").into(),
        }))
        .chain([Series::Total])
        .collect();
    let minutes = 30 * 1440u64;
    let started = std::time::Instant::now();
    for m in 0..minutes {
        let samples: Vec<Sample> = series
            .iter()
            .enumerate()
            .map(|(k, s)| sample(s.clone(), m * (k as u64 + 1), m))
            .collect();
        h.record_samples(t(START + 60 * m), &samples).expect("r");
    }
    let insert = started.elapsed();
    let size = |p: &std::path::Path| {
        ["", "-wal"]
            .iter()
            .map(|s| {
                let mut f = p.as_os_str().to_owned();
                f.push(s);
                std::fs::metadata(&f).map_or(0, |m| m.len())
            })
            .sum::<u64>()
    };
    let before = size(&path);
    let started = std::time::Instant::now();
    let report = h.compact(t(START + minutes * 60)).expect("compact");
    let compact = started.elapsed();
    let rows: usize = series
        .iter()
        .map(|s| h.series(s, t(0)).expect("rows").len())
        .sum();
    println!(
        "{} rows inserted in {insert:?} ({:.0} µs per 40-series record), {} MiB; compact removed \
         {} rows in {compact:?}; {rows} rows left ({} per series, bound {})",
        minutes * 40,
        insert.as_micros() as f64 / minutes as f64,
        before >> 20,
        report.samples_deleted,
        rows / 40,
        cachewatch::history::MAX_ROWS_PER_SERIES
    );
    assert_eq!(rows / 40, 2880 + (28 * 24));
}

#[test]
fn an_empty_database_file_read_only_says_empty_not_schema_version_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    std::fs::write(&path, b"").expect("write an empty file");
    let Err(err) = History::open_read_only(&path) else {
        panic!("an empty file has no history to read");
    };
    assert!(
        matches!(&err, HistoryError::Empty { path: p } if *p == path),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("is empty") && msg.contains("cachewatch.db"),
        "{msg}"
    );
    assert!(!msg.contains("schema version 0"), "{msg}");
    // Nothing was written: the file is still empty.
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), 0);
}

/// The tables and views of the database at `path`, sorted (read with SQLite directly).
/// The column names of `table` in the database at `path`, in order.
fn columns_of(path: &std::path::Path, table: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("raw");
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
        .expect("prepare");
    let out = stmt
        .query_map([table], |r| r.get(0))
        .expect("query")
        .collect::<Result<Vec<String>, _>>()
        .expect("columns");
    out
}

fn tables_of(path: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("raw open");
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name")
        .expect("prepare");
    let names = stmt
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<Vec<String>, _>>()
        .expect("rows");
    names
}

/// Regression: another program's SQLite database at the history path got our tables added to
/// it. It is refused, with its path and its tables, and left byte for byte as it was.
#[test]
fn another_programs_database_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("create");
        conn.execute_batch("CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (42);")
            .expect("foreign table");
    }
    let before = std::fs::read(&path).expect("read");
    for err in [
        History::open(&path).expect_err("a foreign database must not open"),
        History::open_read_only(&path).expect_err("nor read-only"),
    ] {
        match &err {
            HistoryError::Foreign { tables, .. } => assert_eq!(tables, &["foo"]),
            other => panic!("expected Foreign, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&*path.to_string_lossy()), "{msg}");
        assert!(msg.contains("tables: foo"), "{msg}");
    }
    assert_eq!(std::fs::read(&path).expect("read back"), before);
    assert_eq!(tables_of(&path), ["foo"]);
    // Our tables beside another program's are not ours either (no application id).
    let mixed = dir.path().join("mixed.db");
    drop(History::open(&mixed).expect("ours"));
    {
        let conn = rusqlite::Connection::open(&mixed).expect("raw");
        conn.execute_batch("PRAGMA application_id = 0; CREATE TABLE foo (x INTEGER);")
            .expect("add foo");
    }
    assert!(matches!(
        History::open(&mixed),
        Err(HistoryError::Foreign { .. })
    ));
}

/// Databases written before the application id was set (schema 1 to 3, id 0) still open, and
/// one of this schema (4) with the id cleared; the older ones are migrated (getting the groups'
/// tables, and the writers' digit run); all are marked ours. Read-only, those this build reads
/// as they are (3 and 4) open.
#[test]
fn older_cachewatch_databases_without_the_application_id_still_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let groups = "DROP TABLE group_samples; DROP TABLE group_writers;";
    for (version, drop_sql) in [
        (4, String::new()),
        (
            3,
            "ALTER TABLE group_writers DROP COLUMN pid_run;".to_owned(),
        ),
        (2, groups.to_owned()),
        (1, format!("{groups} DROP TABLE auto_reclaim_runs;")),
    ] {
        let path = dir.path().join(format!("v{version}.db"));
        drop(History::open(&path).expect("create"));
        {
            let conn = rusqlite::Connection::open(&path).expect("raw");
            conn.execute_batch(&format!(
                "{drop_sql} PRAGMA user_version = {version}; PRAGMA application_id = 0;"
            ))
            .expect("make it look older");
        }
        if version >= cachewatch::history::READABLE_SINCE {
            drop(History::open_read_only(&path).expect("read-only opens as it is"));
        }
        drop(History::open(&path).expect("an older cachewatch database opens"));
        let conn = rusqlite::Connection::open(&path).expect("raw");
        let (id, v): (i32, i64) = conn
            .query_row(
                "SELECT (SELECT application_id FROM pragma_application_id), \
                 (SELECT user_version FROM pragma_user_version)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("pragmas");
        assert_eq!(id, cachewatch::history::APPLICATION_ID, "v{version}");
        assert_eq!(v, SCHEMA_VERSION, "v{version}");
        let tables = tables_of(&path);
        for t in ["auto_reclaim_runs", "group_samples", "group_writers"] {
            assert!(tables.contains(&t.to_owned()), "v{version}: {tables:?}");
        }
        assert!(
            columns_of(&path, "group_writers").contains(&"pid_run".to_owned()),
            "v{version}"
        );
    }
}

/// A schema-2 database with samples in it is migrated to 3: its samples stay, and group samples
/// and writers can be written and read back.
#[test]
fn a_schema_2_database_keeps_its_samples_and_gets_the_group_tables() {
    use cachewatch::history::{GroupSample, Sample, Series, StoredWriter};
    use cachewatch_core::provenance::EvidenceKind;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v2.db");
    let t0 = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    {
        let mut h = History::open(&path).expect("create");
        h.record_samples(
            t0,
            &[Sample {
                series: Series::Producer("metal".into()),
                allocated_bytes: 4096,
                apparent_bytes: 100,
                items: 1,
            }],
        )
        .expect("sample");
    }
    {
        let conn = rusqlite::Connection::open(&path).expect("raw");
        conn.execute_batch(
            "DROP TABLE group_samples; DROP TABLE group_writers; PRAGMA user_version = 2;",
        )
        .expect("make it schema 2");
    }
    let mut h = History::open(&path).expect("migrates");
    let got = h
        .series(&Series::Producer("metal".into()), UNIX_EPOCH)
        .expect("read");
    assert_eq!(got, vec![(t0, 4096, 1)]);
    let key = b"/r\0dwrk_".to_vec();
    let w = StoredWriter {
        key: key.clone(),
        kind: EvidenceKind::PidInName,
        name: "leakwriter".into(),
        exe: Some("/bin/\u{e9}".into()),
        app: None,
        app_version: None,
        agree: 3,
        total: 4,
        first_seen: t0,
        last_seen: Some(t0 + Duration::from_secs(5)),
        pid_run: Some(1),
    };
    let s = GroupSample {
        key: key.clone(),
        label: "wrk_<digits4>/".into(),
        allocated_bytes: 8192,
        items: 2,
    };
    h.record_groups(t0 + Duration::from_secs(10), &[s], std::slice::from_ref(&w))
        .expect("groups");
    // Seen again, not alive: the last time it was seen alive stays.
    let later = StoredWriter {
        last_seen: None,
        first_seen: t0 + Duration::from_secs(20),
        agree: 4,
        ..w.clone()
    };
    h.record_groups(t0 + Duration::from_secs(20), &[], &[later])
        .expect("again");
    let got = h.group_writers().expect("writers");
    assert_eq!(got, vec![StoredWriter { agree: 4, ..w }]);
    assert_eq!(
        h.group_series(&key, UNIX_EPOCH).expect("series"),
        vec![(t0 + Duration::from_secs(10), 8192, 2)]
    );
}

/// Group samples are bounded as a series' are: a week of minute samples keeps the minute tier's
/// 2880 and one an hour before; past 400 days the group's samples and its writers go.
#[test]
fn group_samples_compact_like_series_and_expired_groups_lose_their_writers() {
    use cachewatch::history::{GroupSample, StoredWriter};
    use cachewatch_core::provenance::EvidenceKind;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = History::open(&dir.path().join("h.db")).expect("open");
    let key = b"/tmp\0dtmp\0r\x08".to_vec();
    let minutes = 7 * 1440u64;
    for i in 0..minutes {
        let s = GroupSample {
            key: key.clone(),
            label: "tmp<rand8>/".into(),
            allocated_bytes: 10 * i,
            items: i,
        };
        h.record_groups(t(START + 60 * i), &[s], &[]).expect("r");
    }
    let w = StoredWriter {
        key: key.clone(),
        kind: EvidenceKind::CreatedAtLaunch,
        name: "katago".into(),
        exe: None,
        app: None,
        app_version: None,
        agree: 30,
        total: 40,
        first_seen: t(START),
        last_seen: Some(t(START + 60)),
        pid_run: None,
    };
    h.record_groups(t(START + 60), &[], std::slice::from_ref(&w))
        .expect("writer");
    let now = t(START + 7 * 86_400);
    h.compact(now).expect("compact");
    let rows = h.group_series(&key, t(0)).expect("rows");
    // As for a series: 2880 minutes of the last 48 h, and the last minute of each of 120 hours.
    assert_eq!(rows.len(), 3000);
    assert_eq!(rows[0], (t(START + 60 * 59), 590, 59));
    let last_of_hour_119 = 60 * 119 + 59;
    assert_eq!(
        rows[119],
        (
            t(START + 60 * last_of_hour_119),
            10 * last_of_hour_119,
            last_of_hour_119
        )
    );
    assert_eq!(rows[120], (t(START + 60 * 7200), 72_000, 7200));
    assert_eq!(h.group_writers().expect("writers"), vec![w]);

    h.compact(t(START + 410 * 86_400)).expect("expire");
    assert!(h.group_series(&key, t(0)).expect("rows").is_empty());
    assert!(h.group_writers().expect("writers").is_empty());
}

/// A pid-in-name writer keeps which digit run of the names is the pid (a rule made from the group
/// after a restart takes `owner.pid_in_name` from it); a later sighting without one keeps it, one
/// with another run replaces it. A schema-3 database (no such column) keeps every sample and
/// writer: read-only it opens as it is (runs unknown), and opened for writing it is migrated to
/// 4, its rows kept.
#[test]
fn a_pid_in_name_writer_keeps_its_digit_run_and_a_schema_3_database_migrates_with_its_rows() {
    use cachewatch::history::{GroupSample, StoredWriter};
    use cachewatch_core::provenance::EvidenceKind;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.db");
    let t0 = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let key = b"/r\0dwrk_\0d\0_\0d\0".to_vec();
    let pid = StoredWriter {
        key: key.clone(),
        kind: EvidenceKind::PidInName,
        name: "leakwriter".into(),
        exe: Some("/opt/leak/bin/leakwriter".into()),
        app: None,
        app_version: None,
        agree: 5,
        total: 6,
        first_seen: t0,
        last_seen: Some(t0 + Duration::from_secs(5)),
        pid_run: Some(1),
    };
    let launch = StoredWriter {
        kind: EvidenceKind::CreatedAtLaunch,
        name: "katago".into(),
        exe: None,
        pid_run: None,
        ..pid.clone()
    };
    let sample = GroupSample {
        key: key.clone(),
        label: "wrk_<digits2>_<digits5>/".into(),
        allocated_bytes: 8192,
        items: 6,
    };
    {
        let mut h = History::open(&path).expect("create");
        h.record_groups(
            t0,
            std::slice::from_ref(&sample),
            &[pid.clone(), launch.clone()],
        )
        .expect("groups");
        // Ordered by kind's text: created-at-launch, then pid-in-name.
        assert_eq!(
            h.group_writers().expect("writers"),
            vec![launch.clone(), pid.clone()]
        );
        // Seen again without a run (remembered from a row that had none): the run stays.
        let again = StoredWriter {
            pid_run: None,
            agree: 6,
            ..pid.clone()
        };
        h.record_groups(t0 + Duration::from_secs(60), &[], &[again])
            .expect("again");
        let got = h.group_writers().expect("writers");
        assert_eq!(got[1].pid_run, Some(1));
        assert_eq!(got[1].agree, 6);
        // Found in another run now: that one is kept.
        let moved = StoredWriter {
            pid_run: Some(0),
            ..pid.clone()
        };
        h.record_groups(t0 + Duration::from_secs(120), &[], &[moved])
            .expect("moved");
    }
    // Reopened: as stored.
    let got = History::open(&path)
        .expect("reopen")
        .group_writers()
        .expect("writers");
    assert_eq!(
        got,
        vec![
            launch.clone(),
            StoredWriter {
                pid_run: Some(0),
                ..pid.clone()
            }
        ]
    );

    // The same rows as a schema-3 database holds them: no `pid_run` column.
    {
        let conn = rusqlite::Connection::open(&path).expect("raw");
        conn.execute_batch(
            "ALTER TABLE group_writers DROP COLUMN pid_run; PRAGMA user_version = 3;",
        )
        .expect("make it schema 3");
    }
    assert!(!columns_of(&path, "group_writers").contains(&"pid_run".to_owned()));
    let unknown = StoredWriter {
        pid_run: None,
        ..pid.clone()
    };
    {
        let h = History::open_read_only(&path).expect("a schema-3 database reads as it is");
        assert_eq!(
            h.group_writers().expect("writers"),
            vec![launch.clone(), unknown.clone()]
        );
        assert_eq!(
            h.group_series(&key, UNIX_EPOCH).expect("series"),
            vec![(t0, 8192, 6)]
        );
    }
    assert_eq!(
        columns_of(&path, "group_writers").len(),
        10,
        "read-only adds nothing"
    );
    let mut h = History::open(&path).expect("migrates");
    let v: i64 = rusqlite::Connection::open(&path)
        .expect("raw")
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(v, SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 4);
    assert_eq!(
        h.group_writers().expect("writers"),
        vec![launch.clone(), unknown]
    );
    assert_eq!(
        h.group_series(&key, UNIX_EPOCH).expect("series"),
        vec![(t0, 8192, 6)]
    );
    // The monitor names the pid run again: stored.
    h.record_groups(
        t0 + Duration::from_secs(180),
        &[],
        std::slice::from_ref(&pid),
    )
    .expect("named again");
    assert_eq!(h.group_writers().expect("writers"), vec![launch, pid]);
}

/// A database of a newer schema than this build knows (what an older cachewatch finds after an
/// upgrade and a downgrade) is refused, for writing and read-only, saying to upgrade, and left as
/// it was; one older than a read-only open reads says to run the monitor to migrate it.
#[test]
fn a_newer_schema_is_refused_and_an_older_one_read_only_says_to_migrate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("new.db");
    drop(History::open(&path).expect("create"));
    let newer = SCHEMA_VERSION + 1;
    rusqlite::Connection::open(&path)
        .expect("raw")
        .execute_batch(&format!("PRAGMA user_version = {newer};"))
        .expect("make it newer");
    let before = std::fs::read(&path).expect("read");
    for e in [
        History::open(&path).expect_err("newer"),
        History::open_read_only(&path).expect_err("newer"),
    ] {
        assert!(
            matches!(e, HistoryError::TooNew { found, known, .. } if found == newer && known == SCHEMA_VERSION),
            "{e:?}"
        );
        assert!(e.to_string().contains("upgrade cachewatch"), "{e}");
    }
    assert_eq!(std::fs::read(&path).expect("read"), before);

    let old = dir.path().join("old.db");
    drop(History::open(&old).expect("create"));
    rusqlite::Connection::open(&old)
        .expect("raw")
        .execute_batch(
            "DROP TABLE group_samples; DROP TABLE group_writers; PRAGMA user_version = 2;",
        )
        .expect("make it schema 2");
    let e = History::open_read_only(&old).expect_err("too old");
    assert!(
        matches!(
            e,
            HistoryError::TooOld {
                found: 2,
                known: 3,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("run the monitor once"), "{e}");
}
