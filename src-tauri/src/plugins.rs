//! Thin wrappers over the plugins the commands and the tray use, so a missing plugin (as under
//! the mock runtime in tests) is an error or a `None`, never a panic.

use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_autostart::AutoLaunchManager;
use tauri_plugin_opener::OpenerExt;

use crate::error::{ErrorCode, IpcError};

/// Whether the app starts at login; `None` when the autostart plugin is not loaded.
///
/// # Errors
/// `autostart` when the login item cannot be queried.
pub fn is_enabled<R: Runtime>(app: &AppHandle<R>) -> Result<Option<bool>, IpcError> {
    match app.try_state::<AutoLaunchManager>() {
        Some(m) => m.is_enabled().map(Some).map_err(|e| {
            IpcError::new(
                ErrorCode::Autostart,
                format!("cannot read the open-at-login setting: {e}"),
            )
        }),
        None => Ok(None),
    }
}

/// Turns starting at login on or off; does nothing when the autostart plugin is not loaded or
/// the setting already has that value.
///
/// # Errors
/// `autostart` when the login item cannot be changed.
pub fn set_enabled<R: Runtime>(app: &AppHandle<R>, on: bool) -> Result<(), IpcError> {
    let Some(m) = app.try_state::<AutoLaunchManager>() else {
        return Ok(());
    };
    let now = m.is_enabled().unwrap_or(!on);
    let r = match (now, on) {
        (false, true) => m.enable(),
        (true, false) => m.disable(),
        _ => Ok(()),
    };
    r.map_err(|e| {
        IpcError::new(
            ErrorCode::Autostart,
            format!(
                "cannot turn open at login {}: {e}",
                if on { "on" } else { "off" }
            ),
        )
    })
}

/// Opens `url` in the default browser.
///
/// # Errors
/// `opener` when the plugin is missing or the browser cannot be started.
pub fn open_url<R: Runtime>(app: &AppHandle<R>, url: &str) -> Result<(), IpcError> {
    if app.try_state::<tauri_plugin_opener::Opener<R>>().is_none() {
        return Err(IpcError::new(
            ErrorCode::Opener,
            "the opener plugin is not loaded",
        ));
    }
    app.opener()
        .open_url(url, None::<&str>)
        .map_err(|e| IpcError::new(ErrorCode::Opener, format!("cannot open {url:?}: {e}")))
}
