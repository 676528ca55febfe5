//! Start-up: plugins, the monitor, the tray, the forwarding tasks.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cachewatch::config::{self, ConfigError};
use cachewatch::monitor::{self, MonitorError, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::MonitorState;
use tauri::{App, AppHandle, Manager, Runtime};
use tauri_plugin_autostart::MacosLauncher;

use crate::commands::SettingsState;
use crate::options::{LaunchOptions, OptionsError};
use crate::settings::{Settings, SettingsStore};
use crate::tray::Action;

/// Errors starting the app.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Bad command-line arguments or environment.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The config file cannot be read or is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The data dir cannot be created.
    #[error(
        "cannot create the data dir {path:?}: {source}; set CACHEWATCH_DATA_DIR to a writable dir"
    )]
    DataDir {
        /// The dir.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The monitor did not start.
    #[error("cannot start the monitor: {0}")]
    Monitor(#[from] MonitorError),
    /// No roots to watch.
    #[error("no root to watch: the default dirs are missing; pass --root KIND=PATH")]
    NoRoots,
    /// Tauri failed.
    #[error("tauri: {0}")]
    Tauri(#[from] tauri::Error),
}

/// Builds and runs the app.
///
/// # Errors
/// [`StartError`] when the options, the config, the data dir, the monitor or Tauri fail.
pub fn run() -> Result<(), StartError> {
    init_tracing();
    let opts = LaunchOptions::parse(std::env::args().skip(1), |k| std::env::var(k).ok())?;
    let hide_on_blur = opts.hide_on_blur;
    let builder = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Err(e) = crate::window::show(app) {
                tracing::warn!("second launch: {e}");
            }
        }))
        .plugin(tauri_plugin_positioner::init())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_autostart::init(
            MacosLauncher::LaunchAgent,
            None,
        ))
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_dialog::init())
        .on_window_event(move |w, e| crate::window::on_window_event(w, e, hide_on_blur));
    crate::with_commands(builder)
        .setup(move |app| Ok(setup(app, opts)?))
        .run(tauri::generate_context!())?;
    Ok(())
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CACHEWATCH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    if tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init()
        .is_err()
    {
        // a subscriber is already installed (tests); keep it
    }
}

/// The monitor's options from the launch options, the config and the saved settings.
///
/// # Errors
/// [`StartError`] when the config is invalid, no root exists or the data dir cannot be made.
pub fn monitor_options(
    opts: &LaunchOptions,
) -> Result<(MonitorOptions, SettingsState), StartError> {
    let config_path = match &opts.config {
        Some(p) => p.clone(),
        None => config::default_config_path()?,
    };
    let loaded = config::load(&config_path)?;
    let data_dir = match &opts.data_dir {
        Some(p) => p.clone(),
        None => config::default_data_dir()?,
    };
    std::fs::create_dir_all(&data_dir).map_err(|source| StartError::DataDir {
        path: data_dir.clone(),
        source,
    })?;
    let mut roots = opts.roots.clone();
    if roots.is_empty() {
        roots = loaded.roots()?;
    }
    if roots.is_empty() {
        let (found, missing) = cachewatch::roots::default_roots();
        for m in missing {
            tracing::info!("default root left out: {m}");
        }
        roots = found;
    }
    if roots.is_empty() {
        return Err(StartError::NoRoots);
    }
    let seed = Settings::from_config(&loaded.config);
    let store = SettingsStore::in_dir(&data_dir);
    let settings = store.load_or(seed.clone()).unwrap_or_else(|e| {
        tracing::warn!("{e}; using the config's settings");
        seed.clone()
    });
    let mut m = MonitorOptions::new(roots, Arc::new(loaded.catalogue()?));
    m.db_path = Some(data_dir.join(config::DB_FILE_NAME));
    m.debounce = Duration::from_millis(loaded.config.watch.debounce_ms);
    m.sample_interval = Duration::from_secs(loaded.config.monitor.sample_interval_secs.max(1));
    m.threshold = settings.default_threshold();
    m.alerts = settings.alerts;
    m.process_watch = loaded.config.process_watch.clone();
    Ok((m, SettingsState { store, seed }))
}

fn setup<R: Runtime>(app: &mut App<R>, opts: LaunchOptions) -> Result<(), StartError> {
    #[cfg(target_os = "macos")]
    app.set_activation_policy(tauri::ActivationPolicy::Accessory);

    let (mopts, settings) = monitor_options(&opts)?;
    let catalogue = mopts.catalogue.clone();
    let monitor = tauri::async_runtime::block_on(async { monitor::spawn(mopts) })?;
    app.manage(monitor.clone());
    app.manage(catalogue);
    app.manage(settings);

    let handle = app.handle();
    let open_at_login = crate::plugins::is_enabled(handle)
        .ok()
        .flatten()
        .unwrap_or(false);
    let m = monitor.clone();
    crate::tray::build(handle, open_at_login, move |app, action| {
        on_action(app, &m, action)
    })?;
    crate::forward::start(handle, &monitor);
    if opts.show {
        if let Err(e) = crate::window::show(handle) {
            tracing::warn!("{e}");
        }
    }
    Ok(())
}

/// What each menu entry does.
fn on_action<R: Runtime>(app: &AppHandle<R>, monitor: &MonitorHandle, action: Action) {
    match action {
        Action::Open => {
            if let Err(e) = crate::window::show(app) {
                tracing::warn!("{e}");
            }
        }
        Action::ReclaimNow => crate::reclaim_now::start(app, monitor.clone()),
        Action::TogglePause => {
            let m = monitor.clone();
            tauri::async_runtime::spawn(async move {
                let pause = m.snapshot().state != MonitorState::Paused;
                if let Err(e) = m.set_paused(pause).await {
                    tracing::warn!(
                        "cannot {} watching: {e}",
                        if pause { "pause" } else { "resume" }
                    );
                }
            });
        }
        Action::OpenAtLogin => {
            let want = !crate::plugins::is_enabled(app)
                .ok()
                .flatten()
                .unwrap_or(false);
            if let Err(e) = crate::plugins::set_enabled(app, want) {
                tracing::warn!("{}", e.message);
            }
            let now = crate::plugins::is_enabled(app)
                .ok()
                .flatten()
                .unwrap_or(false);
            crate::tray::set_login_checked(app, now);
        }
        Action::Quit => {
            let (app, m) = (app.clone(), monitor.clone());
            tauri::async_runtime::spawn(async move {
                m.shutdown().await;
                app.exit(0);
            });
        }
    }
}
