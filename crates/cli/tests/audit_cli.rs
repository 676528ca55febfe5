//! The reclaim audit (safety rule 7) end to end through the binary: every deletion has its row
//! before it happens, even when the process dies in the middle.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cachewatch_testkit::tree::{days_ago, make_archives, set_tree_mtime};

/// Kill `cachewatch reclaim --yes` between the plan and the last deletion: every item already gone
/// from the disk has its audit row (written before it was deleted), and rows of items the process
/// never reached read `attempt` (shown as `interrupted`), not `deleted`.
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
    assert_eq!(
        rows.len(),
        dirs.len(),
        "one row per planned item, all written first"
    );
    for g in &gone {
        assert!(rows.contains_key(g), "{g} was deleted without an audit row");
    }
    if killed_mid_way && gone.len() < dirs.len() {
        let still_there = dirs.iter().find(|d| d.exists()).unwrap();
        let outcome = &rows[&still_there.display().to_string()];
        assert_ne!(outcome, "deleted", "{} is on disk", still_there.display());
    } else {
        eprintln!(
            "note: the reclaim finished before it could be killed; only the row count checked"
        );
    }
}
