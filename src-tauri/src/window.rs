//! The popover window, which exists only while it is open: built (with its webview) when the
//! user opens it, hidden on blur and on close, and destroyed [`Windows::grace`] after that unless
//! it is opened again meanwhile, so no web engine process lives while the app rests in the tray.
//! Everything it shows comes from the engine's snapshot and the shell's `UiStore`, which a new
//! window reads at load. Where no tray host exists it is a normal window, and closing it quits.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cachewatch::api::monitor::MonitorHandle;

use tauri::{
    AppHandle, Manager, Runtime, WebviewUrl, WebviewWindow, WebviewWindowBuilder, WindowEvent,
};
use tauri_plugin_positioner::{Position, WindowExt};

use crate::ui_state::UiStore;

/// The label of the one window.
pub const MAIN: &str = "main";

/// Its size, logical pixels.
const WIDTH: f64 = 380.0;
const HEIGHT: f64 = 560.0;

/// How long a closed window is kept (hidden) before it is destroyed, unless the launch options
/// say otherwise: a quick reopen is then instant.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// Errors showing or hiding the window.
#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    /// The window could not be built.
    #[error("cannot open the window: {0}")]
    Build(tauri::Error),
    /// A window operation failed.
    #[error("cannot {op} the window: {source}")]
    Op {
        /// What was attempted (`show`, `hide`, `focus`, ...).
        op: &'static str,
        /// Tauri's error.
        source: tauri::Error,
    },
}

/// How the window behaves and how long a closed one is kept (managed state, see [`manage`]).
#[derive(Debug)]
pub struct Windows {
    /// Popover or normal window.
    pub mode: Mode,
    /// How long a closed popover is kept before its webview is destroyed.
    pub grace: Duration,
    /// Bumped by every show and hide: a pending destroy runs only if nothing happened since.
    generation: AtomicU64,
    /// When the user last asked for the window, until the page says its content is shown.
    opened_at: Mutex<Option<Instant>>,
    /// The thread [`manage`] was called on: the main one, where windows are built.
    main_thread: std::thread::ThreadId,
    /// The web engine's network processes the app ended, until a new window was built after
    /// they were gone (see [`crate::web_engine::end_network_process`]).
    ended: Mutex<crate::web_engine::Ended>,
    /// Whether the last destroyed window's web view was freed (asked once it is gone).
    freed: Mutex<crate::web_engine::Freed>,
}

/// Manages [`Windows`] on `app`: call once at start, on the main thread, before any window is
/// opened.
pub fn manage<R: Runtime, M: Manager<R>>(app: &M, mode: Mode, grace: Duration) {
    app.manage(Windows {
        mode,
        grace,
        generation: AtomicU64::new(0),
        opened_at: Mutex::new(None),
        main_thread: std::thread::current().id(),
        ended: Mutex::new(crate::web_engine::Ended::default()),
        freed: Mutex::new(crate::web_engine::Freed::default()),
    });
}

/// The managed [`Windows`]; an app that never called [`manage`] (a test's) gets a normal window.
fn windows<R: Runtime>(app: &AppHandle<R>) -> tauri::State<'_, Windows> {
    if app.try_state::<Windows>().is_none() {
        manage(app, Mode::Normal, DEFAULT_GRACE);
    }
    app.state::<Windows>()
}

fn op<T>(op: &'static str, r: tauri::Result<T>) -> Result<T, WindowError> {
    r.map_err(|source| WindowError::Op { op, source })
}

/// The window when it exists (open, or closed within its grace).
pub fn get<R: Runtime>(app: &AppHandle<R>) -> Option<WebviewWindow<R>> {
    app.get_webview_window(MAIN)
}

