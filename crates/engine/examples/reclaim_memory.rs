//! The monitor's memory while the app previews and executes a reclaim, printed, not
//! asserted. Drives the engine API as the app does: spawn the monitor on a `cache` root, wait for
//! the first scan, then `plan_reclaim` (every producer at the given threshold) and
//! `execute_reclaim` of that plan. The peak (VmHWM) is reset before each step (`5` into
//! `/proc/self/clear_refs`), so each figure is that step's own peak.
//!
//! ```text
//! python3 benches/gen_tree.py seed /work/bench/plan/t100k 100000 800
//! cargo run --release -p cachewatch --example reclaim_memory -- /work/bench/plan/t100k [THRESHOLD_SECS] [--execute]
//! ```
//!
//! `--execute` deletes the planned dirs (a copy of the tree, never a shared one).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cachewatch::dto::MonitorState;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::{Catalogue, Root, RootKind};

/// A `VmRSS`/`VmHWM` figure of /proc/self/status, MiB.
fn status_mib(key: &str) -> f64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// Resets the peak resident size to the current one.
fn reset_peak() {
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        eprintln!("cannot reset the peak: {e}");
    }
}

fn figures(step: &str, t: Instant, before: f64) {
    println!(
        "  {step}: {:.1?}, {before:.0} MiB resident before, {:.0} MiB resident after, {:.0} MiB peak during",
        t.elapsed(),
        status_mib("VmRSS:"),
        status_mib("VmHWM:")
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tree = args
        .first()
        .expect("usage: reclaim_memory TREE [THRESHOLD_SECS] [--execute]");
    let threshold = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(3600), Duration::from_secs);
    let execute = args.iter().any(|a| a == "--execute");
    let data = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, std::path::Path::new(tree)).unwrap();
    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.db_path = Some(data.path().join("cachewatch.db"));
    opts.threshold = threshold;
    let t = Instant::now();
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();
    let items: u64 = m.snapshot().producers.iter().map(|p| p.items).sum();
    figures(&format!("first scan ({items} items)"), t, 0.0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = status_mib("VmRSS:");
    reset_peak();
    let t = Instant::now();
    let plan = m.plan_reclaim(Vec::new(), threshold).await.unwrap();
    let json = serde_json::to_vec(&plan).unwrap().len();
    figures(
        &format!(
            "preview ({} planned bytes, {:.1} KiB of JSON to the window)",
            plan.planned_bytes,
            json as f64 / 1024.0
        ),
        t,
        before,
    );
    if execute {
        let before = status_mib("VmRSS:");
        reset_peak();
        let t = Instant::now();
        let report = m.execute_reclaim(plan.id.clone()).await.unwrap();
        let json = serde_json::to_vec(&report).unwrap().len();
        figures(
            &format!(
                "execute ({} bytes freed, {:.1} KiB of JSON to the window)",
                report.freed_bytes,
                json as f64 / 1024.0
            ),
            t,
            before,
        );
    }
    m.shutdown().await;
}
