//! Every scan ends, whatever the tree's shape: `cachewatch scan` of hostile trees (nested big dirs,
//! flat giants, chains deeper than the fd budget with big dirs at their bottom, hard links and
//! symlinks) under 1, 2, 3, 4 and 8 walk threads and open-file limits of 64, 256 and the
//! default, each run under a watchdog. Totals equal `du` every time.
//!
//! The hang these guard against: a big dir met while the fd budget was spent (by a chain of
//! nested dirs elsewhere) lost its listing and the walk spun forever; the first scan of a real
//! `/tmp` never ended.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cachewatch_testkit::hostile::{self, Hostile};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");

/// How long one scan may take before the watchdog stops it and fails the test (a debug build on a
/// busy 2-core machine scans these trees in seconds).
const WATCHDOG: Duration = Duration::from_secs(180);

const THREADS: [u16; 5] = [1, 2, 3, 4, 8];

/// Open-file limits: launchd's default for apps (256), a tight one (a budget of 16 fds), and the
/// process's own.
const LIMITS: [Option<u32>; 3] = [Some(64), Some(256), None];

/// The root totals of `cachewatch scan --root other=ROOT --json --threads T` run with at most
/// `limit` open files, or a panic naming the tree's seed when it fails or outlives the watchdog.
fn scan(root: &Path, seed: u64, threads: u16, limit: Option<u32>) -> (u64, u64) {
    let what = format!("seed {seed}, {threads} threads, open files {limit:?}");
    let mut cmd = Command::new("sh");
    let ulimit = limit.map_or(String::new(), |n| format!("ulimit -n {n} && "));
    cmd.arg("-c")
        .arg(format!("{ulimit}exec \"$0\" \"$@\""))
        .arg(BIN)
        .args([
            "--config",
            "/nonexistent/cachewatch-test.toml",
            "scan",
            "--json",
        ])
        .arg("--threads")
        .arg(threads.to_string())
        .arg("--root")
        .arg(format!("other={}", root.display()))
        .env_remove("CACHEWATCH_CONFIG")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // Read stdout on a thread so a large report cannot block the child while it is waited for.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > WATCHDOG {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the scan ({what}) did not end within {WATCHDOG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = reader.join().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        status.success(),
        "the scan ({what}) failed: {status}\n{err}"
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{what}: {e}\n{out}"));
    let r = &v["roots"][0];
    assert_eq!(v["errors"], Value::Array(Vec::new()), "{what}");
    (
        r["allocated_bytes"].as_u64().unwrap(),
        r["apparent_bytes"].as_u64().unwrap(),
    )
}

/// Builds the tree of `seed` and scans it under every thread count and open-file limit: 15 walks,
/// each equal to `du`.
fn walks_equal_du(seed: u64, shape: Hostile) -> usize {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    std::fs::create_dir(&root).unwrap();
    hostile::build(&root, seed, shape);
    let du = (
        cachewatch_testkit::du::allocated(&[&root]),
        cachewatch_testkit::du::apparent(&[&root]),
    );
    let mut walks = 0;
    for threads in THREADS {
        for limit in LIMITS {
            let got = scan(&root, seed, threads, limit);
            assert_eq!(
                got, du,
                "seed {seed}, {threads} threads, open files {limit:?}: (allocated, apparent) vs du"
            );
            walks += 1;
        }
    }
    walks
}

/// 13 random trees of nested big dirs, each with a chain of 1,100 dirs (deeper than the largest fd
/// budget) ending in a big dir, and a shorter chain inside a big dir: 195 walks.
#[test]
fn hostile_trees_scan_like_du_under_every_thread_count_and_fd_limit() {
    let mut walks = 0;
    for seed in 1..=13u64 {
        let shape = Hostile {
            tops: 1,
            depth: 2 + (seed % 2) as usize,
            ..Hostile::default()
        };
        walks += walks_equal_du(seed, shape);
    }
    assert_eq!(walks, 13 * 15);
}

/// A flat giant of 200,000 entries beside nested big dirs and the deep chain: 15 walks.
#[test]
fn a_flat_giant_beside_nested_big_dirs_scans_like_du() {
    let shape = Hostile {
        giant: 200_000,
        tops: 1,
        depth: 2,
        ..Hostile::default()
    };
    assert_eq!(walks_equal_du(1000, shape), 15);
}

/// The shape of a developer's `/tmp` (two cargo target dirs, a test workspace of nested big dirs,
/// a chain deeper than the fd budget) at the open-file limit launchd gives an app: the scan ends
/// and equals `du`.
#[test]
fn a_developers_tmp_scans_like_du() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tmp");
    std::fs::create_dir(&root).unwrap();
    hostile::developer_tmp(&root, 42);
    let du = (
        cachewatch_testkit::du::allocated(&[&root]),
        cachewatch_testkit::du::apparent(&[&root]),
    );
    for (threads, limit) in [(6, Some(256)), (2, None)] {
        assert_eq!(scan(&root, 42, threads, limit), du, "{threads} threads");
    }
}

/// A Metal archive holding a chain of 1,100 nested dirs (deeper than an open-file limit of 64,
/// and than macOS's default of 256), a file every 100 levels, aged two days: `reclaim --yes` run
/// under `ulimit -n 64` deletes it whole. The report lists it deleted with the bytes `du` counted
/// before, no error, and nothing of it is left. (The recursive removal held one fd per level and
/// failed at level ~60, leaving the item half deleted.)
#[test]
fn reclaim_under_a_low_fd_limit_removes_a_chain_deeper_than_the_limit() {
    use cachewatch_testkit::tree::{days_ago, set_tree_mtime, write_file};
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let archive = cache.join("com.apple.gpuarchiver/gpuarchiver-deep");
    let mut at = archive.clone();
    for level in 0..1100 {
        at.push("d");
        if level % 100 == 0 {
            write_file(&at.join("PersistentState"), 5000);
        }
    }
    std::fs::create_dir_all(&at).unwrap();
    write_file(&at.join("bottom"), 100);
    set_tree_mtime(&archive, days_ago(2));
    let freed = cachewatch_testkit::du::allocated(&[&archive]);
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .arg("--config")
        .arg(t.path().join("none.toml"))
        .arg("--data-dir")
        .arg(t.path().join("data"))
        .args([
            "reclaim",
            "--older-than",
            "1d",
            "--producer",
            "metal-gpuarchiver",
        ])
        .args(["--yes", "--json", "--root"])
        .arg(format!("cache={}", cache.display()))
        .env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let deleted: Vec<&str> = v["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(deleted, [archive.to_str().unwrap()], "{v}");
    assert_eq!(v["freed_bytes"], freed, "{v}");
    assert_eq!(v["errors"].as_array().unwrap().len(), 0, "{v}");
    assert!(!archive.exists());
}
