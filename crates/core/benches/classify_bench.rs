//! Classification benchmark (prints figures; not a test). Run with
//! `cargo bench -p cachewatch-core --bench classify_bench` (env `CLASSIFY_BENCH_N=700000`).
//!
//! Classifies N `gpuarchiver-*` paths of the seed tree's two shapes (`com.apple.gpuarchiver/..`
//! and `<bundle>/com.apple.gpuarchiver/..`) with the builtin catalogue, as the scan does for
//! every entry at most `max_depth` deep, and prints the cost per path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use cachewatch_core::scan::Classify;
use cachewatch_core::{Catalogue, RootKind};

fn main() {
    let n: usize = std::env::var("CLASSIFY_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(700_000);
    let cat = Catalogue::builtin();
    let paths: Vec<PathBuf> = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                PathBuf::from(format!("com.apple.gpuarchiver/gpuarchiver-{i:06x}"))
            } else {
                PathBuf::from(format!(
                    "com.example.runner/com.apple.gpuarchiver/gpuarchiver-{i:06x}"
                ))
            }
        })
        .collect();
    for round in 0..3 {
        let t = Instant::now();
        let mut claimed = 0usize;
        for p in &paths {
            if let Some(c) = Classify::classify(&cat, RootKind::Cache, p) {
                claimed += usize::from(c.captures.bundle.is_some()) + 1;
            }
        }
        let el = t.elapsed();
        println!(
            "round {round}: {n} paths in {el:?} ({:.0} ns/path), claimed+bundles {claimed}",
            el.as_nanos() as f64 / n as f64
        );
    }
}
