//! CacheWatch menu-bar app: a thin Tauri 2 shell over the `cachewatch` engine.
//!
//! [`run`] loads the launch options and the config, spawns the engine's monitor, builds the tray
//! icon and its menu, forwards snapshots and alerts to the window, and serves the window's
//! commands ([`commands`]). The shell has no logic of its own: every figure comes from the engine.

#[cfg(test)]
mod bindings;
pub mod commands;
pub mod error;
pub mod forward;
pub mod options;
pub mod plugins;
pub mod reclaim_now;
pub mod setup;
pub mod tray;
pub mod tray_host;
pub mod tray_icon;
pub mod ui_state;
pub mod web_engine;
pub mod window;

pub use error::IpcError;

/// Registers the IPC commands on `builder`: the one list in `src/command_list.rs`, which `build.rs`
/// also turns into the app manifest and the capability; and the state only they use (the
/// window's [`ui_state::UiStore`]).
pub fn with_commands<R: tauri::Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    macro_rules! command_list {
        ($($c:ident),* $(,)?) => { tauri::generate_handler![$(commands::$c),*] };
    }
    builder
        .manage(ui_state::UiStore::default())
        .invoke_handler(include!("command_list.rs"))
}

/// Runs the app until Quit; a start-up failure is printed to stderr and exits with status 1.
pub fn run() {
    if let Err(e) = setup::run() {
        eprintln!("cachewatch-app: {e}");
        std::process::exit(1);
    }
}
