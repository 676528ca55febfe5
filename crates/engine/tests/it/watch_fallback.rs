//! The fallbacks of the watcher for paths it cannot watch: one unreadable dir must not switch its
//! whole root to polling.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use cachewatch::dto::WatchMode;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::{Catalogue, Root, RootKind};

const GPU: &str = "metal-gpuarchiver";

/// `du -B1 -s -c -x` of `paths`: their allocated bytes together.
fn du_total(paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

/// `n` `gpuarchiver-*` dirs of one file each in `parent`.
fn archives(parent: &Path, n: usize, tag: &str) -> Vec<PathBuf> {
    std::fs::create_dir_all(parent).unwrap();
    (0..n)
        .map(|i| {
            let d = parent.join(format!("gpuarchiver-{tag}{i:03}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("PersistentState"), vec![1u8; 500 + i * 4000]).unwrap();
            d
        })
        .collect()
}

/// True when this process runs as root (`/proc/self/status`).
fn euid_is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    uid.split_whitespace().nth(2) == Some("0")
}

const CHILD: &str = "CACHEWATCH_TEST_AS_NOBODY";

/// The libtest name of this module's test `f`, as `--exact` wants it: `module_path!()` without
/// the crate's name (`it::watch_fallback` runs as `watch_fallback::f`).
fn test_path(f: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    if module.is_empty() {
        f.to_owned()
    } else {
        format!("{module}::{f}")
    }
}

/// As root `chmod 000` denies nothing: the test runs itself again as `nobody` under `setpriv`
/// (skipped, with the reason printed, where `setpriv` cannot drop root).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_unreadable_dir_leaves_the_rest_of_the_root_event_watched() {
    const NAME: &str = "one_unreadable_dir_leaves_the_rest_of_the_root_event_watched";
    if euid_is_root() && std::env::var_os(CHILD).is_none() {
        let t = tempfile::tempdir().unwrap();
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let copy = t.path().join("watch_fallback_test");
        std::fs::copy(std::env::current_exe().unwrap(), &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&copy)
            .args(["--exact", &test_path(NAME), "--test-threads=1"])
            .env(CHILD, "1")
            .output();
        let Some(out) = out.ok().filter(|o| o.status.code() != Some(127)) else {
            println!("skipped: running as root and setpriv cannot run the test as nobody");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{text}\n{err}");
        assert!(text.contains("1 passed"), "child ran the test:\n{text}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let canonical = root.canonical.clone();
    let gpu = canonical.join("org.julialang.julia/com.apple.gpuarchiver");
    let first = archives(&gpu, 3, "a");
    let locked = canonical.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::write(locked.join("inside"), b"x").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();

    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.debounce = Duration::from_millis(50);
    let m = monitor::spawn(opts).unwrap();
    m.flush().await.unwrap();
    let s = m.snapshot();
    let r = &s.roots[0];
    assert_eq!(r.watch_mode, WatchMode::Events, "{:?}", r.watch_error);
    assert_eq!(r.watch_error, None);
    let locked_text = locked.to_string_lossy().into_owned();
    assert_eq!(r.unwatched_paths, vec![locked_text.clone()]);
    assert!(
        r.unreadable_paths.contains(&locked_text),
        "{:?}",
        r.unreadable_paths
    );

    // New items elsewhere arrive by events: no rescan (a polling root is rescanned at each flush).
    let more = archives(&gpu, 2, "b");
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(s.roots[0].rescans, 0);
    assert_eq!(s.roots[0].watch_mode, WatchMode::Events);
    let all: Vec<PathBuf> = first.iter().chain(&more).cloned().collect();
    let p = s.producers.iter().find(|p| p.id == GPU).unwrap();
    assert_eq!((p.items, p.allocated_bytes), (5, du_total(&all)));
    m.shutdown().await;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}
