//! `cachewatch reclaim` on a backlog prints a summary, not one line per item (699k lines were
//! printed for the seed's 699,300 dirs).

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};

use cachewatch_testkit::du;
use cachewatch_testkit::tree::{days_ago, make_archives, set_tree_mtime};

fn reclaim(args: &[&str], cache: &std::path::Path, dir: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("reclaim")
        .args(args)
        .args(["--older-than", "1h", "--root"])
        .arg(format!("cache={}", cache.display()))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(dir.join("config.toml"))
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
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_backlog_prints_one_row_per_producer_and_list_prints_every_item() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let old = make_archives(&cache, "o", 120, 1);
    set_tree_mtime(&cache, days_ago(3));
    let young = make_archives(&cache, "y", 45, 1);

    let text = reclaim(&["--dry-run"], &cache, dir.path());
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() < 15, "a summary, not a listing:\n{text}");
    let row = lines
        .iter()
        .find(|l| l.starts_with("metal-gpuarchiver"))
        .unwrap_or_else(|| panic!("no producer row:\n{text}"));
    assert!(row.split_whitespace().any(|w| w == "120"), "{row}");
    assert!(
        text.contains("120 item(s)") && text.contains("--list shows every item"),
        "{text}"
    );
    // The 45 young ones are counted by reason, with an example of the reason.
    let kept = lines
        .iter()
        .find(|l| l.starts_with("metal-gpuarchiver") && l.contains("too young"))
        .unwrap_or_else(|| panic!("no kept row:\n{text}"));
    assert!(kept.split_whitespace().any(|w| w == "45"), "{kept}");

    let listed = reclaim(&["--dry-run", "--list"], &cache, dir.path());
    for d in old.iter().chain(&young) {
        assert!(
            listed.contains(&d.display().to_string()),
            "{} not listed",
            d.display()
        );
    }
    // And it deletes what it summarised.
    let before = du::allocated(&old);
    let done = reclaim(&["--yes"], &cache, dir.path());
    assert!(done.contains("Deleted 120 item(s)"), "{done}");
    assert!(old.iter().all(|d| !d.exists()) && young.iter().all(|d| d.exists()));
    assert!(before > 0);
}
