//! `/metrics`: the latest snapshot as OpenMetrics text, served by a tiny HTTP/1.1 responder on a
//! tokio `TcpListener` (one request per connection, `GET /metrics` only).
//!
//! Families (all gauges unless said): `cachewatch_producer_allocated_bytes{producer}`,
//! `cachewatch_producer_items{producer}`, `cachewatch_producer_orphan_bytes{producer}`,
//! `cachewatch_producer_reclaimable_bytes{producer}`, `cachewatch_root_allocated_bytes{kind,path}`,
//! `cachewatch_volume_free_bytes{mount}`, and the counter `cachewatch_alerts_total{rule}` (alerts
//! fired since this process started).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, watch};

use crate::snapshot::{AlertDto, Snapshot};

/// The Content-Type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Longest request head read, bytes.
const MAX_REQUEST_BYTES: usize = 8192;
/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Errors of the metrics server.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr} for /metrics: {source}; pick another port")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Alerts fired per rule, counted since start.
pub type AlertCounts = BTreeMap<String, u64>;

/// Renders `snap` and `alerts` (fired count per rule) as OpenMetrics text, ending with `# EOF`.
pub fn render(snap: &Snapshot, alerts: &AlertCounts) -> String {
    let mut out = String::with_capacity(4096);
    let producers = |f: fn(&crate::snapshot::ProducerDto) -> u64| {
        snap.producers
            .iter()
            .map(|p| (vec![("producer", p.id.as_str())], f(p)))
            .collect::<Vec<_>>()
    };
    family(
        &mut out,
        "cachewatch_producer_allocated_bytes",
        "gauge",
        Some("bytes"),
        "Allocated bytes of a producer's items (as du counts them).",
        &producers(|p| p.allocated_bytes),
    );
    family(
        &mut out,
        "cachewatch_producer_items",
        "gauge",
        None,
        "Number of a producer's items.",
        &producers(|p| p.items),
    );
    family(
        &mut out,
        "cachewatch_producer_orphan_bytes",
        "gauge",
        Some("bytes"),
        "Allocated bytes of a producer's items whose owner process (pid in the name) is gone.",
        &producers(|p| p.orphan_bytes),
    );
    family(
        &mut out,
        "cachewatch_producer_reclaimable_bytes",
        "gauge",
        Some("bytes"),
        "Allocated bytes a reclaim at the current age threshold would free.",
        &producers(|p| p.reclaimable_bytes),
    );
    let roots: Vec<_> = snap
        .roots
        .iter()
        .map(|r| {
            (
                vec![("kind", r.kind.as_str()), ("path", r.path.as_str())],
                r.allocated_bytes,
            )
        })
        .collect();
    family(
        &mut out,
        "cachewatch_root_allocated_bytes",
        "gauge",
        Some("bytes"),
        "Allocated bytes of a watched root.",
        &roots,
    );
    let mut mounts: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &snap.roots {
        if let (Some(m), Some(free)) = (r.mount.as_deref(), r.free_bytes) {
            mounts.insert(m, free);
        }
    }
    let mounts: Vec<_> = mounts
        .into_iter()
        .map(|(m, free)| (vec![("mount", m)], free))
        .collect();
    family(
        &mut out,
        "cachewatch_volume_free_bytes",
        "gauge",
        Some("bytes"),
        "Free bytes on a volume holding a watched root.",
        &mounts,
    );
    out.push_str("# HELP cachewatch_alerts Alerts fired since start, per rule.\n");
    out.push_str("# TYPE cachewatch_alerts counter\n");
    for (rule, n) in alerts {
        let _ = writeln!(
            out,
            "cachewatch_alerts_total{{rule=\"{}\"}} {n}",
            escape(rule)
        );
    }
    out.push_str("# EOF\n");
    out
}

fn family(
    out: &mut String,
    name: &str,
    kind: &str,
    unit: Option<&str>,
    help: &str,
    samples: &[(Vec<(&str, &str)>, u64)],
) {
    // Writing into a String cannot fail.
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    if let Some(unit) = unit {
        let _ = writeln!(out, "# UNIT {name} {unit}");
    }
    for (labels, value) in samples {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let _ = writeln!(out, "{name}{{{}}} {value}", labels.join(","));
    }
}

/// Escapes a label value: backslash, double quote and newline.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A running `/metrics` server; it stops when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl MetricsServer {
    /// The address it listens on (with the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The metrics address, bound but not yet serving: bind it before starting anything else, so a
/// port in use is the one error reported.
#[derive(Debug)]
pub struct MetricsListener {
    listener: TcpListener,
    addr: SocketAddr,
}

impl MetricsListener {
    /// The address bound (with the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Binds `addr` for [`serve_on`]. Must be called inside a tokio runtime.
///
/// # Errors
/// [`MetricsError::Bind`] when `addr` cannot be bound (in use, not local, no permission).
pub async fn bind(addr: SocketAddr) -> Result<MetricsListener, MetricsError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| MetricsError::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| MetricsError::Bind { addr, source })?;
    Ok(MetricsListener { listener, addr })
}

