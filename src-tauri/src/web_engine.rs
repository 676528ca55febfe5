//! The window's web engine (WebKitGTK on Linux, WKWebView on macOS) as the app manages it
//! around the window's life: drawn without a GL compositor, and its network process ended once no
//! window is left, with what a new window must wait for before it is built.

use std::time::{Duration, Instant};

/// Has the window's web view draw on the CPU (Linux): call first thing in `main`, before any
/// other thread exists (it sets an environment variable).
///
/// WebKitGTK composites with OpenGL by default; where there is no GPU (a virtual machine, a CI
/// runner, Xvfb) that is Mesa's software rasterizer, whose GL context costs the web process some
/// 65 MiB and most of a core for seconds after each open. A 380 x 560 popover of text draws as
/// fast on the CPU. WebKitGTK reads `WEBKIT_DISABLE_COMPOSITING_MODE` when it makes a web view;
/// its setting (`hardware-acceleration-policy`) cannot serve: Tauri offers no hook before the page
/// loads, and set after, the page never paints. A value the user set is kept.
pub fn draw_without_gpu() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
}

/// Ends the web engine's network process once no webview is left (Linux), and returns what was
/// ended, to wait for before the next window is built.
///
/// WebKitGTK keeps a `WebKitNetworkProcess` (some 30 MiB) per web context until the app quits,
/// webviews or not, and Tauri keeps its one web context for the app's life on Linux so that a new
/// window reuses it (tauri-apps/tauri#14626, tauri-apps/wry#590); WebKitGTK has no call to end
/// it. So the app ends it itself: a SIGTERM to its own child of that name, through a pidfd (the
/// child is ours and not reaped until GLib sees it exit, so the pid names it until then). WebKit
/// sees the process go as it sees a crash, and with no page to reload it only launches a new one
/// with the next webview. Not while a WebDriver drives the app: WebKit ends the automation session
/// with the network process.
///
/// On macOS WebKit ends its networking process itself once no web view uses it, and Tauri drops
/// the web context with the last webview there: nothing to do.
pub fn end_network_process() -> Ended {
    #[cfg(target_os = "linux")]
    {
        let mut ended = Ended::default();
        if automated() {
            // A WebDriver session dies with the network process: keep it for the test's life.
            tracing::debug!("driven by WebDriver: the web engine's network process is kept");
            return ended;
        }
        use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags, Signal};
        for pid in children_named(std::process::id(), "WebKitNetworkPr") {
            let Some(p) = Pid::from_raw(pid) else {
                continue;
            };
            let sent = pidfd_open(p, PidfdFlags::empty())
                .and_then(|fd| pidfd_send_signal(&fd, Signal::TERM).map(|()| fd));
            match sent {
                Ok(fd) => {
                    tracing::debug!(pid, "ended the web engine's network process");
                    ended.pidfds.push(fd);
                    ended.at = Some(Instant::now());
                }
                Err(e) => tracing::warn!(pid, "cannot end the web engine's network process: {e}"),
            }
        }
        ended
    }
    #[cfg(not(target_os = "linux"))]
    Ended::default()
}

/// Network processes the app ended ([`end_network_process`]): a new window is built only once
/// they are gone and WebKit's main loop had [`Ended::SETTLE`] to see them go.
#[derive(Debug, Default)]
pub struct Ended {
    /// One pidfd per ended process (Linux): readable once it has exited.
    #[cfg(target_os = "linux")]
    pidfds: Vec<std::os::fd::OwnedFd>,
    /// When the last one was sent its signal.
    at: Option<Instant>,
}

impl Ended {
    /// How long after a process is gone a window may be built: WebKit learns of the exit from
    /// its connection to the process, on the main loop.
    const SETTLE: Duration = Duration::from_millis(100);
    /// The longest wait for an ended process to exit.
    const EXIT_WAIT: Duration = Duration::from_secs(2);

    pub(crate) fn add(&mut self, other: Ended) {
        #[cfg(target_os = "linux")]
        self.pidfds.extend(other.pidfds);
        self.at = other.at.or(self.at);
    }

