//! The HTTP side of `/metrics`, on hyper 1 (HTTP/1.1 only), with the limits of a small exporter:
//! at most [`MAX_CONNECTIONS`] connections at once, a request head of at most
//! [`MAX_REQUEST_BYTES`] (431 past it) sent within [`REQUEST_TIMEOUT`], a whole exchange within
//! [`CONNECTION_TIMEOUT`], one request per connection, `GET` and `HEAD` of `/metrics` only (404
//! for other paths, 405 for other methods, 400 for a request with two `Host` headers, as RFC 9112
//! says). On a loopback address only a loopback `Host` (`localhost`, `127.0.0.1`, `[::1]`, with
//! any port) is answered (403 else): a web page the user visits could otherwise read the root
//! paths (and the user name in them) through DNS rebinding. A request without `Host` (HTTP/1.0
//! tools) is answered.
//!
//! Slow clients cannot block a scrape: when every slot is taken, a new connection takes the slot
//! of the oldest connection that has sent part of its request head and stopped, else of the
//! oldest that has sent no byte for [`SILENT_GRACE`], else of the oldest whose answer is taking
//! over [`ANSWER_GRACE`]; that one is closed ([`Connections`]). Connections that open and never
//! finish their head (slowloris) or never send a byte therefore only push each other out, 32 every
//! [`SILENT_GRACE`] at least, and a real scrape, whose head comes at once, is answered within a
//! second behind hundreds of them.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE as CONTENT_TYPE_HEADER, HOST};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;

/// Longest request head read, bytes (also hyper's smallest read buffer).
pub(crate) const MAX_REQUEST_BYTES: usize = 8192;
/// How long a client may take to send its request head.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection may last, request and response (a reader that never reads).
pub(crate) const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 32;
/// A connection whose request head has come is pushed out for a new one only once its answer
/// has taken this long (a client that does not read it).
pub(crate) const ANSWER_GRACE: Duration = Duration::from_secs(1);
/// A connection that has sent no byte is pushed out for a new one once it is this old: a client
/// sends its request head with its connection, so one still silent by then holds a slot for
/// nothing (a flood of them would otherwise let only 32 connections in per [`ANSWER_GRACE`]).
pub(crate) const SILENT_GRACE: Duration = Duration::from_millis(100);

/// Renders the page body for one request.
pub(crate) type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// The open connections, oldest first, so that a full server can push out the one that matters
/// least: the oldest with part of a request head, then the oldest silent past [`SILENT_GRACE`],
/// then the oldest answer past [`ANSWER_GRACE`].
#[derive(Default)]
pub(crate) struct Connections {
    open: Mutex<BTreeMap<u64, Conn>>,
    next_id: std::sync::atomic::AtomicU64,
    /// Woken when a connection ends.
    room: tokio::sync::Notify,
}

struct Conn {
    accepted: tokio::time::Instant,
    /// Set once its task has read bytes from the socket: a connection with none read yet may
    /// hold a whole request head already, and is never pushed out.
    polled: Arc<AtomicBool>,
    /// Set when the request head has been read.
    head: Arc<AtomicBool>,
    /// `None` for the moment between its registration and its task's spawn.
    abort: Option<tokio::task::AbortHandle>,
}