/// The script a new page runs before its own: the snapshot and the `UiStore`'s state as they are
/// now, as `window.__CACHEWATCH_INITIAL__ = {snapshot, ui}`, so its first paint has its content
/// without waiting for a round trip (it asks again once it listens, for what changed since).
/// Empty when the app manages no monitor (a test's).
pub fn initial_script<R: Runtime>(app: &AppHandle<R>) -> String {
    let Some(monitor) = app.try_state::<MonitorHandle>() else {
        return String::new();
    };
    let ui = app
        .try_state::<UiStore>()
        .map(|s| s.get())
        .unwrap_or_default();
    let snapshot = monitor.snapshot();
    let json = serde_json::json!({ "snapshot": &*snapshot, "ui": ui });
    // JSON is a JavaScript expression; `</` and the line separators need no escape in a script
    // that is not inside HTML.
    format!("window.__CACHEWATCH_INITIAL__ = {json};")
}

/// Builds the window, hidden: a popover (no decorations, on top, not in the task bar) or a
/// normal window, per [`Windows::mode`].
fn build<R: Runtime>(app: &AppHandle<R>) -> Result<WebviewWindow<R>, WindowError> {
    let normal = windows(app).mode == Mode::Normal;
    let script = initial_script(app);
    tracing::debug!(bytes = script.len(), "the page's initial script");
    WebviewWindowBuilder::new(app, MAIN, WebviewUrl::App("index.html".into()))
        .initialization_script(script)
        .title("CacheWatch")
        .inner_size(WIDTH, HEIGHT)
        .resizable(false)
        .visible(false)
        .decorations(normal)
        .skip_taskbar(!normal)
        .always_on_top(!normal)
        .build()
        .map_err(WindowError::Build)
}

/// Shows the window, building it when it does not exist, and focuses it: under the tray icon
/// when its position is known (after the first tray event, see
/// `tauri_plugin_positioner::on_tray_event`), else centred on the screen. A pending destroy is
/// cancelled at once; the window itself is shown on the main thread (a notification click or a
/// second launch calls this from another thread), where the destroy and the end of the network
/// process run too, so each happens wholly before or wholly after it.
///
/// # Errors
/// [`WindowError`] when the window cannot be built or the platform refuses an operation. Called
/// from another thread, only when the main thread cannot be reached: what then fails there is
/// logged.
pub fn show<R: Runtime>(app: &AppHandle<R>) -> Result<(), WindowError> {
    let state = windows(app);
    state.generation.fetch_add(1, Ordering::SeqCst);
    let requested = Instant::now();
    if std::thread::current().id() == state.main_thread {
        return show_on_main_thread(app, requested);
    }
    let a = app.clone();
    op(
        "reach the main thread to show",
        app.run_on_main_thread(move || {
            if let Err(e) = show_on_main_thread(&a, requested) {
                tracing::warn!("{e}");
            }
        }),
    )
}

/// [`show`]'s work, on the main thread. A window is not built while a network process the app
/// ended may still be going (WebKit would hand the new page a connection to it): the build waits,
/// off the main thread, until it is gone.
fn show_on_main_thread<R: Runtime>(
    app: &AppHandle<R>,
    requested: Instant,
) -> Result<(), WindowError> {
    let state = windows(app);
    let w = match get(app) {
        Some(w) => w,
        None => {
            *state.opened_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(requested);
            if let Some(wait) = state
                .ended
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .unsettled()
            {
                let app = app.clone();
                tauri::async_runtime::spawn_blocking(move || {
                    wait.until_gone();
                    let main = app.clone();
                    let shown = app.run_on_main_thread(move || {
                        if let Err(e) = show_on_main_thread(&main, requested) {
                            tracing::warn!("{e}");
                        }
                    });
                    if let Err(e) = shown {
                        tracing::warn!("cannot reach the main thread to show the window: {e}");
                    }
                });
                return Ok(());
            }
            let t = Instant::now();
            let w = build(app)?;
            tracing::debug!(ms = t.elapsed().as_millis() as u64, "window built");
            w
        }
    };
    let under_tray = w.move_window_constrained(Position::TrayCenter).is_ok();
    op("show", w.show())?;
    if !under_tray {
        // No tray position known (Linux indicators report none): centre it now that it has its
        // size, wholly on screen.
        place_on_screen(&w)?;
    }
    op("unminimize", w.unminimize())?;
    op("focus", w.set_focus())
}

