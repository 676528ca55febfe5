//! The monitor's CPU at rest with groups of unattributed entries to name writers for (prints
//! figures; not a test). Run with `cargo bench -p cachewatch --bench provenance_rest` (env
//! `PROVENANCE_REST_SECS=60`, `PROVENANCE_REST_GROUPS=10`, `PROVENANCE_REST_MEMBERS=200`).
//!
//! Builds a temp root of GROUPS groups of MEMBERS unattributed dirs each (a file inside each),
//! starts a monitor over it, waits until it settled (first scan, figures, and the samples of the
//! process table the scan's own changes asked for), then measures over SECS of rest: the
//! process's CPU time (user + system, `getrusage`), printed as ms per minute, and the samples of
//! the process table the monitor took for the writers (none: it samples only when unattributed
//! entries change, never on a timer).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cachewatch::dto::MonitorState;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::{Catalogue, Root, RootKind};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

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

fn main() {
    let secs = env("PROVENANCE_REST_SECS", 60);
    let groups = env("PROVENANCE_REST_GROUPS", 10);
    let members = env("PROVENANCE_REST_MEMBERS", 200);
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    const WORDS: &[&str] = &[
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima",
    ];
    for g in 0..groups {
        let word = WORDS[g as usize % WORDS.len()];
        for n in 0..members {
            // Numbers no process has (above Linux's default pid_max).
            let d = root.join(format!(
                "{word}{}_{}_{}",
                g / 12,
                4_200_000 + n * 7,
                1_765_000_000 + n
            ));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("f"), "leak").unwrap();
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let opts = MonitorOptions::new(
            vec![Root::new(RootKind::Temp, &root).unwrap()],
            Arc::new(Catalogue::builtin()),
        );
        let samples = opts.process_samples.clone();
        let m = monitor::spawn(opts).unwrap();
        let started = Instant::now();
        m.subscribe()
            .wait_for(|s| s.state != MonitorState::Scanning)
            .await
            .unwrap();
        m.flush().await.unwrap();
        let shown = m.snapshot().unattributed_groups.len();
        println!(
            "tree: {} groups x {members} members ({} entries), first scan and figures in {:?}, {shown} groups shown",
            groups,
            groups * members * 2,
            started.elapsed()
        );
        // Settled: past the second look of any burst and a figures refresh or two.
        tokio::time::sleep(Duration::from_secs(15)).await;
        let (cpu0, samples0, t0) = (cpu_time(), samples.load(Ordering::Relaxed), Instant::now());
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let (cpu, taken, wall) = (
            cpu_time() - cpu0,
            samples.load(Ordering::Relaxed) - samples0,
            t0.elapsed(),
        );
        let per_min = cpu.as_secs_f64() * 1000.0 * 60.0 / wall.as_secs_f64();
        println!(
            "at rest over {:.1} s: {:.1} ms CPU ({per_min:.1} ms a minute, {:.3}% of a core); \
             process-table samples for writers: {taken} (before the rest: {samples0})",
            wall.as_secs_f64(),
            cpu.as_secs_f64() * 1000.0,
            cpu.as_secs_f64() * 100.0 / wall.as_secs_f64(),
        );
        m.shutdown().await;
    });
}
