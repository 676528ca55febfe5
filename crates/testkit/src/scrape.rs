//! A running `cachewatch watch --metrics` as the tests see it: the child reaped on drop, its
//! address read from the line it prints, one GET per connection, and a bounded wait for a line.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};

/// Kills (SIGKILL) and reaps the child when dropped, so a failing test leaves no process behind.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The `HOST:PORT` of the first line that names `http://HOST:PORT/metrics`, reading `out` (the
/// monitor's stderr) until one does; `None` when it ends first.
pub fn metrics_addr(out: impl BufRead) -> Option<String> {
    out.lines().map_while(Result::ok).find_map(|l| addr_in(&l))
}

/// The `HOST:PORT` a line names as `http://HOST:PORT/metrics`, if it does.
pub fn addr_in(line: &str) -> Option<String> {
    line.split("http://")
        .nth(1)
        .map(|a| a.trim_end_matches("/metrics").to_owned())
}

/// One answer: status line, header lines, body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: String,
    pub headers: String,
    pub body: String,
}

/// One HTTP/1.0 `GET path` to `addr` with a loopback `Host` (read timeout 5 s); `None` when
/// nothing listens or the answer is not HTTP.
pub fn get(addr: &str, path: &str) -> Option<Answer> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let (head, body) = buf.split_once("\r\n\r\n")?;
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    Some(Answer {
        status: status.to_owned(),
        headers: headers.to_owned(),
        body: body.to_owned(),
    })
}

/// The `/metrics` body at `addr`; panics when it cannot be read.
pub fn page(addr: &str) -> String {
    get(addr, "/metrics")
        .unwrap_or_else(|| panic!("GET http://{addr}/metrics"))
        .body
}

/// Polls `/metrics` every 100 ms until its body contains `line` and returns that body; panics
/// with the last body after `bound` (a guard against hanging, not a timing assertion).
pub fn wait_for(addr: &str, line: &str, bound: Duration) -> String {
    let start = Instant::now();
    loop {
        let body = get(addr, "/metrics").map(|a| a.body).unwrap_or_default();
        if body.contains(line) {
            return body;
        }
        assert!(start.elapsed() < bound, "no {line} in\n{body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
