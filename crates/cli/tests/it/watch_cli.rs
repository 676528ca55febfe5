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

/// Regression: SIGHUP (a log-rotation script's reload) killed `watch`. It reloads the config and
/// keeps running; a config that no longer loads is reported and the running settings are kept.
#[test]
fn sighup_reloads_the_config_and_watch_keeps_running() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[reclaim]\nolder_than = \"3d\"\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .args(["watch", "--root"])
        .arg(format!("temp={}", root.display()))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    // Bounds against hanging forever, not timing assertions.
    let mut wait_for = |needle: &str, child: &mut std::process::Child| {
        let start = Instant::now();
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                panic!("watch ended ({s}) before {needle:?}:\n{seen}");
            }
            if start.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("no {needle:?} in 60 s:\n{seen}");
            }
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains(needle) {
                    return;
                }
            }
        }
    };
    let pid = i32::try_from(child.id()).unwrap();
    wait_for("watching", &mut child);
    std::fs::write(
        &config,
        "[reclaim]\nolder_than = \"5h\"\n[alerts]\nproducer_growth_items = 7\n",
    )
    .unwrap();
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    wait_for("SIGHUP: reloaded [reclaim] and [alerts]", &mut child);
    std::fs::write(&config, "[reclaim\n").unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    wait_for("config not reloaded", &mut child);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "watch ended after SIGHUP:\n{seen}"
    );
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("watch did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0), "{seen}");
}
