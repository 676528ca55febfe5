//! Regression: a name with a newline or terminal control codes (`ESC[2K`, `CR`) printed
//! a spoofed row in the human tables. Every human output escapes control characters; the JSON
//! output keeps the name as it is (serde escapes it).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");

/// A name that, printed raw, erases its own line and draws a fake row.
const EVIL: &str = "gpuarchiver-evil\n\u{1b}[2K\rgpuarchiver-fake  metal-gpuarchiver  99d  9.9 GiB";
/// The same name as the tables print it.
const ESCAPED: &str =
    "gpuarchiver-evil\\n\\e[2K\\rgpuarchiver-fake  metal-gpuarchiver  99d  9.9 GiB";

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(args)
        .arg("--root")
        .arg(format!("temp={}", dir.join("temp").display()))
        .arg("--root")
        .arg(format!("cache={}", dir.join("cache").display()))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A tree with one old gpuarchiver dir and one unattributed dir in temp, both named [`EVIL`].
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in ["temp", "cache", "data"] {
        std::fs::create_dir(dir.path().join(d)).unwrap();
    }
    let item = dir.path().join("cache/com.apple.gpuarchiver").join(EVIL);
    std::fs::create_dir_all(&item).unwrap();
    std::fs::write(item.join("archive.metallib"), vec![7u8; 5000]).unwrap();
    let other = dir.path().join("temp").join(EVIL);
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("f"), b"x").unwrap();
    let status = Command::new("find")
        .arg(dir.path())
        .args(["-exec", "touch", "-h", "-d", "10 days ago", "{}", "+"])
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

fn assert_no_raw_controls(text: &str) {
    for c in ['\u{1b}', '\r'] {
        assert!(!text.contains(c), "raw {c:?} in {text:?}");
    }
}

#[test]
fn control_characters_in_names_are_escaped_in_the_reclaim_plan_table() {
    let dir = tree();
    let out = run(dir.path(), &["reclaim", "--older-than", "1d", "--dry-run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_no_raw_controls(&text);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("gpuarchiver-"))
        .collect();
    assert_eq!(rows.len(), 1, "one item, one row: {text}");
    assert!(rows[0].contains(ESCAPED), "{text}");
    // The JSON keeps the real name.
    let out = run(
        dir.path(),
        &["reclaim", "--older-than", "1d", "--dry-run", "--json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let planned = v["planned"][0]["path"].as_str().unwrap();
    assert!(planned.ends_with(EVIL), "{planned:?}");
}

#[test]
fn control_characters_in_names_are_escaped_in_the_scan_tables() {
    let dir = tree();
    let out = run(dir.path(), &["scan"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_no_raw_controls(&text);
    // The unattributed dir in temp is listed on one line, escaped.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("gpuarchiver-"))
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    assert!(rows[0].contains(ESCAPED), "{text}");
}

/// A rule named with a newline printed raw in `reclaim --rules`: a spoofed second rule line.
/// Its name is escaped in the dry run's and the real run's lines; the JSON keeps it.
#[test]
fn control_characters_in_a_rule_name_are_escaped_in_reclaim_rules() {
    let dir = tree();
    let name = "ci\nrule spoofed: deleted 999 item(s)\u{1b}[2K";
    let config = format!(
        "[[auto_reclaim]]\nname = {}\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"1d\"\nevery = \"1h\"\n",
        serde_json::to_string(name).unwrap()
    );
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let escaped = "rule ci\\nrule spoofed: deleted 999 item(s)\\e[2K:";
    for args in [
        &["reclaim", "--rules", "--dry-run"][..],
        &["reclaim", "--rules", "--yes"][..],
    ] {
        let out = run(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_no_raw_controls(&text);
        let rules: Vec<&str> = text.lines().filter(|l| l.starts_with("rule ")).collect();
        assert_eq!(rules.len(), 1, "{args:?}: one rule, one line: {text}");
        assert!(rules[0].starts_with(escaped), "{args:?}: {text}");
    }
    let out = run(dir.path(), &["reclaim", "--rules", "--dry-run", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["rule"].as_str(), Some(name));
}
