//! Reclaim benchmark (prints figures; not a test). Run with
//! `cargo bench --bench reclaim_bench` (env `RECLAIM_BENCH_DIRS=100000`, `RECLAIM_BENCH_FILES=2`).
//!
//! Builds the same tree twice: `RECLAIM_BENCH_DIRS` leaked `gpuarchiver-*` dirs (each with
//! `RECLAIM_BENCH_FILES` small files, mtimes an hour old) under `com.apple.gpuarchiver/` of a cache
//! root. Times `rm -rf` of the dirs (one `rm` process, every dir as an argument via `xargs`) on one
//! copy, and on the other the scan, the plan (one process snapshot) and the execute (re-check +
//! delete), and prints them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, plan, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn build(base: &Path, dirs: usize, files: usize, mtime: SystemTime) {
    let arch = base.join("com.apple.gpuarchiver");
    fs::create_dir_all(&arch).unwrap();
    for i in 0..dirs {
        let d = arch.join(format!("gpuarchiver-{i:07}"));
        fs::create_dir(&d).unwrap();
        for f in 0..files {
            let p = d.join(format!("part{f}"));
            fs::write(&p, b"0123456789abcdef").unwrap();
            fs::File::open(&p).unwrap().set_modified(mtime).unwrap();
        }
        fs::File::open(&d).unwrap().set_modified(mtime).unwrap();
    }
}

fn rm_rf(base: &Path) -> Duration {
    let arch = base.join("com.apple.gpuarchiver");
    let t = Instant::now();
    // `find -mindepth 1 -maxdepth 1 -print0 | xargs -0 rm -rf`: the same dirs, the same way a shell
    // user would remove them.
    let status = Command::new("sh")
        .arg("-c")
        .arg("find . -mindepth 1 -maxdepth 1 -print0 | xargs -0 rm -rf")
        .current_dir(&arch)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    t.elapsed()
}

fn main() {
    let dirs = env_usize("RECLAIM_BENCH_DIRS", 100_000);
    let files = env_usize("RECLAIM_BENCH_FILES", 2);
    let old = SystemTime::now() - Duration::from_secs(3600);
    println!("reclaim bench: {dirs} dirs x {files} files");

    // Both copies are built and synced before either is removed, so neither pays for the other's
    // writeback.
    let a = tempfile::tempdir().unwrap();
    build(a.path(), dirs, files, old);
    let b = tempfile::tempdir().unwrap();
    build(b.path(), dirs, files, old);
    Command::new("sync").status().unwrap();
    let rm = rm_rf(a.path());
    println!("rm -rf:            {:>8.3} s", rm.as_secs_f64());
    Command::new("sync").status().unwrap();

    let root = Root::new(RootKind::Cache, b.path()).unwrap();
    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let t = Instant::now();
    let inv = scan(std::slice::from_ref(&root), &cat, now);
    let scan_t = t.elapsed();
    let policy = Policy {
        older_than: Duration::ZERO,
        producers: vec![],
        protected: vec![],
    };
    let t = Instant::now();
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    let plan_t = t.elapsed();
    assert_eq!(p.items.len(), dirs);
    let mut audits = 0usize;
    let t = Instant::now();
    let r = execute(&p, &cat, &SystemProbe::new(), now, &mut |_| audits += 1);
    let exec_t = t.elapsed();
    assert_eq!(r.deleted.len(), dirs, "{:?}", r.errors.first());
    assert_eq!(audits, dirs);
    println!("scan:              {:>8.3} s", scan_t.as_secs_f64());
    println!("plan:              {:>8.3} s", plan_t.as_secs_f64());
    println!(
        "execute:           {:>8.3} s  ({} freed bytes, {:.2}x rm -rf)",
        exec_t.as_secs_f64(),
        r.freed_bytes,
        exec_t.as_secs_f64() / rm.as_secs_f64()
    );
}
