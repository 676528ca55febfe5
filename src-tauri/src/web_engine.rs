//! The window's web engine (WebKitGTK on Linux, WKWebView on macOS) as the app manages it
//! around the window's life: drawn without a GL compositor, its network process ended once no
//! window is left (with what a new window must wait for before it is built), and the engine's
//! code pages that showing a window brought into the app let go of once it is gone.

#[cfg(target_os = "linux")]
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};
use std::time::{Duration, Instant};

/// Has the window's web view draw on the CPU, and GTK not load a GL driver (Linux): call first
/// thing in `main`, before any other thread exists (it sets environment variables).
///
/// WebKitGTK composites with OpenGL by default; where there is no GPU (a virtual machine, a CI
/// runner, Xvfb) that is Mesa's software rasterizer, whose GL context costs the web process some
/// 65 MiB and most of a core for seconds after each open. A 380 x 560 popover of text draws as
/// fast on the CPU. WebKitGTK reads `WEBKIT_DISABLE_COMPOSITING_MODE` when it makes a web view;
/// its setting (`hardware-acceleration-policy`) cannot serve: Tauri offers no hook before the page
/// loads, and set after, the page never paints.
///
/// GTK 3 asks GLX, when it opens the display, which visuals suit GL, and that loads the GL driver
/// (Mesa's, with LLVM): some 30 MiB in the app from its start, for windows that never draw with
/// GL. `GDK_GL=disable` keeps GTK from it. A value the user set is kept, for either variable.
pub fn draw_without_gpu() {
    #[cfg(target_os = "linux")]
    for (var, value) in [
        ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
        ("GDK_GL", "disable"),
    ] {
        if std::env::var_os(var).is_none() {
            std::env::set_var(var, value);
        }
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

/// Lets the closed window's web view be freed with its window: call on it just before the window
/// is destroyed (on the main thread, where `with_webview` runs). Returns what tells whether it was
/// freed, to ask once the window is gone ([`Freed::freed`]).
///
/// wry (0.57, Linux) connects the page's IPC handler to the web view's own user content manager,
/// and the handler holds a strong reference to the web view: the view holds its manager, the
/// manager the handler, the handler the view. GTK's destroy of the window ends the page (its web
/// process exits) but that cycle keeps the `WebKitWebView` object, its manager and every user
/// script in it (Tauri's scripts and the page's initial snapshot, [`crate::window::initial_script`])
/// alive for the app's life: some 100 KiB a window, on the main thread's heap, which is what each
/// open/close cycle added. Disconnecting the handler from the manager drops the handler and its
/// reference; the window's destroy then frees the view and its manager. Nothing else reaches the
/// handler: the page is going with its window.
///
/// On macOS wry's WKWebView holds its IPC handler through WebKit's own weak script-message
/// handler: nothing to do.
pub fn let_go_of_web_view(view: tauri::webview::PlatformWebview) -> Freed {
    #[cfg(target_os = "linux")]
    {
        use glib::object::{ObjectExt, ObjectType};
        use glib::translate::IntoGlib;
        use webkit2gtk::{UserContentManagerExt, WebViewExt};
        let view = view.inner();
        if let Some(manager) = view.user_content_manager() {
            manager.unregister_script_message_handler("ipc");
            let instance: *mut glib::gobject_ffi::GObject = manager.as_ptr().cast();
            // SAFETY: `manager` is a live GObject for the whole block; the signal is looked up on
            // its own type, and what is found connected to it on this one instance (wry's
            // handler, which nothing calls once the page is gone) is disconnected by its id.
            // `g_signal_handlers_disconnect_matched` cannot serve: it disconnects nothing unless
            // the match names a closure, function or data, which wry's handler does not expose.
            // Each pass disconnects one handler, so the loop ends; the bound is a guard.
            let disconnected = unsafe {
                let signal = glib::gobject_ffi::g_signal_lookup(
                    c"script-message-received".as_ptr(),
                    manager.type_().into_glib(),
                );
                let mut n = 0u32;
                while signal != 0 && n < 64 {
                    let handler = glib::gobject_ffi::g_signal_handler_find(
                        instance.cast(),
                        glib::gobject_ffi::G_SIGNAL_MATCH_ID,
                        signal,
                        0,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    );
                    if handler == 0 {
                        break;
                    }
                    glib::gobject_ffi::g_signal_handler_disconnect(instance.cast(), handler);
                    n += 1;
                }
                n
            };
            tracing::debug!(
                disconnected,
                "the page's IPC handler let go of its web view"
            );
        }
        // A weak reference cannot tell: GTK's destroy runs the view's dispose, which clears
        // weak references while others still hold the object. Its qdata goes only when it is
        // finalized, so a guard kept there says when the view's memory is gone.
        let finalized = Arc::new(AtomicBool::new(false));
        struct OnFinalize(Arc<AtomicBool>);
        impl Drop for OnFinalize {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        // SAFETY: the key is this module's own and set once per view, with a 'static value
        // that GLib drops (on the main thread) when the view is finalized.
        unsafe {
            view.set_qdata(
                glib::Quark::from_str("cachewatch-on-finalize"),
                OnFinalize(finalized.clone()),
            );
        }
        Freed(Some(finalized))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = view;
        Freed()
    }
}

/// Whether a web view [`let_go_of_web_view`] was given is freed.
#[derive(Debug, Default)]
pub struct Freed(#[cfg(target_os = "linux")] Option<Arc<AtomicBool>>);

impl Freed {
    /// True once the web view is freed, false while it lives; `None` when there is nothing to
    /// ask (no web view was given, or macOS).
    pub fn freed(&self) -> Option<bool> {
        #[cfg(target_os = "linux")]
        {
            self.0.as_ref().map(|f| f.load(Ordering::Acquire))
        }
        #[cfg(not(target_os = "linux"))]
        None
    }
}

/// The libraries of WebKit's UI side, which the app links: loaded at start, never unloaded.
#[cfg(target_os = "linux")]
const ENGINE_LIBS: [&str; 2] = ["libwebkit2gtk-4.1.so", "libjavascriptcoregtk-4.1.so"];

/// The GL driver that WebKit's UI side loads when it first makes a web view (to learn the
/// display's buffer formats, once for the process's life: its display is never closed, so the
/// driver is never unloaded): Mesa's `<name>_dri.so` and the LLVM it links.
#[cfg(target_os = "linux")]
fn is_gl_driver(name: &str) -> bool {
    name.ends_with("_dri.so") || name.starts_with("libLLVM")
}

/// Lets go of the pages of the web engine's code that showing a window faulted into the app
/// (Linux), once no window is left; returns their bytes (resident before). On the main thread,
/// where WebKit and GTK run: nothing can unload the GL driver meanwhile.
///
/// Building and drawing a web view runs WebKit's UI side in the app process: some 25 MiB of
/// `libwebkit2gtk` and `libjavascriptcoregtk` code, and the GL driver its first web view loads
/// (Mesa with LLVM: some 35 MiB of code run once), that stay mapped, and counted in the app's
/// resident size, after the window is gone (in PSS too, once the web process that shared them has
/// ended). Those pages are the files' own: the app drops them from its page tables
/// (`MADV_DONTNEED`), the kernel keeps them in its page cache while it has room, and the next
/// window faults back in from there, without reading the disk, what it runs again.
///
/// On macOS WebKit lives in the shared cache, whose clean pages Activity Monitor's memory figure
/// does not count: nothing to do.
pub fn release_engine_code() -> u64 {
    #[cfg(target_os = "linux")]
    {
        drop_code_pages(|name| {
            ENGINE_LIBS.iter().any(|l| name.starts_with(l)) || is_gl_driver(name)
        })
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Drops from this process's page tables the resident pages of the read-only mappings of the
/// libraries whose file name `which` accepts and that hold no page of their own (no copy-on-write
/// copy: `Anonymous: 0 kB`). Bytes dropped (their `Rss` before).
///
/// Only for libraries that stay loaded: one unloaded meanwhile could see its address range mapped
/// to something else between the read of `smaps` and the `madvise`.
#[cfg(target_os = "linux")]
fn drop_code_pages(which: impl Fn(&str) -> bool) -> u64 {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let mut dropped = 0;
    for vma in mappings(&smaps) {
        let name = vma.path.rsplit('/').next().unwrap_or("");
        if !which(name) || vma.writable || vma.anonymous_kib != 0 || vma.rss_kib == 0 {
            continue;
        }
        // SAFETY: the range is a read-only private mapping of a library that stays loaded (the
        // caller's promise), and every page in it is the file's (none copied on write): dropped,
        // each page comes back from the file at its next use, unchanged.
        let res = unsafe {
            rustix::mm::madvise(
                vma.start as *mut std::ffi::c_void,
                vma.end - vma.start,
                rustix::mm::Advice::LinuxDontNeed,
            )
        };
        match res {
            Ok(()) => dropped += vma.rss_kib * 1024,
            Err(e) => tracing::debug!(path = vma.path, "cannot drop code pages: {e}"),
        }
    }
    dropped
}

/// One mapping of `/proc/self/smaps`.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Vma<'a> {
    start: usize,
    end: usize,
    writable: bool,
    path: &'a str,
    rss_kib: u64,
    anonymous_kib: u64,
}

/// The mappings of an `smaps` text: a header line per mapping
/// (`start-end perms offset dev inode [path]`), then its `Field: N kB` lines.
#[cfg(target_os = "linux")]
fn mappings(smaps: &str) -> Vec<Vma<'_>> {
    let mut out: Vec<Vma<'_>> = Vec::new();
    for line in smaps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((a, b)) = first.split_once('-') {
            let (Ok(start), Ok(end)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            else {
                continue;
            };
            let writable = fields
                .next()
                .is_some_and(|p| p.as_bytes().get(1) == Some(&b'w'));
            // offset, dev, inode, then the path (which may hold spaces)
            let path = line
                .splitn(6, |c: char| c.is_ascii_whitespace())
                .nth(5)
                .map_or("", str::trim);
            out.push(Vma {
                start,
                end,
                writable,
                path,
                rss_kib: 0,
                anonymous_kib: 0,
            });
            continue;
        }
        let Some(vma) = out.last_mut() else { continue };
        let kib = || {
            fields
                .clone()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        match first {
            "Rss:" => vma.rss_kib = kib(),
            "Anonymous:" => vma.anonymous_kib = kib(),
            _ => {}
        }
    }
    out
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

    /// Resident KiB of the read-only mappings of the file named `lib` in this process, read from
    /// `/proc/self/smaps` line by line (not through `mappings`).
    fn resident_code_kib(lib: &str) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
        let (mut total, mut counting) = (0, false);
        for line in smaps.lines() {
            let first = line.split(' ').next().unwrap_or("");
            let header =
                first.contains('-') && first.chars().all(|c| c == '-' || c.is_ascii_hexdigit());
            if header {
                let perms = line.split(' ').nth(1).unwrap_or("");
                counting = line.ends_with(&format!("/{lib}")) && !perms.contains('w');
            } else if counting && line.starts_with("Rss:") {
                total += line[4..]
                    .trim()
                    .trim_end_matches(" kB")
                    .parse::<u64>()
                    .expect("an Rss line: a number of kB");
            }
        }
        total
    }

    /// After a window is gone the app lets go of the web engine's code pages; the code still
    /// runs afterwards, its pages coming back at their next use. Tried on the C library, which
    /// every test runs and the binary links.
    #[test]
    fn dropped_code_pages_leave_the_resident_set_and_come_back_on_use() {
        let libc = std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(|l| l.rsplit('/').next())
            .find(|n| n.starts_with("libc.so"))
            .expect("a C library mapped")
            .to_owned();
        let before = resident_code_kib(&libc);
        assert!(before > 0, "{libc}'s code is resident while it runs");
        let dropped = drop_code_pages(|name| name == libc);
        assert!(dropped > 0, "some of {before} KiB dropped");
        assert!(
            dropped <= before * 1024,
            "no more than was resident: {dropped} B of {before} KiB"
        );
        // Code of the C library runs again (allocation, formatting, a read), and is right.
        let text: Vec<String> = (0..10_000).map(|i| format!("{i:05}")).collect();
        assert_eq!(text[9_999], "09999");
        let after = resident_code_kib(&libc);
        assert!(
            after < before,
            "resident {after} KiB after, {before} KiB before: what ran since came back, not all"
        );
        assert_eq!(drop_code_pages(|name| name == "no-such-library.so"), 0);
    }

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