/// Hides the window (when it exists) and destroys it after the grace unless it is shown again
/// meanwhile.
///
/// # Errors
/// [`WindowError`] when the window cannot be hidden.
pub fn hide<R: Runtime>(app: &AppHandle<R>) -> Result<(), WindowError> {
    let Some(w) = get(app) else {
        return Ok(());
    };
    op("hide", w.hide())?;
    destroy_later(app);
    Ok(())
}

/// Destroys the window after [`Windows::grace`] if no show or hide came meanwhile and it is
/// still hidden.
fn destroy_later<R: Runtime>(app: &AppHandle<R>) {
    let state = windows(app);
    let generation = state.generation.fetch_add(1, Ordering::SeqCst) + 1;
    let grace = state.grace;
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(grace).await;
        if windows(&app).generation.load(Ordering::SeqCst) != generation {
            return; // shown (or hidden again) since: that one decides
        }
        let Some(w) = get(&app) else { return };
        if w.is_visible().unwrap_or(false) {
            return;
        }
        tracing::debug!("destroying the closed window");
        // Runs on the main thread before the destroy, which is queued behind it.
        let a = app.clone();
        let let_go = w.with_webview(move |view| {
            *windows(&a).freed.lock().unwrap_or_else(|e| e.into_inner()) =
                crate::web_engine::let_go_of_web_view(view);
        });
        if let Err(e) = let_go {
            tracing::warn!("cannot reach the closed window's web view: {e}");
        }
        if let Err(e) = w.destroy() {
            tracing::warn!("cannot destroy the closed window: {e}");
            return;
        }
        // The web process ends with its page; the network process would live until the app quits
        // (see `crate::web_engine::end_network_process`). Give the page a moment to go, then end
        // it, on the main thread, where a new window would be built: none can start in between.
        tokio::time::sleep(NETWORK_PROCESS_DELAY).await;
        let ended = on_main_while_closed(&app, generation, "end the network process", |app| {
            let freed =
                std::mem::take(&mut *windows(app).freed.lock().unwrap_or_else(|e| e.into_inner()));
            match freed.freed() {
                Some(false) => tracing::warn!("the closed window's web view is still alive"),
                Some(true) => tracing::debug!("the closed window's web view is freed"),
                None => {}
            }
            let ended = crate::web_engine::end_network_process();
            windows(app)
                .ended
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(ended);
            // What WebKit's UI side freed since the window's own `Destroyed` (the page's proxies
            // go when its process has ended): back to the OS too.
            cachewatch::api::platform::release_free_memory();
        });
        if !ended {
            return;
        }
        // WebKit's UI side still runs a little once its processes are gone (it learns of their
        // exit on the main loop); after that its code is not needed until the next window.
        tokio::time::sleep(ENGINE_CODE_DELAY).await;
        let released =
            on_main_while_closed(&app, generation, "let go of the engine's code", |_| {
                let bytes = crate::web_engine::release_engine_code();
                tracing::debug!(bytes, "let go of the web engine's code pages");
            });
        if !released {
            return;
        }
        // JavaScriptCore's timers in the app (the garbage collector of the values the page's
        // scripts returned) still run for a while after the last window, faulting back some of
        // its code and freeing its heap: once they are done, both are handed back again.
        tokio::time::sleep(ENGINE_SETTLE_DELAY).await;
        on_main_while_closed(&app, generation, "let go of the engine again", |_| {
            cachewatch::api::platform::release_free_memory();
            let bytes = crate::web_engine::release_engine_code();
            tracing::debug!(bytes, "let go of the web engine's code pages again");
        });
    });
}