/// Removes its connection from [`Connections`] when the connection's task ends (or is aborted).
pub(crate) struct Registered {
    conns: Arc<Connections>,
    id: u64,
    /// Set once the connection's task has read from the socket.
    pub(crate) polled: Arc<AtomicBool>,
    /// Set when the request head has been read.
    pub(crate) head: Arc<AtomicBool>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.conns.lock().remove(&self.id);
        self.conns.room.notify_waiters();
    }
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Conn>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when [`MAX_CONNECTIONS`] are open.
    pub(crate) fn is_full(&self) -> bool {
        self.lock().len() >= MAX_CONNECTIONS
    }

    /// Waits until fewer than [`MAX_CONNECTIONS`] are open.
    pub(crate) async fn wait_for_room(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            // Registered before the check: an end in between is not missed.
            notified.as_mut().enable();
            if !self.is_full() {
                return;
            }
            notified.await;
        }
    }

    /// Registers a new connection (its task not spawned yet): the guard its task holds.
    pub(crate) fn register(self: &Arc<Self>) -> Registered {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let head = Arc::new(AtomicBool::new(false));
        let polled = Arc::new(AtomicBool::new(false));
        self.lock().insert(
            id,
            Conn {
                accepted: tokio::time::Instant::now(),
                polled: polled.clone(),
                head: head.clone(),
                abort: None,
            },
        );
        Registered {
            conns: self.clone(),
            id,
            polled,
            head,
        }
    }

    /// Notes the task serving connection `reg` (unless it has ended already).
    pub(crate) fn spawned(&self, id: u64, abort: tokio::task::AbortHandle) {
        if let Some(c) = self.lock().get_mut(&id) {
            c.abort = Some(abort);
        }
    }

    /// Closes the connection that matters least, if one may go: the oldest without a request head
    /// once its task has read part of one, else the oldest that has sent no byte for
    /// [`SILENT_GRACE`], else the oldest whose answer has taken over [`ANSWER_GRACE`]. True when
    /// one was closed: its slot is free at once (its socket closes when its aborted task is
    /// dropped, right after).
    pub(crate) fn evict(&self) -> bool {
        let mut open = self.lock();
        let now = tokio::time::Instant::now();
        let age = |c: &Conn| now.saturating_duration_since(c.accepted);
        let oldest = |pick: &dyn Fn(&Conn) -> bool| {
            open.iter()
                .find(|(_, c)| c.abort.is_some() && pick(c))
                .map(|(id, _)| *id)
        };
        let partial =
            |c: &Conn| c.polled.load(Ordering::Acquire) && !c.head.load(Ordering::Acquire);
        let silent = |c: &Conn| !c.polled.load(Ordering::Acquire) && age(c) >= SILENT_GRACE;
        let slow_answer = |c: &Conn| age(c) > ANSWER_GRACE;
        let victim = oldest(&partial)
            .or_else(|| oldest(&silent))
            .or_else(|| oldest(&slow_answer));
        let Some(conn) = victim.and_then(|id| open.remove(&id)) else {
            return false;
        };
        if let Some(abort) = conn.abort {
            abort.abort();
        }
        true
    }

    /// The id of a registration.
    pub(crate) fn id_of(reg: &Registered) -> u64 {
        reg.id
    }
}

/// Serves one connection: one request, then close. `polled` is set once bytes were read from the
/// socket (a head that came whole is parsed in the same poll), `head` once the request head is
/// read.
pub(crate) async fn connection(
    stream: TcpStream,
    render: Render,
    polled: Arc<AtomicBool>,
    head: Arc<AtomicBool>,
) {
    let loopback = stream.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        head.store(true, Ordering::Release);
        let resp = respond(&req, &render, loopback);
        async move { Ok::<_, Infallible>(resp) }
    });
    // `polled` is set only once bytes came: a connection read before its client's head arrived
    // (a scrape under load) is not a slow client, and must not be pushed out as one.
    let stream = Counted {
        inner: stream,
        read: polled,
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_TIMEOUT)
        .max_buf_size(MAX_REQUEST_BYTES)
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service);
    let done = tokio::time::timeout(CONNECTION_TIMEOUT, conn);
    match done.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "metrics request failed"),
        Err(_) => tracing::debug!("metrics connection took too long; closed"),
    }
}

/// A connection's socket that says when bytes were first read from it.
struct Counted {
    inner: TcpStream,
    read: Arc<AtomicBool>,
}

impl tokio::io::AsyncRead for Counted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.read.store(true, Ordering::Release);
        }
        r
    }
}

impl tokio::io::AsyncWrite for Counted {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

fn respond(req: &Request<Incoming>, render: &Render, loopback: bool) -> Response<Full<Bytes>> {
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    let hosts = req.headers().get_all(HOST).iter().count();
    let host_ok = !loopback || req.headers().get(HOST).map_or(true, is_loopback_host);
    let (status, ctype, body) = match (get, req.uri().path()) {
        // RFC 9112 section 3.2: a request with more than one Host field gets a 400.
        _ if hosts > 1 => (
            StatusCode::BAD_REQUEST,
            "text/plain; charset=utf-8",
            "bad request: more than one Host header\n".to_owned(),
        ),
        _ if !host_ok => (
            StatusCode::FORBIDDEN,
            "text/plain; charset=utf-8",
            "forbidden: this /metrics listens on a loopback address and answers only Host localhost or a loopback address\n".to_owned(),
        ),
        (true, "/metrics") => (StatusCode::OK, super::CONTENT_TYPE, render()),
        (true, _) => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: try /metrics\n".to_owned(),
        ),
        (false, _) => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "only GET /metrics\n".to_owned(),
        ),
    };
    // hyper sends no body for HEAD and sets Content-Length from the body.
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE_HEADER, HeaderValue::from_static(ctype));
    if status == StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    resp
}

/// True for a `Host` header naming a loopback host: `localhost` or a loopback IP, with or without
/// a port (`[::1]:9187`, `127.0.0.1:9187`, `localhost`).
pub(crate) fn is_loopback_host(value: &HeaderValue) -> bool {
    let Ok(host) = value.to_str() else {
        return false;
    };
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split_once(']').map_or(rest, |(ip, _)| ip)
    } else {
        host.rsplit_once(':')
            .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
            .map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
