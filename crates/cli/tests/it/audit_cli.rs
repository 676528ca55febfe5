//! The reclaim audit (safety rule 7) end to end through the binary: every deletion has its row
//! before it happens, even when the process dies in the middle.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cachewatch_testkit::tree::{days_ago, make_archives, set_tree_mtime};

/// Kill `cachewatch reclaim --yes` between the plan and the last deletion: every item already gone
/// from the disk has its audit row (written, with its batch, before it was deleted), and no item
/// still on disk has a `deleted` row (an interrupted one reads `attempt`, shown as `interrupted`).
#[test]
fn reclaim_killed_mid_way_left_an_audit_row_for_every_deleted_item() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let data = dir.path().join("data");
    let dirs = make_archives(&cache, "k", 2000, 6);
    set_tree_mtime(&cache, days_ago(10));
    let mut child = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .args(["reclaim", "--yes", "--older-than", "1h", "--root"])
        .arg(format!("cache={}", cache.display()))
        .arg("--data-dir")
        .arg(&data)
        .arg("--config")
        .arg(dir.path().join("config.toml"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill as soon as the first item is gone (bounded wait).
    let start = Instant::now();
    let killed_mid_way = loop {
        if dirs.iter().step_by(97).any(|d| !d.exists()) || !dirs[0].exists() {
            child.kill().unwrap();
            break true;
        }
        if child.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_secs(60) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    child.wait().unwrap();
    eprintln!(
        "killed mid-way: {killed_mid_way}, after {:?}",
        start.elapsed()
    );
    let gone: Vec<String> = dirs
        .iter()
        .filter(|d| !d.exists())
        .map(|d| d.display().to_string())
        .collect();
    assert!(!gone.is_empty(), "the reclaim deleted nothing");
    let conn = rusqlite::Connection::open(data.join("cachewatch.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT path_text, outcome FROM reclaims")
        .unwrap();
    let rows: std::collections::HashMap<String, String> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Rows are written a batch at a time, each batch's before any of its deletions.
    assert!(
        rows.len() >= gone.len() && rows.len() <= dirs.len(),
        "{} rows",
        rows.len()
    );
    for g in &gone {
        assert!(rows.contains_key(g), "{g} was deleted without an audit row");
    }
    if killed_mid_way && gone.len() < dirs.len() {
        for d in dirs.iter().filter(|d| d.exists()) {
            let outcome = rows.get(&d.display().to_string()).map(String::as_str);
            assert_ne!(outcome, Some("deleted"), "{} is on disk", d.display());
        }
    } else {
        eprintln!(
            "note: the reclaim finished before it could be killed; only the row count checked"
        );
    }
}

/// The same root given twice (`--root cache=R --root cache=R`, or R and a symlink to it) planned 6
/// for 3 items and audited `deleted 1, already-gone 2, not-attempted 3`. Roots are deduplicated by
/// canonical path: 3 planned, 3 `deleted` rows.
#[test]
fn the_same_root_given_twice_plans_and_audits_each_item_once() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let data = dir.path().join("data");
    let dirs = make_archives(&cache, "twice", 3, 2);
    set_tree_mtime(&cache, days_ago(10));
    let link = dir.path().join("cache-link");
    std::os::unix::fs::symlink(&cache, &link).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .args(["reclaim", "--yes", "--json", "--older-than", "1h"])
        .args(["--root", &format!("cache={}", cache.display())])
        .args(["--root", &format!("cache={}", cache.display())])
        .args(["--root", &format!("cache={}", link.display())])
        .arg("--data-dir")
        .arg(&data)
        .arg("--config")
        .arg(dir.path().join("config.toml"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["planned"].as_array().unwrap().len(), 3, "{v:#}");
    assert_eq!(v["deleted"].as_array().unwrap().len(), 3);
    assert!(dirs.iter().all(|d| !d.exists()));
    let conn = rusqlite::Connection::open(data.join("cachewatch.db")).unwrap();
    let outcomes: Vec<String> = conn
        .prepare("SELECT outcome FROM reclaims")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(outcomes, vec!["deleted"; 3]);
}