/// Runs `f` on the main thread, where windows are built, if no show or hide came since
/// `generation` and no window exists then. False (logged, as failing to `what`) when the main
/// thread cannot be reached.
fn on_main_while_closed<R: Runtime>(
    app: &AppHandle<R>,
    generation: u64,
    what: &'static str,
    f: impl FnOnce(&AppHandle<R>) + Send + 'static,
) -> bool {
    let main = app.clone();
    let res = app.run_on_main_thread(move || {
        if windows(&main).generation.load(Ordering::SeqCst) == generation && get(&main).is_none() {
            f(&main);
        }
    });
    if let Err(e) = res {
        tracing::warn!("cannot {what}: {e}");
        return false;
    }
    true
}

/// How long after the window is destroyed its network process is ended.
const NETWORK_PROCESS_DELAY: Duration = Duration::from_secs(1);
/// How long after that the web engine's code pages are let go of
/// ([`crate::web_engine::release_engine_code`]).
const ENGINE_CODE_DELAY: Duration = Duration::from_secs(2);
/// How long after that the free heap and the engine's code pages are handed back once more, when
/// the garbage collector of the app's JavaScriptCore has run.
const ENGINE_SETTLE_DELAY: Duration = Duration::from_secs(30);

/// The page says its first content is on screen (`window_shown`), `page_ms` after its navigation
/// started, which was at `navigation_start_ms` (Unix ms, the page's `performance.timeOrigin`): how
/// long that took since the user asked for the window, and how much of it went before the page's
/// navigation (building the webview, the web engine launching its web process), logged once per
/// built window (the app benchmark reads it).
pub fn shown<R: Runtime>(app: &AppHandle<R>, page_ms: f64, navigation_start_ms: f64) {
    let opened = windows(app)
        .opened_at
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(t) = opened {
        // The request on the page's clock (Unix ms): now, less the time since.
        let requested_ms = unix_ms(SystemTime::now()) - t.elapsed().as_secs_f64() * 1e3;
        tracing::info!(
            ms = t.elapsed().as_millis() as u64,
            page_ms = page_ms.round() as u64,
            launch_ms = (navigation_start_ms - requested_ms).round().max(0.0) as u64,
            "window content shown after the open request"
        );
    }
}

/// `t` as milliseconds since the Unix epoch (0 before it).
fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Shows the window when it is not visible, hides it when it is (a left click on the tray icon).
///
/// # Errors
/// [`WindowError`] as for [`show`] and [`hide`].
pub fn toggle<R: Runtime>(app: &AppHandle<R>) -> Result<(), WindowError> {
    match get(app) {
        Some(w) if op("query", w.is_visible())? => hide(app),
        _ => show(app),
    }
}

/// A rectangle in physical pixels: position and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left edge.
    pub x: i32,
    /// Top edge.
    pub y: i32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// Where a window of `size` goes on `screen`: centred, shrunk to the screen where larger, so
/// the whole window (the Reclaim bar at its bottom too) is on screen.
pub fn centred_on(screen: Rect, size: (u32, u32)) -> Rect {
    let width = size.0.min(screen.width);
    let height = size.1.min(screen.height);
    Rect {
        x: screen.x + ((screen.width - width) / 2) as i32,
        y: screen.y + ((screen.height - height) / 2) as i32,
        width,
        height,
    }
}

fn place_on_screen<R: Runtime>(w: &WebviewWindow<R>) -> Result<(), WindowError> {
    let monitor = match op("query", w.current_monitor())? {
        Some(m) => Some(m),
        None => op("query", w.primary_monitor())?,
    };
    let Some(monitor) = monitor else {
        return op("center", w.center());
    };
    let area = monitor.work_area();
    let screen = Rect {
        x: area.position.x,
        y: area.position.y,
        width: area.size.width,
        height: area.size.height,
    };
    let mut size = op("query", w.outer_size())?;
    if size.width == 0 || size.height == 0 {
        // Not mapped yet (GTK sizes the window asynchronously): the size it is built with.
        size = tauri::LogicalSize::new(WIDTH, HEIGHT).to_physical(monitor.scale_factor());
    }
    let r = centred_on(screen, (size.width, size.height));
    if (r.width, r.height) != (size.width, size.height) {
        let inner = op("query", w.inner_size())?;
        let dw = size.width.saturating_sub(inner.width);
        let dh = size.height.saturating_sub(inner.height);
        op(
            "resize",
            w.set_size(tauri::PhysicalSize::new(
                r.width.saturating_sub(dw),
                r.height.saturating_sub(dh),
            )),
        )?;
    }
    op(
        "move",
        w.set_position(tauri::PhysicalPosition::new(r.x, r.y)),
    )
}

