//! `/metrics`: the latest snapshot as OpenMetrics text, encoded by `prometheus-client` (the
//! Prometheus project's Rust client) and served by hyper over a tokio `TcpListener`: one request
//! per connection, `GET`/`HEAD /metrics` only, at most 32 connections at once, a request head of
//! at most 8 KiB sent within 5 s; when all 32 are taken, a silent or half-sent one makes room
//! (see `http`). The same families, from a one-shot scan, in the Prometheus text
//! format for node_exporter's textfile collector: [`textfile`].
//!
//! Families (all gauges unless said): `cachewatch_producer_allocated_bytes{producer}`,
//! `cachewatch_producer_items{producer}`, `cachewatch_producer_orphan_bytes{producer}`,
//! `cachewatch_producer_reclaimable_bytes{producer}`, `cachewatch_root_allocated_bytes{kind,path}`,
//! `cachewatch_root_up{kind,path}` (0 once the root was removed or replaced by a link),
//! `cachewatch_volume_free_bytes{mount}`, `cachewatch_unexplained_growth_bytes{mount}` (the
//! volume's free-space fall beyond its roots' growth, see `crate::outside_growth`), and the counters `cachewatch_alerts_total{rule}` (alerts
//! fired since this process started), `cachewatch_reclaimed_bytes_total{producer}` and
//! `cachewatch_reclaimed_items_total{producer}` (deleted by the auto-reclaim rules since the monitor
//! started), `cachewatch_auto_reclaim_runs_total{rule}` (runs of each rule since the monitor
//! started), and the monitor's own health: `cachewatch_monitor_up` (0 once its task stopped on a
//! panic) and `cachewatch_snapshot_age_seconds` (since it last showed it runs: a stuck or stopped
//! monitor's figures are frozen, and this says so).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch};

use crate::dto::AlertDto;
use crate::snapshot::Snapshot;

/// The Content-Type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

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

/// Renders `snap` and `alerts` (fired count per rule) as OpenMetrics text, ending with `# EOF`;
/// the snapshot's age is taken at the system clock's now.
pub fn render(snap: &Snapshot, alerts: &AlertCounts) -> String {
    let now = crate::units::unix_secs(std::time::SystemTime::now());
    render_at(snap, alerts, now)
}

/// [`render`] with the snapshot's age taken at `now` (Unix seconds).
pub fn render_at(snap: &Snapshot, alerts: &AlertCounts, now: u64) -> String {
    encode::monitor_families(snap, alerts, now).openmetrics()
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
    let listener = listen(addr).map_err(|source| MetricsError::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| MetricsError::Bind { addr, source })?;
    Ok(MetricsListener { listener, addr })
}

/// A listening socket on `addr` with a backlog of [`BACKLOG`] (the kernel may lower it: `somaxconn`):
/// connections opened faster than they are accepted wait there instead of having their handshake
/// dropped (a scrape behind a flood of them would otherwise wait a SYN retransmit, 1 s and more).
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// The listen backlog asked for.
const BACKLOG: u32 = 1024;

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
                            .entry(a.rule.as_str().to_owned())
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
        let render: http::Render = Arc::new(move || {
            let snap = snapshots.borrow().clone();
            let counts = counts.lock().unwrap_or_else(|e| e.into_inner()).clone();
            render(&snap, &counts)
        });
        let conns = Arc::new(http::Connections::default());
        let accept = async move {
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "metrics accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                // Full: the oldest connection without a request head makes room (a slowloris
                // holds nothing a scrape needs); with none to push out, wait for one to end.
                // A connection that sent no byte is pushed out only once `SILENT_GRACE` old: its
                // head may be on its way; look again every 10 ms until then.
                while conns.is_full() && !conns.evict() {
                    let wait =
                        tokio::time::timeout(Duration::from_millis(10), conns.wait_for_room());
                    // Timed out: look again for one to push out.
                    let _room = wait.await;
                }
                let reg = conns.register();
                let id = http::Connections::id_of(&reg);
                let (polled, head) = (reg.polled.clone(), reg.head.clone());
                let render = render.clone();
                let task = tokio::spawn(async move {
                    http::connection(stream, render, polled, head).await;
                    drop(reg);
                });
                conns.spawned(id, task.abort_handle());
                // The new connection's task runs before the next accept: a head already sent
                // is read (and its connection no longer pushed out) before more arrive.
                tokio::task::yield_now().await;
            }
        };
        tokio::join!(count_alerts, accept);
    });
    MetricsServer { addr: local, task }
}

mod encode;
mod http;
pub mod textfile;

#[cfg(test)]
mod tests;
