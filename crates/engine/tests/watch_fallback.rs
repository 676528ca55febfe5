//! The watcher when the OS has no inotify instance left for the user (`inotify_init` fails with
//! `EMFILE`, `/proc/sys/fs/inotify/max_user_instances`): the root falls back to polling, and the
//! polling actually sees new items (issue 8). As root the limit is lowered to 0 just while the
//! monitor creates its watcher, and restored by a guard; otherwise the test is skipped, saying why.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cachewatch::monitor::{self, MonitorOptions};
use cachewatch::snapshot::{Snapshot, WatchMode};
use cachewatch::{Catalogue, Root, RootKind};

const LIMIT: &str = "/proc/sys/fs/inotify/max_user_instances";
const GPU: &str = "metal-gpuarchiver";

/// Restores `max_user_instances` when dropped.
struct InstanceLimit(String);

impl Drop for InstanceLimit {
    fn drop(&mut self) {
        std::fs::write(LIMIT, &self.0).unwrap();
    }
}

fn du(path: &std::path::Path) -> u64 {
    let out = std::process::Command::new("du")
        .args(["-B1", "-s", "-x"])
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

fn producer(s: &Snapshot, id: &str) -> (u64, u64) {
    s.producers
        .iter()
        .find(|p| p.id == id)
        .map_or((0, 0), |p| (p.items, p.allocated_bytes))
}

fn archive(root: &std::path::Path, name: &str, len: usize) -> PathBuf {
    let d = root.join("com.apple.gpuarchiver").join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("PersistentState"), vec![7u8; len]).unwrap();
    d
}

/// Regression (issue 8): with no inotify instance left the fallback started, but a new item was
/// never seen (`flush` skipped the polling root and nothing re-read it before the next poll).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_inotify_instance_the_polling_fallback_sees_new_items() {
    let old = std::fs::read_to_string(LIMIT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let first = archive(&canonical, "gpuarchiver-before", 4000);
    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.debounce = Duration::from_millis(50);
    if std::fs::write(LIMIT, "0").is_err() {
        eprintln!("skipped: cannot lower {LIMIT} (not root)");
        return;
    }
    let guard = InstanceLimit(old);
    let m = monitor::spawn(opts).unwrap();
    let mut rx = m.subscribe();
    // The watcher is created before the first scan starts.
    rx.wait_for(|s| s.scan_progress.roots_done == 1)
        .await
        .unwrap();
    drop(guard);
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(
        s.roots[0].watch_mode,
        WatchMode::Polling,
        "{:?}",
        s.roots[0]
    );
    let why = s.roots[0].watch_error.as_deref().unwrap();
    assert!(why.contains("max_user_instances"), "{why}");
    assert_eq!(producer(&s, GPU), (1, du(&first)));

    let second = archive(&canonical, "gpuarchiver-after", 9000);
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(producer(&s, GPU), (2, du(&first) + du(&second)));
    std::fs::remove_dir_all(&first).unwrap();
    m.flush().await.unwrap();
    assert_eq!(producer(&m.snapshot(), GPU), (1, du(&second)));
    m.shutdown().await;
}
