//! Memory and time of the process history the monitor keeps to name the writers of unknown
//! leaks (prints figures; not a test). Run with
//! `cargo bench -p cachewatch-core --bench provenance_memory` (env `PROVENANCE_PROCESSES=10000`,
//! `PROVENANCE_ALIVE=600`).
//!
//! Feeds a [`ProcessHistory`] of the monitor's bound ([`HISTORY_CAP`]) one sample a second of a
//! table of ALIVE processes where, each second, a few long-lived ones stay and short-lived ones
//! (compilers, test runners, one-off builds with unique executable paths) come and go, until
//! PROCESSES distinct processes have been seen; then twice as many again, so eviction runs. Prints
//! the heap the history holds (a counting allocator) beside its own estimate, its peak, and the
//! time of one sample's `observe`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cachewatch_core::provenance::{ProcessHistory, SeenProcess, HISTORY_CAP};
use cachewatch_testkit::heap;

#[global_allocator]
static A: heap::Counting = heap::Counting;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const TOOLS: &[&str] = &[
    "clang",
    "swift-frontend",
    "rustc",
    "cargo",
    "python3",
    "node",
    "xcodebuild",
    "ld",
    "git",
    "katago",
    "mdworker_shared",
    "com.apple.WebKit.WebContent",
    "zsh",
    "make",
];

/// Process `n` of the run: a known tool, or (one in five) a one-off build whose executable path
/// is unique, as test binaries and extracted bundles are.
fn process(n: u64, start: SystemTime) -> SeenProcess {
    let tool = TOOLS[(n % TOOLS.len() as u64) as usize];
    let (exe, app) = if n % 5 == 0 {
        (
            PathBuf::from(format!(
                "/Users/runner/work/project/target/debug/deps/it-{n:016x}"
            )),
            None,
        )
    } else if n % 7 == 0 {
        (
            PathBuf::from(format!("/Applications/{tool}.app/Contents/MacOS/{tool}")),
            Some(format!("com.example.{tool}")),
        )
    } else {
        (PathBuf::from(format!("/usr/bin/{tool}")), None)
    };
    SeenProcess {
        pid: 100 + (n % 99_000) as u32,
        ppid: Some(1),
        name: tool.to_owned(),
        exe: Some(exe),
        app,
        start,
    }
}

fn main() {
    let processes = env("PROVENANCE_PROCESSES", 10_000) as u64;
    let alive = env("PROVENANCE_ALIVE", 600) as u64;
    let t0 = UNIX_EPOCH + Duration::from_secs(1_790_000_000);
    // Each second a tenth of the table is replaced by new processes.
    let churn = (alive / 10).max(1);
    let mut table: Vec<SeenProcess> = (0..alive).map(|n| process(n, t0)).collect();
    // The table itself (about the same size throughout) is not the history's.
    let base = heap::mark();
    let mut h = ProcessHistory::new(HISTORY_CAP);
    let mut next = alive;
    let mut second = 0u64;
    let mut observe_time = Duration::ZERO;
    let mut observes = 0u32;
    let mut at_bound = 0isize;
    while next < 3 * processes {
        second += 1;
        let now = t0 + Duration::from_secs(second);
        for k in 0..churn {
            let slot = ((second * churn + k) % alive) as usize;
            table[slot] = process(next, now);
            next += 1;
        }
        let sample = table.clone();
        let started = Instant::now();
        h.observe(now, sample);
        observe_time += started.elapsed();
        observes += 1;
        if next >= processes && at_bound == 0 {
            at_bound = heap::live() - base;
        }
    }
    let held = heap::live() - base;
    let peak = heap::peak() - base;
    let mib = heap::mib;
    println!(
        "{next} processes seen over {second} samples of {alive} (cap {HISTORY_CAP}), {} held",
        h.len()
    );
    println!(
        "heap after {processes} processes {:.2} MiB; at the end {:.2} MiB (its own estimate {:.2} MiB); peak {:.2} MiB",
        mib(at_bound),
        mib(held),
        mib(h.heap_bytes() as isize),
        mib(peak)
    );
    println!(
        "one sample's observe: {:?} on average",
        observe_time / observes.max(1)
    );
}
