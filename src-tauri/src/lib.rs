//! CacheWatch menu-bar app: a thin Tauri 2 shell over the `cachewatch` engine.
//!
//! [`run`] loads the launch options and the config, spawns the engine's monitor, builds the tray
//! icon and its menu, forwards snapshots and alerts to the window, and serves the window's
//! commands ([`commands`]). The shell has no logic of its own: every figure comes from the engine.

pub mod commands;
pub mod error;
pub mod format;
pub mod forward;
pub mod options;
pub mod plugins;
pub mod reclaim_now;
pub mod settings;
pub mod setup;
pub mod tray;
pub mod window;

pub use error::IpcError;

/// Registers the IPC commands on `builder` (the same list as `build.rs` and the capability).
pub fn with_commands<R: tauri::Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder.invoke_handler(tauri::generate_handler![
        commands::get_snapshot,
        commands::plan_reclaim,
        commands::execute_reclaim,
        commands::set_paused,
        commands::set_threshold,
        commands::rescan,
        commands::get_settings,
        commands::set_settings,
        commands::open_evidence,
    ])
}

/// Runs the app until Quit; a start-up failure is printed to stderr and exits with status 1.
pub fn run() {
    if let Err(e) = setup::run() {
        eprintln!("cachewatch-app: {e}");
        std::process::exit(1);
    }
}