    /// What a build must still wait for (`None` when every ended process is gone and settled:
    /// the common case, a window opened long after the last one closed; they are then
    /// forgotten). Each caller gets its own copy to wait on, so a second open during the wait
    /// waits too.
    pub(crate) fn unsettled(&mut self) -> Option<Ended> {
        let settled = match self.at.map(|at| at.elapsed()) {
            None => true,
            Some(since) if since >= Self::SETTLE + Self::EXIT_WAIT => true,
            Some(since) => since >= Self::SETTLE && self.all_gone(None),
        };
        if settled {
            *self = Ended::default();
            return None;
        }
        Some(Ended {
            // A pidfd that cannot be duplicated (no fd left) is not waited for.
            #[cfg(target_os = "linux")]
            pidfds: self
                .pidfds
                .iter()
                .filter_map(|fd| fd.try_clone().ok())
                .collect(),
            at: self.at,
        })
    }

    /// Whether every process has exited, waiting up to `timeout` (none: do not wait).
    fn all_gone(&self, timeout: Option<Duration>) -> bool {
        #[cfg(target_os = "linux")]
        {
            use rustix::event::{poll, PollFd, PollFlags, Timespec};
            let deadline = timeout.map(|t| Instant::now() + t);
            for fd in &self.pidfds {
                loop {
                    let left = deadline.map_or(Duration::ZERO, |d| {
                        d.saturating_duration_since(Instant::now())
                    });
                    let ts = Timespec::try_from(left).unwrap_or(Timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    });
                    let mut fds = [PollFd::new(fd, PollFlags::IN)];
                    match poll(&mut fds, Some(&ts)) {
                        Ok(0) => return false,
                        Ok(_) => break,
                        Err(rustix::io::Errno::INTR) => continue,
                        Err(_) => break, // nothing to wait on
                    }
                }
            }
            true
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = timeout;
            true
        }
    }

    /// Blocks (on a blocking-pool thread, never the main one) until every ended process has
    /// exited, at most [`Ended::EXIT_WAIT`], then until [`Ended::SETTLE`] has passed since.
    pub(crate) fn until_gone(self) {
        if !self.all_gone(Some(Self::EXIT_WAIT)) {
            tracing::warn!("an ended network process is still running; building the window anyway");
        }
        std::thread::sleep(Self::SETTLE);
    }
}

/// Whether a WebDriver drives the app (tauri-driver sets this for the app it launches, and Tauri
/// then lets WebKit's automation into its web context).
#[cfg(target_os = "linux")]
fn automated() -> bool {
    std::env::var("TAURI_WEBVIEW_AUTOMATION").as_deref() == Ok("true")
}

/// The pids of `parent`'s children whose name (`/proc/PID/comm`, 15 bytes at most) is `name`.
#[cfg(target_os = "linux")]
fn children_named(parent: u32, name: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // "pid (comm) state ppid ...": comm may hold spaces and parentheses
            let Some(close) = stat.rfind(')') else {
                return false;
            };
            let open = stat.find('(').unwrap_or(close);
            let ppid = stat[close + 1..].split_whitespace().nth(1);
            ppid == Some(&parent.to_string()) && &stat[open + 1..close] == name
        })
        .collect()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A window built while the network process the app ended was still exiting got a page
    /// connected to the dying process: the build now waits until it is gone.
    #[test]
    fn an_ended_network_process_is_waited_for_before_a_window_is_built() {
        use std::os::unix::process::ExitStatusExt;
        assert!(
            Ended::default().unsettled().is_none(),
            "nothing ended, nothing to wait for"
        );

        // A child of ours named as WebKit's network process (comm is the file name, cut to 15
        // bytes), which would live 60 s.
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("WebKitNetworkProcess");
        std::fs::copy("/bin/sleep", &exe).unwrap();
        let mut child = std::process::Command::new(&exe).arg("60").spawn().unwrap();
        let pid = child.id() as i32;
        // `spawn` returns once the exec is done, so /proc names the child already.
        assert!(children_named(std::process::id(), "WebKitNetworkPr").contains(&pid));

        let mut ended = Ended::default();
        ended.add(end_network_process());
        let wait = ended.unsettled().expect("just ended: a build must wait");
        let second = ended
            .unsettled()
            .expect("a second open meanwhile waits too");
        let t = Instant::now();
        wait.until_gone();
        assert!(
            t.elapsed() >= Ended::SETTLE,
            "the settle time is waited too"
        );
        let status = child
            .try_wait()
            .unwrap()
            .expect("gone by the time the build may start");
        assert_eq!(
            status.signal(),
            Some(rustix::process::Signal::TERM.as_raw())
        );
        second.until_gone();
        assert!(ended.unsettled().is_none(), "gone and settled: forgotten");
        assert!(ended.at.is_none() && ended.pidfds.is_empty());
    }
}
