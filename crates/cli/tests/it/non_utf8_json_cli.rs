//! Regression: a file or dir name that is not valid UTF-8 came out of `scan --json` and
//! `reclaim --json` lossy (U+FFFD), so a script could not act on the path. The text stays (for
//! people) and `path_bytes` carries the exact bytes in base64 (only for such a path): decoded, it
//! names the entry on disk (`lstat`), and after a reclaim it names the entry that is gone.

#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use cachewatch_testkit::tree::{days_ago, set_tree_mtime, write_file};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");

fn run(base: &Path, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(base.join("config.toml"))
        .arg("--data-dir")
        .arg(base.join("data"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The path `v[field_bytes]` encodes.
fn decoded(v: &Value, field: &str) -> PathBuf {
    let b64 = v[format!("{field}_bytes")]
        .as_str()
        .unwrap_or_else(|| panic!("no {field}_bytes in {v}"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    PathBuf::from(OsStr::from_bytes(&bytes))
}

#[test]
fn non_utf8_names_round_trip_through_path_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let temp = base.join("temp");
    // A gradio item and an unattributed top-level dir, both with names that are not UTF-8.
    let item = temp
        .join("gradio")
        .join(OsStr::from_bytes(b"item-\xff\xfe"));
    let junk = temp.join(OsStr::from_bytes(b"junk-\xc3\x28"));
    let plain = temp.join("gradio/item-plain");
    write_file(&item.join("data.bin"), 4000);
    write_file(&junk.join("x.bin"), 9000);
    write_file(&plain.join("data.bin"), 2000);
    std::fs::create_dir(base.join("data")).unwrap();
    set_tree_mtime(&temp, days_ago(3));
    let root_arg = format!("temp={}", temp.display());

    let scan = run(base, &["scan", "--json", "--root", &root_arg]);
    let unattributed = scan["unattributed"].as_array().unwrap();
    let j = unattributed
        .iter()
        .find(|u| u.get("path_bytes").is_some())
        .unwrap_or_else(|| panic!("{scan}"));
    assert_eq!(decoded(j, "path"), junk);
    assert!(std::fs::symlink_metadata(decoded(j, "path"))
        .unwrap()
        .is_dir());
    assert_eq!(j["path"], junk.to_string_lossy().as_ref());
    // UTF-8 paths carry no bytes field.
    assert!(scan["roots"][0].get("path_bytes").is_none());

    let args = ["reclaim", "--older-than", "1d", "--root", &root_arg];
    let plan = run(base, &[&args[..], &["--dry-run", "--json"]].concat());
    let planned = plan["planned"].as_array().unwrap();
    assert_eq!(planned.len(), 2, "{plan}");
    let odd: Vec<&Value> = planned
        .iter()
        .filter(|p| p.get("path_bytes").is_some())
        .collect();
    assert_eq!(odd.len(), 1, "{plan}");
    assert_eq!(decoded(odd[0], "path"), item);
    assert!(std::fs::symlink_metadata(decoded(odd[0], "path")).is_ok());
    assert!(odd[0].get("root_bytes").is_none());

    let done = run(base, &[&args[..], &["--yes", "--json"]].concat());
    let deleted = done["deleted"].as_array().unwrap();
    let gone: Vec<PathBuf> = deleted
        .iter()
        .filter(|d| d.get("path_bytes").is_some())
        .map(|d| decoded(d, "path"))
        .collect();
    assert_eq!(gone, std::slice::from_ref(&item), "{done}");
    assert!(std::fs::symlink_metadata(&item).is_err());
    assert!(!plain.exists() && junk.is_dir());
}
