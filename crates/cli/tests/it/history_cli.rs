//! The `history` subcommand end to end through the binary, over a history database written by
//! the engine.

use std::time::{Duration, UNIX_EPOCH};

use cachewatch::api::reclaim::AuditRecord;
use cachewatch::api::roots::RootKind;
use cachewatch::history::{History, Sample, Series};

fn t(secs: u64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

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

/// Runs `cachewatch --data-dir DIR ARGS` with an empty config; returns (exit code, stdout, stderr).
fn cachewatch_cli(data_dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env("CACHEWATCH_CONFIG", data_dir.join("no-such-config.toml"))
        .env_remove("RUST_LOG")
        .output()
        .expect("run cachewatch");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_history_reports_growth_per_producer_and_root_and_the_reclaims_in_the_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let now = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    let gpu = Series::Producer("metal-gpuarchiver".into());
    let tmp = Series::Root {
        kind: RootKind::Temp,
        path: "/tmp".into(),
    };
    {
        let mut h = History::open(&dir.path().join("cachewatch.db")).expect("open");
        // Before the 3 h window: the newest sample at or before `since` is gpu's base (the level
        // at that time); the other series are first sampled inside the window.
        h.record_samples(t(now - 5 * 3600), &[sample(gpu.clone(), 1, 1)])
            .expect("r");
        h.record_samples(
            t(now - 7200),
            &[
                sample(gpu.clone(), 1000, 10),
                sample(tmp.clone(), 5000, 7),
                sample(katago(), 800, 4),
            ],
        )
        .expect("r");
        h.record_samples(
            t(now - 600),
            &[
                sample(gpu.clone(), 6000, 510),
                sample(tmp.clone(), 4000, 6),
                sample(katago(), 100, 1),
            ],
        )
        .expect("r");
        let rec = |secs, path: &str, bytes, outcome: &str| AuditRecord {
            time: t(secs),
            path: path.into(),
            producer: "katago-coreml".into(),
            allocated_bytes: bytes,
            outcome: outcome.into(),
        };
        h.record_reclaims(&[
            rec(now - 4 * 3600, "/tmp/old", 99, "deleted"), // before the window
            rec(now - 3000, "/tmp/k1", 300, "deleted"),
            rec(now - 3000, "/tmp/k2", 200, "deleted"),
            rec(now - 2990, "/tmp/k3", 50, "skipped: in use"),
        ])
        .expect("r");
    }
    let (code, stdout, stderr) =
        cachewatch_cli(dir.path(), &["history", "--since", "3h", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let growth: Vec<(String, i64, i64)> = v["growth"]
        .as_array()
        .expect("array")
        .iter()
        .map(|g| {
            let label = g["id"].as_str().unwrap_or("total").to_string();
            (
                label,
                g["growth_bytes"].as_i64().expect("b"),
                g["growth_items"].as_i64().expect("i"),
            )
        })
        .collect();
    assert_eq!(
        growth,
        vec![
            ("metal-gpuarchiver".to_string(), 6000 - 1, 510 - 1),
            ("katago-coreml".to_string(), 100 - 800, 1 - 4),
            ("temp".to_string(), 4000 - 5000, 6 - 7),
        ]
    );
    assert_eq!(v["growth"][2]["path"], "/tmp");
    assert_eq!(v["growth"][0]["from_unix_secs"], now - 5 * 3600);
    assert_eq!(v["growth"][1]["from_unix_secs"], now - 7200);
    assert_eq!(v["growth"][0]["to_unix_secs"], now - 600);
    assert_eq!(v["reclaims"].as_array().expect("array").len(), 3);
    assert_eq!(v["reclaimed_bytes"], 500);

    // One producer: its growth, its regrowth since the last deletion (first sample after it is
    // the one at −10 min, the only one, so none), its reclaims.
    let (code, stdout, _) = cachewatch_cli(
        dir.path(),
        &[
            "history",
            "--since",
            "3h",
            "--producer",
            "katago-coreml",
            "--json",
        ],
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(v["growth"].as_array().expect("array").len(), 1);
    assert_eq!(v["growth"][0]["growth_bytes"], -700);
    assert!(v["regrowth_after_reclaim"].is_null());

    let (code, stdout, stderr) = cachewatch_cli(dir.path(), &["history", "--since", "3h"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("metal-gpuarchiver"), "{stdout}");
    assert!(stdout.contains("+5.9 KiB"), "{stdout}"); // 5999 B
    assert!(stdout.contains("root temp /tmp"), "{stdout}");
    assert!(stdout.contains("500 B freed"), "{stdout}");
}

#[test]
fn cli_history_without_a_database_says_where_it_looked_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, stderr) = cachewatch_cli(dir.path(), &["history"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("cachewatch.db"), "{stderr}");
    assert!(stderr.contains("no history"), "{stderr}");
    assert!(!dir.path().join("cachewatch.db").exists());
}

#[test]
fn attempt_rows_are_written_before_and_filled_after_and_a_leftover_reads_interrupted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("cachewatch.db");
    let now = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    let rec = |path: &str, bytes| AuditRecord {
        time: t(now - 60),
        path: path.into(),
        producer: "metal-gpuarchiver".into(),
        allocated_bytes: bytes,
        outcome: "ignored by begin_reclaims".into(),
    };
    {
        let mut h = History::open(&db).expect("open");
        let ids = h
            .begin_reclaims(&[rec("/tmp/a", 4096), rec("/tmp/b", 8192), rec("/tmp/c", 1)])
            .expect("begin");
        assert_eq!(ids.len(), 3);
        assert!(ids[0] < ids[1] && ids[1] < ids[2], "{ids:?}");
        // Stored as "attempt" in the table itself (read raw), shown as "interrupted".
        let conn = rusqlite::Connection::open(&db).expect("raw open");
        let raw: Vec<String> = conn
            .prepare("SELECT outcome FROM reclaims ORDER BY id")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(raw, vec!["attempt"; 3]);
        assert!(h
            .reclaims(t(0))
            .expect("read")
            .iter()
            .all(|r| r.outcome == "interrupted"));

        // /tmp/c's outcome is never filled: as if the process died while deleting it.
        h.finish_reclaims(&[
            (ids[0], "deleted".into()),
            (ids[1], "skipped: in use: pid 7 has /tmp/b/x open".into()),
        ])
        .expect("finish");
        let rows = h.reclaims(t(0)).expect("read");
        let got: Vec<(String, u64, String)> = rows
            .iter()
            .map(|r| {
                (
                    r.path.display().to_string(),
                    r.allocated_bytes,
                    r.outcome.to_string(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("/tmp/a".into(), 4096, "deleted".into()),
                (
                    "/tmp/b".into(),
                    8192,
                    "skipped: in use: pid 7 has /tmp/b/x open".into()
                ),
                ("/tmp/c".into(), 1, "interrupted".into()),
            ]
        );
        assert_eq!(
            h.last_reclaim("metal-gpuarchiver").expect("last"),
            Some(t(now - 60))
        );
    }
    let (code, stdout, stderr) =
        cachewatch_cli(dir.path(), &["history", "--since", "1h", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let outcomes: Vec<&str> = v["reclaims"]
        .as_array()
        .expect("array")
        .iter()
        .map(|r| r["outcome"].as_str().expect("outcome"))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            "deleted",
            "skipped: in use: pid 7 has /tmp/b/x open",
            "interrupted"
        ]
    );
    assert_eq!(v["reclaimed_bytes"], 4096);
}

/// Regression (tester): `history` showed bytes for `already-gone` rows, as if they were freed.
#[test]
fn reclaims_that_freed_nothing_show_no_bytes_in_the_history_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let now = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    {
        let mut h = History::open(&dir.path().join("cachewatch.db")).expect("open");
        let rec = |path: &str, bytes, outcome: &str| AuditRecord {
            time: t(now - 600),
            path: path.into(),
            producer: "katago-coreml".into(),
            allocated_bytes: bytes,
            outcome: outcome.into(),
        };
        h.record_reclaims(&[
            rec("/tmp/k1", 3 << 20, "deleted"),
            rec("/tmp/k2", 5 << 20, "already-gone"),
            rec("/tmp/k3", 7 << 20, "skipped: in use"),
            rec("/tmp/k4", 9 << 20, "error: permission denied"),
        ])
        .expect("r");
    }
    let (code, stdout, stderr) = cachewatch_cli(dir.path(), &["history", "--since", "1h"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("PRODUCER"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["katago-coreml", "already-gone", "1", "-"],
            vec!["katago-coreml", "deleted", "1", "3.0", "MiB"],
            vec!["katago-coreml", "error", "1", "-"],
            vec!["katago-coreml", "skipped", "1", "-"],
        ],
        "{stdout}"
    );
    assert!(stdout.contains("(3.0 MiB freed)"), "{stdout}");
}
