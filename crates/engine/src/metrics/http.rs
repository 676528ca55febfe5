//! The HTTP side of `/metrics`, on hyper 1 (HTTP/1.1 only), with the limits of a small exporter:
//! at most [`MAX_CONNECTIONS`] connections at once (more wait in the listen backlog), a request
//! head of at most [`MAX_REQUEST_BYTES`] (431 past it) sent within [`REQUEST_TIMEOUT`], a whole
//! exchange within [`CONNECTION_TIMEOUT`], one request per connection, `GET` and `HEAD` of
//! `/metrics` only (404 for other paths, 405 for other methods). On a loopback address only a
//! loopback `Host` (`localhost`, `127.0.0.1`, `[::1]`, with any port) is answered (403 else): a web
//! page the user visits could otherwise read the root paths (and the user name in them) through
//! DNS rebinding. A request without `Host` (HTTP/1.0 tools) is answered.

use std::convert::Infallible;
use std::sync::Arc;
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

/// Renders the page body for one request.
pub(crate) type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Serves one connection: one request, then close.
pub(crate) async fn connection(stream: TcpStream, render: Render) {
    let loopback = stream.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let resp = respond(&req, &render, loopback);
        async move { Ok::<_, Infallible>(resp) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_TIMEOUT)
        .max_buf_size(MAX_REQUEST_BYTES)
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(CONNECTION_TIMEOUT, conn).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "metrics request failed"),
        Err(_) => tracing::debug!("metrics connection took too long; closed"),
    }
}

fn respond(req: &Request<Incoming>, render: &Render, loopback: bool) -> Response<Full<Bytes>> {
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    let host_ok = !loopback || req.headers().get(HOST).map_or(true, is_loopback_host);
    let (status, ctype, body) = match (get, req.uri().path()) {
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
