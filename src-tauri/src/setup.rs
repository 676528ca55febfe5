//! Start-up: plugins, the monitor, the tray, the forwarding tasks.

use cachewatch::api::monitor::{self, MonitorError, MonitorHandle, MonitorOptions};
use cachewatch::api::{ApiError, Locations};
use cachewatch::dto::MonitorState;
use tauri::{App, AppHandle, Manager, Runtime};
use tauri_plugin_autostart::MacosLauncher;

use crate::commands::{HistoryState, SettingsState};
use crate::options::LaunchOptions;
use crate::tray::Action;

/// Errors starting the app.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The config, a root or the data dir cannot be used (the engine API says which and why).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The monitor did not start.
    #[error("cannot start the monitor: {0}")]
    Monitor(#[from] MonitorError),
    /// Tauri failed.
    #[error("tauri: {0}")]
    Tauri(#[from] tauri::Error),
}

/// Builds and runs the app.
///
/// # Errors
/// [`StartError`] when the options, the config, the data dir, the monitor or Tauri fail.
pub fn run() -> Result<(), StartError> {
    crate::web_engine::draw_without_gpu();
    init_tracing();
    let opts = LaunchOptions::from_args(std::env::args()).unwrap_or_else(|e| e.exit());
    let mode = crate::window::Mode::choose(crate::tray_host::present(), opts.hide_on_blur());
    tracing::info!(?mode, "window mode");
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
        .on_window_event(crate::window::on_window_event);
    let app = crate::with_commands(builder)
        .setup(move |app| Ok(setup(app, opts, mode)?))
        .build(tauri::generate_context!())?;
    app.run(|app, event| {
        // The popover's webview is destroyed a while after it closes; the app lives on in the
        // tray. Quit passes an exit code; the last window going passes none.
        if let tauri::RunEvent::ExitRequested {
            code: None, api, ..
        } = event
        {
            if crate::window::keeps_running_without_windows(app) {
                api.prevent_exit();
            }
        }
    });
    Ok(())
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CACHEWATCH_LOG")
        // notify logs every watch it fails to remove at INFO (one per deleted dir): warnings only.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,notify=warn"));
    if tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init()
        .is_err()
    {
        // a subscriber is already installed (tests); keep it
    }
}

/// The monitor's options and the settings' home from the launch options, through the engine API
/// (the same resolution as the CLI's), never failing: what cannot be used (a missing root, a bad
/// config, a data dir that cannot be made) is left out and said in the snapshot's errors, so an
/// app started at login shows the problem in its window instead of exiting with a stderr line.
pub fn monitor_options(opts: &LaunchOptions) -> (MonitorOptions, SettingsState) {
    let start = cachewatch::api::start::lenient_monitor_options(
        &Locations {
            config: opts.config.clone(),
            data_dir: opts.data_dir.clone(),
        },
        &opts.roots,
    );
    (
        start.options,
        SettingsState {
            config_path: start.config_path,
        },
    )
}

fn setup<R: Runtime>(
    app: &mut App<R>,
    opts: LaunchOptions,
    mode: crate::window::Mode,
) -> Result<(), StartError> {
    // A menu-bar app: no Dock icon, no app menu.
    #[cfg(target_os = "macos")]
    app.set_activation_policy(tauri::ActivationPolicy::Accessory);
    crate::window::manage(&*app, mode, opts.window_grace());

    let (mopts, settings) = monitor_options(&opts);
    let catalogue = mopts.catalogue.clone();
    app.manage(HistoryState {
        db_path: mopts.db_path.clone(),
    });
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
    // Without a tray host nothing else would ever show the window. Else it is built only when
    // the user opens it.
    if opts.show || mode == crate::window::Mode::Normal {
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
