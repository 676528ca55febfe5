//! The IPC commands the window calls. Each is an adapter: take the state, call one engine (or
//! plugin) function, map the result. Errors cross IPC as [`IpcError`] `{code, message}`.
//!
//! JavaScript passes camelCase argument names (`thresholdSecs`, `planId`); Tauri maps them to the
//! snake_case parameters here.

use std::sync::Arc;
use std::time::Duration;

use cachewatch::catalogue::Catalogue;
use cachewatch::monitor::MonitorHandle;
use cachewatch::reclaim::{ReclaimPlan, ReclaimReport};
use cachewatch::snapshot::Snapshot;
use tauri::{AppHandle, Runtime, State};

use crate::error::IpcError;
use crate::settings::{Settings, SettingsStore};

/// The settings file and the values it starts from (managed state).
#[derive(Debug, Clone)]
pub struct SettingsState {
    /// Where the settings are saved.
    pub store: SettingsStore,
    /// The settings before any were saved (from the config file).
    pub seed: Settings,
}

/// The latest snapshot.
///
/// # Errors
/// None today; the `Result` keeps the IPC shape uniform.
#[tauri::command]
pub fn get_snapshot(monitor: State<'_, MonitorHandle>) -> Result<Snapshot, IpcError> {
    Ok(Snapshot::clone(&monitor.snapshot()))
}

/// A reclaim plan for `producers` (empty: every auto producer) older than `threshold_secs`.
///
/// # Errors
/// `unknown-producer`, `stopped`, `job-failed`.
#[tauri::command]
pub async fn plan_reclaim(
    monitor: State<'_, MonitorHandle>,
    producers: Vec<String>,
    threshold_secs: u64,
) -> Result<ReclaimPlan, IpcError> {
    Ok(monitor
        .plan_reclaim(producers, Duration::from_secs(threshold_secs))
        .await?)
}

/// Executes the kept plan `plan_id`; the engine re-derives and re-checks every item.
///
/// # Errors
/// `unknown-plan`, `stopped`, `job-failed`.
#[tauri::command]
pub async fn execute_reclaim(
    monitor: State<'_, MonitorHandle>,
    plan_id: String,
) -> Result<ReclaimReport, IpcError> {
    Ok(monitor.execute_reclaim(plan_id).await?)
}

/// Pauses or resumes watching.
///
/// # Errors
/// `stopped`.
#[tauri::command]
pub async fn set_paused(monitor: State<'_, MonitorHandle>, paused: bool) -> Result<(), IpcError> {
    Ok(monitor.set_paused(paused).await?)
}

/// Sets the threshold the snapshot's reclaimable figures use, seconds.
///
/// # Errors
/// `stopped`.
#[tauri::command]
pub async fn set_threshold(
    monitor: State<'_, MonitorHandle>,
    threshold_secs: u64,
) -> Result<(), IpcError> {
    Ok(monitor
        .set_threshold(Duration::from_secs(threshold_secs))
        .await?)
}

/// Rescans every root; returns when the new snapshot is published.
///
/// # Errors
/// `stopped`, `job-failed`.
#[tauri::command]
pub async fn rescan(monitor: State<'_, MonitorHandle>) -> Result<(), IpcError> {
    Ok(monitor.rescan().await?)
}

/// The settings, with "open at login" as the autostart plugin reports it.
///
/// # Errors
/// `settings` when the file cannot be read, `autostart` when the login item cannot be queried.
#[tauri::command]
pub fn get_settings<R: Runtime>(
    app: AppHandle<R>,
    settings: State<'_, SettingsState>,
) -> Result<Settings, IpcError> {
    let saved = settings.store.load_or(settings.seed.clone())?;
    Ok(Settings {
        open_at_login: crate::plugins::is_enabled(&app)?.unwrap_or(saved.open_at_login),
        ..saved
    })
}

/// Saves the settings, applies the default threshold to the monitor and the login item to the
/// system. Alert limits take effect at the next start.
///
/// # Errors
/// `settings`, `autostart`, `stopped`.
#[tauri::command]
pub async fn set_settings<R: Runtime>(
    app: AppHandle<R>,
    monitor: State<'_, MonitorHandle>,
    settings_state: State<'_, SettingsState>,
    settings: Settings,
) -> Result<(), IpcError> {
    settings_state.store.save(&settings)?;
    crate::plugins::set_enabled(&app, settings.open_at_login)?;
    Ok(monitor.set_threshold(settings.default_threshold()).await?)
}

/// Opens an upstream report in the browser: only an `https://` URL that a catalogue rule lists
/// as evidence.
///
/// # Errors
/// `not-evidence` for any other URL, `opener` when the browser cannot be started.
#[tauri::command]
pub fn open_evidence<R: Runtime>(
    app: AppHandle<R>,
    catalogue: State<'_, Arc<Catalogue>>,
    url: String,
) -> Result<(), IpcError> {
    if !is_evidence(&catalogue, &url) {
        return Err(IpcError::new(
            "not-evidence",
            format!(
                "refusing to open {url:?}: only the https evidence links of the catalogue open"
            ),
        ));
    }
    crate::plugins::open_url(&app, &url)
}

/// True when `url` is an `https://` URL listed as evidence by a rule of `catalogue`.
pub fn is_evidence(catalogue: &Catalogue, url: &str) -> bool {
    url.starts_with("https://")
        && catalogue
            .rules()
            .iter()
            .any(|r| r.evidence.iter().any(|e| e == url))
}
