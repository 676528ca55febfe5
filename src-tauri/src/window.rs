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
    if w.move_window_constrained(Position::TrayCenter).is_err() {
        // no tray position known (Linux indicators report none): centre it instead
        op("center", w.center())?;
    }
    op("show", w.show())?;
    op("unminimize", w.unminimize())?;
    op("focus", w.set_focus())
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
/// end-to-end test) and on a close request, which is refused so only Quit ends the app.
pub fn on_window_event<R: Runtime>(
    window: &tauri::Window<R>,
    event: &WindowEvent,
    hide_on_blur: bool,
) {
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
