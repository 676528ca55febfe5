//! Watch benchmark (prints figures; not a test). Run with
//! `cargo bench --bench watch_bench` (env `WATCH_BENCH_SIZES=10000,1000000`, `WATCH_BENCH_IDLE_SECS=60`;
//! `WATCH_BENCH_NOTIFY=1` measures only the notify watcher; `WATCH_BENCH_DIR=/path` keeps the generated trees there and reuses them on the next run).
//!
//! For each tree size (entries = dirs × 9 files, as `gpuarchiver-*` dirs under
//! `com.apple.gpuarchiver/`): the first scan's wall time, then five times the latency from creating
//! one new item to its appearance in a published snapshot (default 500 ms debounce included) and
//! the process CPU time (user + system, `getrusage`) spent meanwhile; and, once, the CPU time of the
//! idle monitor over `WATCH_BENCH_IDLE_SECS`. Memory: the process's resident set after the first
//! scan and after the updates (`/proc/self/statm`), and its peak (`getrusage` `ru_maxrss`; the peak
//! of the whole process, so a smaller tree run first does not hide it, a larger one does).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cachewatch::dto::MonitorState;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Catalogue, Root, RootKind};

const FILES_PER_DIR: usize = 8; // + the dir itself = 9 entries per item

fn cpu_time() -> Duration {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    assert_eq!(rc, 0);
    // SAFETY: rc == 0, so it is filled.
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Peak resident set of this process so far, MiB (`ru_maxrss` is KiB on Linux).
fn peak_rss_mib() -> f64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    assert_eq!(rc, 0);
    // SAFETY: rc == 0, so it is filled.
    let ru = unsafe { ru.assume_init() };
    ru.ru_maxrss as f64 / 1024.0
}

/// Current resident set of this process, MiB (`/proc/self/statm`; 0 where there is none).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as f64;
    pages * page / (1024.0 * 1024.0)
}

/// Resident set after glibc returned its free heap pages to the OS (`malloc_trim`): what is live.
fn trimmed_rss_mib() -> f64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory.
    unsafe {
        libc::malloc_trim(0);
    }
    rss_mib()
}

fn items(s: &Snapshot) -> u64 {
    s.producers
        .iter()
        .find(|p| p.id == "metal-gpuarchiver")
        .map_or(0, |p| p.items)
}

fn make_item(parent: &Path, name: &str) {
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    for f in 0..FILES_PER_DIR {
        std::fs::write(d.join(format!("f{f}")), b"metal archive bytes").unwrap();
    }
}

fn generate(root: &Path, entries: usize) -> usize {
    let dirs = entries / (FILES_PER_DIR + 1);
    let parent = root.join("com.apple.gpuarchiver");
    std::fs::create_dir_all(&parent).unwrap();
    let started = Instant::now();
    for i in 0..dirs {
        make_item(&parent, &format!("gpuarchiver-{i:07}"));
        if i % 10_000 == 0 && i > 0 {
            eprint!("\r  generated {i}/{dirs} dirs ({:.0?})", started.elapsed());
            std::io::stderr().flush().ok();
        }
    }
    eprintln!(
        "\r  generated {dirs} dirs, {} entries in {:.1?}",
        dirs * (FILES_PER_DIR + 1),
        started.elapsed()
    );
    dirs
}

async fn run_size(entries: usize, idle: Option<Duration>) {
    println!("== tree of {entries} entries");
    let tmp = tempfile::tempdir().unwrap();
    let kept = std::env::var_os("WATCH_BENCH_DIR").map(|d| Path::new(&d).join(entries.to_string()));
    let base = kept.unwrap_or_else(|| tmp.path().to_path_buf());
    let parent = base.join("com.apple.gpuarchiver");
    let dirs = if parent.is_dir() {
        // A kept tree: drop the items of the last run's updates, count the rest.
        for e in std::fs::read_dir(&parent).unwrap().flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with("gpuarchiver-new")
            {
                std::fs::remove_dir_all(e.path()).unwrap();
            }
        }
        let n = std::fs::read_dir(&parent).unwrap().count();
        eprintln!("  reusing {n} dirs in {}", base.display());
        n
    } else {
        std::fs::create_dir_all(&base).unwrap();
        generate(&base, entries)
    };
    let root = Root::new(RootKind::Cache, &base).unwrap();
    if std::env::var_os("WATCH_BENCH_NOTIFY").is_some() {
        // The watcher alone (notify's own tables per watched dir), in a process that then exits.
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let (r0, t) = (rss_mib(), Instant::now());
        let (w, _) = cachewatch::watch::RootWatcher::start(0, &root, tx).unwrap();
        println!(
            "  notify watcher alone: {:.1?} to start, +{:.0} MiB resident ({:.0} MiB peak)",
            t.elapsed(),
            rss_mib() - r0,
            peak_rss_mib()
        );
        drop(w);
        return;
    }
    let opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    let t = Instant::now();
    let c = cpu_time();
    let m = monitor::spawn(opts).unwrap();
    let mut rx = m.subscribe();
    rx.wait_for(|s| s.state != MonitorState::Scanning && items(s) == dirs as u64)
        .await
        .unwrap();
    println!(
        "  start (watch setup + first scan): {:.0?} wall, {:.0?} CPU",
        t.elapsed(),
        cpu_time() - c
    );
    println!(
        "  memory after the first scan: {:.0} MiB resident, {:.0} MiB peak, {:.0} MiB resident once malloc returned its free memory",
        rss_mib(),
        peak_rss_mib(),
        trimmed_rss_mib()
    );
    m.flush().await.unwrap();
    let mut lat = Vec::new();
    let mut cpu = Vec::new();
    for k in 0..5 {
        let want = (dirs + k + 1) as u64;
        let c = cpu_time();
        let t = Instant::now();
        make_item(&parent, &format!("gpuarchiver-new{k}"));
        rx.wait_for(|s| items(s) == want).await.unwrap();
        lat.push(t.elapsed());
        cpu.push(cpu_time() - c);
        // Let the tick and any analysis settle between samples.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    println!("  one new item -> snapshot latency: {lat:.0?} (debounce 500 ms included)");
    println!("  CPU time of each update: {cpu:.1?}");
    let snap = m.snapshot();
    println!(
        "  memory after the updates: {:.0} MiB resident, {:.0} MiB peak, {:.0} MiB trimmed; rescans of the root: {}",
        rss_mib(),
        peak_rss_mib(),
        trimmed_rss_mib(),
        snap.roots.first().map_or(0, |r| r.rescans)
    );
    if let Some(idle) = idle {
        let c = cpu_time();
        tokio::time::sleep(idle).await;
        println!("  idle monitor CPU over {idle:?}: {:.1?}", cpu_time() - c);
    }
    m.shutdown().await;
}

fn main() {
    let sizes: Vec<usize> = std::env::var("WATCH_BENCH_SIZES")
        .unwrap_or_else(|_| "10000,1000000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("WATCH_BENCH_SIZES: comma-separated entry counts")
        })
        .collect();
    let idle = std::env::var("WATCH_BENCH_IDLE_SECS")
        .ok()
        .map_or(60, |s| s.parse().expect("WATCH_BENCH_IDLE_SECS: seconds"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for (i, n) in sizes.iter().enumerate() {
        let idle = (i == 0 && idle > 0).then(|| Duration::from_secs(idle));
        rt.block_on(run_size(*n, idle));
    }
}
