//! `cachewatch watch` end to end through the binary.

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A second `watch --metrics` on a port in use printed three unrelated ERROR lines (scan
/// cancelled, running without history, reclaimable figures failed) before the real cause. Now it
/// binds first and reports the one cause.
#[test]
fn watch_on_a_metrics_port_in_use_reports_only_the_bind_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .args(["watch", "--metrics", &addr, "--root"])
        .arg(format!("temp={}", root.display()))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(dir.path().join("config.toml"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("watch kept running on a port in use");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line, the cause: {stderr}");
    assert!(lines[0].contains(&addr), "{stderr}");
    assert!(!stderr.contains("ERROR"), "{stderr}");
    assert!(!root.join("..").join("data").join("cachewatch.db").exists());
}
