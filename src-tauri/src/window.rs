//! The popover window: shown under the tray icon, hidden on blur and on close (quit is only in
//! the menu).

use tauri::{AppHandle, Manager, Runtime, WebviewWindow, WindowEvent};
use tauri_plugin_positioner::{Position, WindowExt};

/// The label of the one window (`tauri.conf.json`).
pub const MAIN: &str = "main";

/// Errors showing or hiding the window.
#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    /// `tauri.conf.json` has no window labelled `main`.
    #[error("no window labelled {MAIN:?}: check app.windows in tauri.conf.json")]
    Missing,
    /// A window operation failed.
    #[error("cannot {op} the window: {source}")]
    Op {
        /// What was attempted (`show`, `hide`, `focus`, ...).
        op: &'static str,
        /// Tauri's error.
        source: tauri::Error,
    },
}

fn main_window<R: Runtime>(app: &AppHandle<R>) -> Result<WebviewWindow<R>, WindowError> {
    app.get_webview_window(MAIN).ok_or(WindowError::Missing)
}

fn op<T>(op: &'static str, r: tauri::Result<T>) -> Result<T, WindowError> {
    r.map_err(|source| WindowError::Op { op, source })
}

/// Shows the window and focuses it: under the tray icon when its position is known (after the
/// first tray event, see `tauri_plugin_positioner::on_tray_event`), else centred on the screen.
///
/// # Errors
/// [`WindowError`] when the window is missing or the platform refuses an operation.
pub fn show<R: Runtime>(app: &AppHandle<R>) -> Result<(), WindowError> {
    let w = main_window(app)?;
    let under_tray = w.move_window_constrained(Position::TrayCenter).is_ok();
    op("show", w.show())?;
    if !under_tray {
        // No tray position known (Linux indicators report none). `center()` before the first
        // show put the top-left at the screen centre: place it now that it has its size.
        place_on_screen(&w)?;
    }
    op("unminimize", w.unminimize())?;
    op("focus", w.set_focus())
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
        // Not mapped yet (GTK sizes the window asynchronously): the size tauri.conf.json gives.
        let configured = w
            .app_handle()
            .config()
            .app
            .windows
            .iter()
            .find(|c| c.label == MAIN)
            .map_or((380.0, 560.0), |c| (c.width, c.height));
        size =
            tauri::LogicalSize::new(configured.0, configured.1).to_physical(monitor.scale_factor());
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

/// Turns the popover of `tauri.conf.json` into a normal window ([`Mode::Normal`]).
///
/// # Errors
/// [`WindowError`] when the window is missing or the platform refuses an operation.
pub fn make_normal<R: Runtime>(app: &AppHandle<R>) -> Result<(), WindowError> {
    let w = main_window(app)?;
    op("decorate", w.set_decorations(true))?;
    op("unpin", w.set_always_on_top(false))?;
    op("list", w.set_skip_taskbar(false))
}

/// Hides the window.
///
/// # Errors
/// [`WindowError`] when the window is missing or cannot be hidden.
pub fn hide<R: Runtime>(app: &AppHandle<R>) -> Result<(), WindowError> {
    op("hide", main_window(app)?.hide())
}

/// Shows the window when hidden, hides it when shown (a left click on the tray icon).
///
/// # Errors
/// [`WindowError`] as for [`show`] and [`hide`].
pub fn toggle<R: Runtime>(app: &AppHandle<R>) -> Result<(), WindowError> {
    if op("query", main_window(app)?.is_visible())? {
        hide(app)
    } else {
        show(app)
    }
}

/// What a window event asks of the popover: hide on blur (unless `hide_on_blur` is off, for the
/// end-to-end test) and on a close request, which is refused so only Quit ends the app. A
/// [`Mode::Normal`] window is left alone (closing it quits).
pub fn on_window_event<R: Runtime>(window: &tauri::Window<R>, event: &WindowEvent, mode: Mode) {
    let Mode::Popover { hide_on_blur } = mode else {
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
        if let Err(e) = window.hide() {
            tracing::warn!("cannot hide the window: {e}");
        }
    }
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

    /// Issue 12 §3: the first `--show` put the window's top-left at the screen centre, the
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
