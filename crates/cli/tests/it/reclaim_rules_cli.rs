//! `reclaim --rules` with two rules over the same items, through the binary: the dry run's figures
//! are `du`'s and a hand count, and each rule plans on the roots as they are when it runs (scanned
//! while it plans, the plan spooled): the second rule finds what the first deleted gone, instead of
//! planning it again from one scan made before both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use cachewatch::history::History;
use cachewatch_testkit::{du, tree};
use serde_json::Value;

const CONFIG: &str = r#"
[[producer]]
id = "my-tool"
name = "My tool scratch dirs"
root = "temp"
item = "my-tool-*"
kind = "leak"
reclaim = "manual"
evidence = ["https://example.invalid/1"]
examples = ["my-tool-1"]
counter_examples = ["other"]

[[auto_reclaim]]
name = "hourly"
producers = ["my-tool"]
older_than = "1h"
every = "1h"

[[auto_reclaim]]
name = "weekly"
producers = ["my-tool"]
older_than = "3d"
every = "1d"
"#;

/// `n` dirs `my-tool-<tag><i>` with a file of a size varying with `i`, `days` old (0: new).
fn dirs(root: &Path, tag: &str, n: usize, days: u64) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let d = root.join(format!("my-tool-{tag}{i:03}"));
            tree::write_file(&d.join("f"), 500 + i * 900);
            if days > 0 {
                tree::set_tree_mtime(&d, tree::days_ago(days));
            }
            d
        })
        .collect()
}

fn run(dir: &Path, root: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(args)
        .arg("--root")
        .arg(format!("temp={}", root.display()))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kept(v: &Value) -> BTreeMap<String, u64> {
    serde_json::from_value(v["kept"].clone()).unwrap()
}

#[test]
fn each_rule_plans_the_roots_as_they_are_when_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let two_days = dirs(&root, "b", 40, 2);
    let five_days = dirs(&root, "e", 10, 5);
    let young = dirs(&root, "n", 3, 0);
    std::fs::write(dir.path().join("config.toml"), CONFIG).unwrap();
    let mut old: Vec<PathBuf> = two_days.iter().chain(&five_days).cloned().collect();
    old.sort();

    let (code, out, err) = run(
        dir.path(),
        &root,
        &["reclaim", "--rules", "--dry-run", "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let plans: Value = serde_json::from_str(&out).unwrap();
    let (hourly, weekly) = (&plans[0], &plans[1]);
    assert_eq!(hourly["rule"], "hourly");
    assert_eq!(hourly["planned_items"], old.len() as u64);
    assert_eq!(hourly["planned_bytes"], du::allocated(&old));
    assert_eq!(kept(hourly), BTreeMap::from([("too-young".into(), 3)]));
    assert_eq!(weekly["planned_items"], five_days.len() as u64);
    assert_eq!(weekly["planned_bytes"], du::allocated(&five_days));
    let younger = (two_days.len() + young.len()) as u64;
    assert_eq!(
        kept(weekly),
        BTreeMap::from([("too-young".into(), younger)])
    );
    assert!(old.iter().all(|d| d.exists()));

    let freed = du::allocated(&old);
    let (code, out, err) = run(
        dir.path(),
        &root,
        &["reclaim", "--rules", "--yes", "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let runs: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(runs[0]["deleted_items"], old.len() as u64);
    assert_eq!(runs[0]["freed_bytes"], freed);
    // The weekly rule scans after the hourly one deleted its items: nothing of them is planned.
    assert_eq!(
        (&runs[1]["planned_items"], &runs[1]["already_gone"]),
        (&Value::from(0), &Value::from(0))
    );
    assert_eq!(kept(&runs[1]), BTreeMap::from([("too-young".into(), 3)]));
    assert!(old.iter().all(|d| !d.exists()) && young.iter().all(|d| d.exists()));

    let h = History::open_read_only(&dir.path().join("data/cachewatch.db")).unwrap();
    let mut rows: Vec<(PathBuf, String)> = h
        .reclaims(SystemTime::UNIX_EPOCH)
        .unwrap()
        .into_iter()
        .map(|r| (r.path, r.outcome.to_string()))
        .collect();
    rows.sort();
    let want: Vec<(PathBuf, String)> = old.iter().map(|p| (p.clone(), "deleted".into())).collect();
    assert_eq!(
        rows, want,
        "one audit row per deleted item, none for the weekly rule"
    );
    assert_eq!(h.auto_runs(SystemTime::UNIX_EPOCH).unwrap().len(), 2);
}