/// How the window behaves: a popover under the tray icon, or a normal window where no tray host
/// shows the icon (there would be no way back to a hidden popover).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Under the icon, no decorations; hidden on a close request and (unless off) on blur.
    Popover {
        /// Hide when it loses the focus (`--no-hide-on-blur` turns it off for tests).
        hide_on_blur: bool,
    },
    /// Decorated, in the task bar, never hidden by the app; closing it quits.
    Normal,
}

impl Mode {
    /// [`Mode::Popover`] where a tray host shows the icon, else [`Mode::Normal`].
    pub fn choose(tray_host: bool, hide_on_blur: bool) -> Mode {
        if tray_host {
            Mode::Popover { hide_on_blur }
        } else {
            Mode::Normal
        }
    }
}

/// What a window event asks: a popover is hidden on blur (unless `hide_on_blur` is off, for the
/// end-to-end test) and on a close request, which is refused so only Quit ends the app; either way
/// it is destroyed after the grace. A destroyed window hands its memory back. A [`Mode::Normal`]
/// window is left to close (closing it quits).
pub fn on_window_event<R: Runtime>(window: &tauri::Window<R>, event: &WindowEvent) {
    if let WindowEvent::Destroyed = event {
        // The platform facade's one call: malloc_zone_pressure_relief on macOS, malloc_trim
        // with glibc.
        cachewatch::api::platform::release_free_memory();
        tracing::debug!("the window is gone; free heap given back");
        return;
    }
    let app = window.app_handle();
    let Mode::Popover { hide_on_blur } = windows(app).mode else {
        return;
    };
    let hide_it = match event {
        WindowEvent::CloseRequested { api, .. } => {
            api.prevent_close();
            true
        }
        WindowEvent::Focused(false) => hide_on_blur,
        _ => false,
    };
    if hide_it {
        if let Err(e) = hide(app) {
            tracing::warn!("{e}");
        }
    }
}

/// Whether the app goes on when its last window is gone: a popover app lives in the tray (only
/// Quit, which passes an exit code, ends it); a normal window's app ends with its window.
pub fn keeps_running_without_windows<R: Runtime>(app: &AppHandle<R>) -> bool {
    matches!(windows(app).mode, Mode::Popover { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCREEN: Rect = Rect {
        x: 0,
        y: 0,
        width: 1280,
        height: 800,
    };

    /// The first `--show` put the window's top-left at the screen centre, the
    /// Reclaim bar off-screen.
    #[test]
    fn the_window_is_centred_and_wholly_on_screen() {
        assert_eq!(
            centred_on(SCREEN, (380, 560)),
            Rect {
                x: 450,
                y: 120,
                width: 380,
                height: 560
            }
        );
        let small = Rect {
            x: 100,
            y: 20,
            width: 800,
            height: 500,
        };
        assert_eq!(
            centred_on(small, (380, 560)),
            Rect {
                x: 310,
                y: 20,
                width: 380,
                height: 500
            }
        );
    }

    #[test]
    fn without_a_tray_host_the_window_is_a_normal_one() {
        assert_eq!(Mode::choose(false, true), Mode::Normal);
        assert_eq!(
            Mode::choose(true, true),
            Mode::Popover { hide_on_blur: true }
        );
        assert_eq!(
            Mode::choose(true, false),
            Mode::Popover {
                hide_on_blur: false
            }
        );
    }
}
