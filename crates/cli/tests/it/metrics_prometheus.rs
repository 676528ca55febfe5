//! `cachewatch watch --metrics` scraped by a real Prometheus (Debian package `prometheus`), on
//! loopback: the series must appear in Prometheus with the hand-counted value.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};

use cachewatch_testkit::scrape::{self, Reaped};
use std::time::Duration;

const PROMETHEUS: &str = "/usr/bin/prometheus";
const ITEMS: usize = 37;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.0 GET on loopback: `(status line, headers, body)`, or `None` when nothing listens.
fn get(port: u16, path: &str) -> Option<(String, String, String)> {
    let a = scrape::get(&format!("127.0.0.1:{port}"), path)?;
    Some((a.status, a.headers, a.body))
}

/// Polls `f` up to `tries` times, `every` apart, until it returns `Some`.
fn poll<T>(tries: u32, every: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    for _ in 0..tries {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(every);
    }
    None
}

/// `n` archives in an app's `com.apple.gpuarchiver` (a bare top-level one would be one more item of
/// the producer: the structure dir).
fn make_archives(root: &Path, n: usize) {
    let parent = root.join("org.julialang.julia/com.apple.gpuarchiver");
    std::fs::create_dir_all(&parent).unwrap();
    for i in 0..n {
        let d = parent.join(format!("gpuarchiver-{i:06}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("PersistentState"), b"state").unwrap();
    }
    // Not an item: a stray file next to them.
    std::fs::write(parent.join("stray.txt"), b"x").unwrap();
}

#[test]
fn prometheus_scrapes_the_producer_item_count() {
    if !Path::new(PROMETHEUS).exists() {
        eprintln!("skipped: {PROMETHEUS} is missing (apt-get install prometheus)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    make_archives(&root, ITEMS);

    let metrics_port = free_port();
    let watch = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("watch")
        .arg("--root")
        .arg(format!("cache={}", root.display()))
        .arg("--metrics")
        .arg(format!("127.0.0.1:{metrics_port}"))
        .arg("--config")
        .arg(tmp.path().join("no-config.toml"))
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut watch = Reaped(watch);

    // Our own endpoint first: OpenMetrics content type, the item count, `# EOF` last.
    let (status, headers, body) = poll(100, Duration::from_millis(100), || {
        get(metrics_port, "/metrics").filter(|(_, _, b)| b.contains("cachewatch_producer_items{"))
    })
    .expect("cachewatch /metrics answered with producer items");
    assert!(status.contains("200"), "{status}");
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{headers}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    let line = format!("cachewatch_producer_items{{producer=\"metal-gpuarchiver\"}} {ITEMS}\n");
    assert!(body.contains(&line), "{body}");
    assert!(
        body.contains("# TYPE cachewatch_alerts counter\n"),
        "{body}"
    );

    let prom_port = free_port();
    let config = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: cachewatch\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        ),
    )
    .unwrap();
    let prom = Command::new(PROMETHEUS)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            tmp.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _prom = Reaped(prom);

    let value = poll(120, Duration::from_millis(500), || {
        let (_, _, body) = get(prom_port, "/api/v1/query?query=cachewatch_producer_items")?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        v["data"]["result"]
            .as_array()?
            .iter()
            .find(|r| r["metric"]["producer"] == "metal-gpuarchiver")
            .and_then(|r| r["value"][1].as_str().map(str::to_owned))
    })
    .expect("prometheus scraped cachewatch_producer_items within 60 s");
    assert_eq!(value, ITEMS.to_string());

    // SIGTERM stops the monitor cleanly (exit 0).
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(watch.0.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = poll(100, Duration::from_millis(100), || {
        watch.0.try_wait().ok().flatten()
    })
    .expect("cachewatch watch exits after SIGTERM");
    assert!(status.success(), "{status:?}");
}