/// Serves `GET /metrics` on `addr` from the latest snapshot in `snapshots`, counting the alerts
/// that arrive on `alerts`: [`bind`] then [`serve_on`]. Must be called inside a tokio runtime.
///
/// # Errors
/// [`MetricsError::Bind`] when `addr` cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    alerts: broadcast::Receiver<AlertDto>,
) -> Result<MetricsServer, MetricsError> {
    Ok(serve_on(bind(addr).await?, snapshots, alerts))
}

/// Serves `GET /metrics` on a bound `listener` from the latest snapshot in `snapshots`, counting
/// the alerts that arrive on `alerts`. Must be called inside a tokio runtime.
pub fn serve_on(
    listener: MetricsListener,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    mut alerts: broadcast::Receiver<AlertDto>,
) -> MetricsServer {
    let MetricsListener {
        listener,
        addr: local,
    } = listener;
    let counts: Arc<Mutex<AlertCounts>> = Arc::default();
    let counter = counts.clone();
    let task = tokio::spawn(async move {
        let count_alerts = async move {
            loop {
                match alerts.recv().await {
                    Ok(a) => {
                        *counter
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .entry(a.rule)
                            .or_insert(0) += 1;
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "metrics missed alerts; counters are low");
                    }
                    Err(broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await;
                    }
                }
            }
        };
        let accept = async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        let snap = snapshots.borrow().clone();
                        let counts = counts.lock().unwrap_or_else(|e| e.into_inner()).clone();
                        tokio::spawn(async move {
                            if let Err(e) = respond(stream, &snap, &counts).await {
                                tracing::debug!(error = %e, "metrics request failed");
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "metrics accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        };
        tokio::join!(count_alerts, accept);
    });
    MetricsServer { addr: local, task }
}

async fn respond(
    mut stream: TcpStream,
    snap: &Snapshot,
    counts: &AlertCounts,
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let head = tokio::time::timeout(REQUEST_TIMEOUT, async {
        let mut chunk = [0u8; 1024];
        loop {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.len() > MAX_REQUEST_BYTES {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
    if head.is_err() {
        return Ok(());
    }
    let line = buf.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", CONTENT_TYPE, render(snap, counts)),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: try /metrics\n".to_owned(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET /metrics\n".to_owned(),
        ),
    };
    let mut resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        resp.push_str(&body);
    }
    stream.write_all(resp.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::snapshot::{MonitorState, RootDto, ScanProgress, WatchMode};

    #[test]
    fn families_have_help_type_unit_and_escaped_labels_and_end_with_eof() {
        let snap = Snapshot {
            taken_at_unix_secs: 0,
            state: MonitorState::Watching,
            scan_progress: ScanProgress::default(),
            threshold_secs: 0,
            total_allocated_bytes: 0,
            total_apparent_bytes: 0,
            disk_full_eta_secs: None,
            disk_full_eta_span_secs: None,
            total_growth: None,
            roots: vec![RootDto {
                kind: "temp".into(),
                path: "/tmp/a\"b\\c".into(),
                allocated_bytes: 8192,
                apparent_bytes: 10,
                items: 1,
                free_bytes: Some(77),
                volume_bytes: Some(100),
                mount: Some("/".into()),
                watch_mode: WatchMode::Events,
                watch_error: None,
                unreadable: 0,
                rescans: 0,
            }],
            producers: Vec::new(),
            unattributed: Vec::new(),
            alerts: Vec::new(),
            errors: Vec::new(),
            crash_groups: Vec::new(),
        };
        let alerts: AlertCounts = [("free-disk".to_owned(), 3)].into();
        let text = render(&snap, &alerts);
        assert!(text.contains(
            "cachewatch_root_allocated_bytes{kind=\"temp\",path=\"/tmp/a\\\"b\\\\c\"} 8192\n"
        ));
        assert!(text.contains("# UNIT cachewatch_root_allocated_bytes bytes\n"));
        assert!(text.contains("cachewatch_volume_free_bytes{mount=\"/\"} 77\n"));
        assert!(text.contains(
            "# TYPE cachewatch_alerts counter\ncachewatch_alerts_total{rule=\"free-disk\"} 3\n"
        ));
        assert!(text.ends_with("# EOF\n"));
        // Every family announced once, with HELP before TYPE.
        for name in [
            "cachewatch_producer_allocated_bytes",
            "cachewatch_producer_items",
            "cachewatch_producer_orphan_bytes",
            "cachewatch_producer_reclaimable_bytes",
            "cachewatch_root_allocated_bytes",
            "cachewatch_volume_free_bytes",
            "cachewatch_alerts",
        ] {
            let help = text.find(&format!("# HELP {name} ")).unwrap();
            let ty = text.find(&format!("# TYPE {name} ")).unwrap();
            assert!(help < ty, "{name}");
        }
    }
}
