//! A real FSEvents stream under a live monitor (macOS only): a new item and a removal reach the
//! snapshot through the stream (the flush waits for its own marker's event, so no sleeps), and a
//! rescan record is answered with a rescan. Figures against BSD `du -s -k`.

#![cfg(target_os = "macos")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cachewatch::dto::WatchMode;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Catalogue, Root, RootKind};

const GPU: &str = "metal-gpuarchiver";

/// `/usr/bin/du -s -k -x` of `paths` together (KiB, hard links once).
fn du_kib(paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::kib(paths)
}

fn gpu(s: &Snapshot) -> (u64, u64) {
    s.producers
        .iter()
        .find(|p| p.id == GPU)
        .map_or((0, 0), |p| (p.items, p.allocated_bytes.div_ceil(1024)))
}

fn archives(parent: &Path, n: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(parent).unwrap();
    (0..n)
        .map(|i| {
            let d = parent.join(format!("gpuarchiver-{i:04}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("PersistentState"), vec![7u8; 5000 + i * 4096]).unwrap();
            d
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_stream_sees_a_new_item_a_removal_and_asks_for_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    // The temp dir is under /var/folders: FSEvents reports it as /private/var/folders.
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.debounce = Duration::from_millis(50);
    let m = monitor::spawn(opts).unwrap();
    m.flush().await.unwrap();
    assert_eq!(m.snapshot().roots[0].watch_mode, WatchMode::Events);

    let dirs = archives(
        &canonical.join("org.julialang.julia/com.apple.gpuarchiver"),
        20,
    );
    m.flush().await.unwrap();
    assert_eq!(gpu(&m.snapshot()), (20, du_kib(&dirs)));

    for d in &dirs[..5] {
        std::fs::remove_dir_all(d).unwrap();
    }
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(gpu(&s), (15, du_kib(&dirs[5..])));
    assert_eq!(
        s.roots[0].allocated_bytes.div_ceil(1024),
        du_kib(std::slice::from_ref(&canonical))
    );

    // A MustScanSubDirs record, as notify translates it: the root is rescanned.
    let rescans = s.roots[0].rescans;
    let more = archives(&canonical.join("com.other/com.apple.gpuarchiver"), 3);
    let flagged = notify::Event::new(notify::EventKind::Other)
        .set_flag(notify::event::Flag::Rescan)
        .set_info("rescan: kernel dropped")
        .add_path(canonical.clone());
    m.inject_watch_event(0, Ok(flagged)).unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].rescans, rescans + 1);
    let all: Vec<PathBuf> = dirs[5..].iter().chain(&more).cloned().collect();
    assert_eq!(gpu(&s), (18, du_kib(&all)));
    m.shutdown().await;
}
