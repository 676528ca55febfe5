//! Name-shape grouping benchmark (prints figures; not a test). Run with
//! `cargo bench -p cachewatch-core --bench shapes_bench` (env `SHAPES_BENCH_N=100000`,
//! `SHAPES_BENCH_DIR` to keep the tree somewhere else than the system temp dir).
//!
//! Builds a root of N unattributed entries (empty files) in 10 leak templates (mkdtemp runs,
//! UUIDs, hex and digits, epoch ms, pids of 2-6 digits with thread indexes and counters, ISO
//! times) plus 2% ordinary-looking noise, then scans it with `scan_root_each` three times each way: a visitor that only counts
//! (the scan's own cost), and one that feeds a `Tally` (producers, shape groups, lone entries), as
//! `cachewatch scan` does. Prints the wall time of both and the heap the tally holds at its peak,
//! measured by a counting allocator.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use cachewatch_core::scan::{scan_root_each, ScanProgress, Tally};
use cachewatch_core::{Catalogue, Root, RootKind};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size() as isize, Ordering::Relaxed) + l.size() as isize;
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: forwarded as is to the system allocator.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is to the system allocator.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn name(i: usize, x: &mut u64) -> String {
    let mut rnd = |n: usize, alpha: &[u8]| -> String {
        (0..n)
            .map(|_| {
                *x ^= *x << 13;
                *x ^= *x >> 7;
                *x ^= *x << 17;
                alpha[(*x % alpha.len() as u64) as usize] as char
            })
            .collect()
    };
    const AN: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const HEX: &[u8] = b"0123456789abcdef";
    let pid = |x: &mut u64| {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        let digits = 2 + (*x % 5) as u32;
        10u64.pow(digits - 1) + *x % (9 * 10u64.pow(digits - 1))
    };
    match i % 50 {
        0 => format!("notes-{}-{i}.txt", rnd(3, b"ghijklmn")),
        k if k < 6 => format!("pbx{}", rnd(8, AN)),
        k if k < 11 => format!(
            "swc-{}-{}-{}-{}-{}",
            rnd(8, HEX),
            rnd(4, HEX),
            rnd(4, HEX),
            rnd(4, HEX),
            rnd(12, HEX)
        ),
        k if k < 16 => format!(".{}-{}.bin", rnd(16, HEX), rnd(8, b"0123456789")),
        k if k < 21 => format!("esb-{}.trace", 1_700_000_000_000u64 + (i as u64) * 7919),
        k if k < 26 => format!("ocl.{}", rnd(6, AN)),
        k if k < 31 => format!("kestrel_{}_{}_{}", pid(x), i % 2, 1_700_000_000 + i),
        k if k < 36 => format!("lspd{}-{}", rnd(6, HEX), i % 100),
        k if k < 41 => format!("worker-{}-{}.sock", pid(x), i % 97),
        k if k < 46 => format!(
            "run-2026-01-{:02}T{:02}-{:02}-{:02}",
            1 + i % 28,
            i % 24,
            i % 60,
            (i / 60) % 60
        ),
        _ => format!("core.{}.{i}", pid(x)),
    }
}

fn main() {
    let n: usize = std::env::var("SHAPES_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let base = std::env::var_os("SHAPES_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(base).unwrap();
    let t = Instant::now();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..n {
        std::fs::File::create(dir.path().join(name(i, &mut x))).unwrap();
    }
    println!("built {n} entries in {:?}", t.elapsed());
    let root = Root::new(RootKind::Temp, dir.path()).unwrap();
    let cat = Catalogue::builtin();
    let mut plain = Vec::new();
    let mut grouped = Vec::new();
    let (mut plain_peak, mut tally_peak) = (0isize, 0isize);
    for round in 0..3 {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let mut count = 0u64;
        scan_root_each(&root, &cat, &ScanProgress::new(), |_| count += 1);
        plain.push(t.elapsed());
        plain_peak = plain_peak.max(PEAK.load(Ordering::Relaxed) - base);
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let mut tally = Tally::new(10);
        scan_root_each(&root, &cat, &ScanProgress::new(), |item| {
            tally.add(&root, &item)
        });
        let groups = tally.unattributed_groups();
        let lone = tally.unattributed();
        grouped.push(t.elapsed());
        tally_peak = tally_peak.max(PEAK.load(Ordering::Relaxed) - base);
        if round == 0 {
            println!("{count} items; groups:");
            for g in &groups {
                println!(
                    "  {:<28} {:>7} items",
                    g.group.shape.to_string(),
                    g.group.items
                );
            }
            println!("  lone entries kept for the report: {}", lone.len());
        }
    }
    let best = |v: &[Duration]| v.iter().min().copied().unwrap_or_default();
    let (p, g) = (best(&plain), best(&grouped));
    println!(
        "scan only: {p:?}; scan + tally with shapes: {g:?} (+{:.1}%); best of 3",
        (g.as_secs_f64() / p.as_secs_f64() - 1.0) * 100.0
    );
    let mib = |b: isize| b as f64 / (1024.0 * 1024.0);
    println!(
        "heap peak: scan only {:.2} MiB, scan + tally {:.2} MiB: +{:.2} MiB",
        mib(plain_peak),
        mib(tally_peak),
        mib(tally_peak - plain_peak)
    );
}
