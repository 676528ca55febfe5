//! The Metal cache dirs (`com.apple.metal`, `com.apple.metalfe`, `com.apple.gpuarchiver`) through
//! the `cachewatch` binary: their contents go, the dirs stay (a sandboxed app that cannot recreate
//! them crashes at start: anthropics/claude-code#80472), and the dirs are not unattributed.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");

/// A cache root, a config path and a data dir under one temp dir.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        for d in ["cache", "data"] {
            fs::create_dir(dir.path().join(d)).unwrap();
        }
        Sandbox { dir }
    }
    fn cache(&self) -> PathBuf {
        fs::canonicalize(self.dir.path().join("cache")).unwrap()
    }
    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .env_remove("CACHEWATCH_CONFIG")
            .env_remove("CACHEWATCH_DATA_DIR")
            .env_remove("RUST_LOG")
            .arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .arg("--data-dir")
            .arg(self.dir.path().join("data"))
            .args(args)
            .arg("--root")
            .arg(format!("cache={}", self.cache().display()))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

fn json(out: &Output) -> Value {
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "status {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn write_file(path: &Path, len: usize) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        path,
        (0..len).map(|i| (i * 31 % 251) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
}

/// Sets the mtime and atime of every entry under `path` (and `path`) to `t`: Metal's caches age by
/// last use, so an untouched cache is one neither written nor read since.
fn set_tree_mtime(path: &Path, t: SystemTime) {
    cachewatch_testkit::tree::set_tree_mtime(path, t);
}

/// `du -B1 -s -x -c` of the paths together.
fn du(paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

/// The Metal dirs of one app and a bare gpuarchiver dir, three days old; returns (the dirs that
/// must stay, the entries inside them that may go).
fn metal_tree(cache: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let app = cache.join("com.python.python");
    let dirs = vec![
        app.join("com.apple.metal"),
        app.join("com.apple.metalfe"),
        app.join("com.apple.gpuarchiver"),
        cache.join("com.apple.gpuarchiver"),
    ];
    let contents = vec![
        dirs[0].join("16777235_322"),
        dirs[0].join("archiveUsage.db"),
        dirs[1].join("functions.data"),
        dirs[2].join("gpuarchiver-A1"),
        dirs[3].join("gpuarchiver-B2"),
    ];
    write_file(&contents[0].join("functions.data"), 9000);
    write_file(&contents[1], 4000);
    write_file(&contents[2], 7000);
    write_file(&contents[3].join("PersistentState"), 5000);
    write_file(&contents[4].join("PersistentState"), 6000);
    set_tree_mtime(cache, SystemTime::now() - Duration::from_secs(3 * 86_400));
    (dirs, contents)
}

/// Regression: `reclaim --producer metal-shader-cache --older-than 1d` deleted `com.apple.metal`
/// and `com.apple.metalfe` themselves.
#[test]
fn metal_cache_dirs_survive_every_reclaim_and_their_contents_go() {
    let sb = Sandbox::new();
    let (dirs, contents) = metal_tree(&sb.cache());
    let expected = du(&contents);
    let v = json(&sb.run(&[
        "reclaim",
        "--producer",
        "metal-shader-cache",
        "--producer",
        "metal-gpuarchiver",
        "--older-than",
        "1d",
        "--yes",
        "--json",
    ]));
    assert_eq!(v["freed_bytes"], expected, "{v:#}");
    assert_eq!(v["deleted"].as_array().unwrap().len(), contents.len());
    assert!(contents.iter().all(|c| !c.exists()));
    assert!(dirs.iter().all(|d| d.is_dir()), "a Metal dir was deleted");
    let kept: Vec<(&str, &str)> = v["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["path"].as_str().unwrap(), k["reason"].as_str().unwrap()))
        .collect();
    // The dirs the items live in are never planned, so never kept either.
    assert!(kept.is_empty(), "{kept:?}");
    // A default reclaim (every auto producer) and one at threshold 0 leave the dirs too.
    json(&sb.run(&["reclaim", "--older-than", "0s", "--yes", "--json"]));
    assert!(dirs.iter().all(|d| d.is_dir()), "a Metal dir was deleted");
}

/// The bare `com.apple.gpuarchiver` dir (its children claimed) was listed as unattributed.
#[test]
fn a_bare_gpuarchiver_dir_is_attributed_not_unattributed() {
    let sb = Sandbox::new();
    let cache = sb.cache();
    let (dirs, contents) = metal_tree(&cache);
    let v = json(&sb.run(&["scan", "--json"]));
    let unattributed: Vec<&str> = v["unattributed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        unattributed,
        vec![cache.join("com.python.python").to_str().unwrap()]
    );
    let gpu = v["producers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "metal-gpuarchiver")
        .unwrap();
    // Its two archives; the bare dir is neither an item (it would inflate the count) nor
    // unattributed.
    assert_eq!(gpu["items"], 2, "{gpu:#}");
    assert_eq!(gpu["allocated_bytes"], du(&contents[3..]));
    let e = json(&sb.run(&["explain", "--json", dirs[3].to_str().unwrap()]));
    assert_eq!(e["verdict"]["status"], "structure");
    assert_eq!(e["verdict"]["producer"], "metal-gpuarchiver");
    assert_eq!(e["verdict"]["is_dir"], true);
    let e = json(&sb.run(&["explain", "--json", dirs[0].to_str().unwrap()]));
    assert_eq!(e["verdict"]["status"], "structure");
    assert_eq!(e["verdict"]["producer"], "metal-shader-cache");
    let text = sb.run(&["explain", dirs[1].to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("never reclaimed"), "{text}");
}
