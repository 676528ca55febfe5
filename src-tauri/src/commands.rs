//! The IPC commands the window calls. Each is an adapter: take the state, call one engine (or
//! plugin) function, map the result. Errors cross IPC as [`IpcError`] `{code, message}`.
//!
//! JavaScript passes camelCase argument names (`thresholdSecs`, `planId`); Tauri maps them to the
//! snake_case parameters here.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::api;
use cachewatch::api::catalogue::Catalogue;
use cachewatch::api::groups::{GroupRuleAdded, GroupRulePreview};
use cachewatch::api::history::{GroupHistory, ProducerHistory, ReclaimHistory};
use cachewatch::api::monitor::MonitorHandle;
use cachewatch::api::monitor::Snapshot;
use cachewatch::api::report::ReportDraft;
use cachewatch::dto::{ReclaimEstimate, ReclaimPreview, ReclaimResult};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Emitter, Manager, Runtime, State};

use crate::error::{ErrorCode, IpcError};
use crate::ui_state::{ReclaimJob, UiState, UiStore, UiView};

/// Where the settings live: the config file (managed state). `None` when there is no home dir to
/// find it and no `--config` was given.
#[derive(Debug, Clone)]
pub struct SettingsState {
    /// The config file the settings are read from and saved into.
    pub config_path: Option<PathBuf>,
}

impl SettingsState {
    fn path(&self) -> Result<&Path, IpcError> {
        self.config_path.as_deref().ok_or_else(|| {
            IpcError::new(
                ErrorCode::Settings,
                "no config file to keep the settings in: start the app with --config PATH or CACHEWATCH_CONFIG",
            )
        })
    }
}

/// Where the history database is (managed state): `None` when there is no data dir.
#[derive(Debug, Clone)]
pub struct HistoryState {
    /// The database file the monitor writes.
    pub db_path: Option<PathBuf>,
}

/// The settings the window shows and edits: the config file's `[reclaim] older_than` and
/// `[alerts]`, and whether the app starts at login (the autostart plugin's, not the file's).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The settings kept in the config file.
    #[serde(flatten)]
    pub config: api::settings::ConfigSettings,
    /// Whether the app starts at login.
    #[serde(default)]
    pub open_at_login: bool,
    /// Each size setting as text, by its path (`alerts.total_limit_bytes`): from
    /// [`get_settings`] its exact value (`50 MiB`, empty when off), to [`set_settings`] what the
    /// user typed, which the engine reads (the number beside it in `config` is then ignored).
    #[serde(default)]
    pub sizes: std::collections::BTreeMap<String, String>,
}

/// The latest snapshot.
///
/// # Errors
/// None today; the `Result` keeps the IPC shape uniform.
#[tauri::command]
pub fn get_snapshot(monitor: State<'_, MonitorHandle>) -> Result<Snapshot, IpcError> {
    Ok(Snapshot::clone(&monitor.snapshot()))
}

/// A reclaim plan for `producers` (empty: every auto producer) older than `threshold_secs`, as
/// its bounded preview (the engine keeps the plan by its id).
///
/// # Errors
/// `unknown-producer`, `stopped`, `job-failed`.
#[tauri::command]
pub async fn plan_reclaim(
    monitor: State<'_, MonitorHandle>,
    ui: State<'_, UiStore>,
    producers: Vec<String>,
    threshold_secs: u64,
) -> Result<ReclaimPreview, IpcError> {
    let plan = monitor
        .plan_reclaim(producers, Duration::from_secs(threshold_secs))
        .await?;
    ui.planned(&plan);
    Ok(plan)
}

/// What a reclaim of `producers` (empty: every auto producer) older than `threshold_secs` would
/// take now, from the engine's age histograms (no plan made): for the threshold control.
///
/// # Errors
/// `unknown-producer`, `stopped`.
#[tauri::command]
pub async fn estimate_reclaim(
    monitor: State<'_, MonitorHandle>,
    producers: Vec<String>,
    threshold_secs: u64,
) -> Result<ReclaimEstimate, IpcError> {
    Ok(monitor
        .estimate_reclaim(producers, Duration::from_secs(threshold_secs))
        .await?)
}

/// Executes the kept plan `plan_id`; the engine re-derives and re-checks every item. The run and
/// its outcome are kept in the [`UiStore`] (and sent as `reclaim-job`), so a window closed
/// meanwhile shows them when it opens again.
///
/// # Errors
/// `unknown-plan`, `stopped`, `job-failed`.
#[tauri::command]
pub async fn execute_reclaim<R: Runtime>(
    app: AppHandle<R>,
    monitor: State<'_, MonitorHandle>,
    ui: State<'_, UiStore>,
    plan_id: String,
) -> Result<ReclaimResult, IpcError> {
    emit_job(&app, &ui.executing(&plan_id));
    let outcome = monitor
        .execute_reclaim(plan_id.clone())
        .await
        .map_err(IpcError::from);
    emit_job(&app, &ui.executed(&plan_id, &outcome));
    outcome
}

fn emit_job<R: Runtime>(app: &AppHandle<R>, job: &ReclaimJob) {
    if app.get_webview_window(crate::window::MAIN).is_some() {
        if let Err(e) = app.emit_to(crate::window::MAIN, "reclaim-job", job) {
            tracing::warn!("cannot emit reclaim-job: {e}");
        }
    }
}

/// What the window was showing (selected producer, expanded rows, threshold) and the reclaim it
/// started, for a new window to restore at load.
///
/// # Errors
/// None; the `Result` keeps the IPC shape uniform.
#[tauri::command]
pub fn get_ui_state(ui: State<'_, UiStore>) -> Result<UiState, IpcError> {
    Ok(ui.get())
}

/// Keeps the window's view (selected producer, expanded rows, threshold being edited) for the
/// next window.
///
/// # Errors
/// None; the `Result` keeps the IPC shape uniform.
#[tauri::command]
pub fn set_ui_view(ui: State<'_, UiStore>, view: UiView) -> Result<(), IpcError> {
    ui.set_view(view);
    Ok(())
}

/// The user closed a reclaim's result: a new window no longer shows it.
///
/// # Errors
/// None; the `Result` keeps the IPC shape uniform.
#[tauri::command]
pub fn dismiss_reclaim(ui: State<'_, UiStore>) -> Result<(), IpcError> {
    ui.dismiss();
    Ok(())
}

/// The window's first content is on screen, `page_ms` after the page's navigation started at
/// `navigation_start_ms` (Unix ms): the shell logs how long that took since the open request and
/// how much of it went before the navigation (see `window::shown`).
///
/// # Errors
/// None; the `Result` keeps the IPC shape uniform.
#[tauri::command]
pub fn window_shown<R: Runtime>(
    app: AppHandle<R>,
    page_ms: f64,
    navigation_start_ms: f64,
) -> Result<(), IpcError> {
    crate::window::shown(&app, page_ms, navigation_start_ms);
    Ok(())
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

/// Reads a threshold as typed (`90m`, `2d 6h`) into whole seconds, as the CLI and the config read
/// one: the window sends the text and shows the engine's error.
///
/// # Errors
/// `bad-threshold`, with what is wrong and how to write one.
#[tauri::command]
pub fn read_threshold(text: String) -> Result<u64, IpcError> {
    cachewatch::api::units::read_threshold(&text)
        .map_err(|e| IpcError::new(ErrorCode::BadThreshold, e.to_string()))
}

/// Rescans every root; returns when the new snapshot is published.
///
/// # Errors
/// `stopped`, `job-failed`.
#[tauri::command]
pub async fn rescan(monitor: State<'_, MonitorHandle>) -> Result<(), IpcError> {
    Ok(monitor.rescan().await?)
}

/// The settings as the config file holds them now, with "open at login" as the autostart plugin
/// reports it.
///
/// # Errors
/// `settings` when the config file cannot be read or is invalid, `autostart` when the login item
/// cannot be queried.
#[tauri::command]
pub fn get_settings<R: Runtime>(
    app: AppHandle<R>,
    settings: State<'_, SettingsState>,
) -> Result<Settings, IpcError> {
    let config = api::settings::load(settings.path()?)?;
    Ok(Settings {
        sizes: api::settings::size_texts(&config),
        config,
        open_at_login: crate::plugins::is_enabled(&app)?.unwrap_or(false),
    })
}

/// Saves the settings into the config file (comments and other keys kept) and applies them now:
/// the default threshold and the alert limits to the monitor, the login item to the system. The
/// sizes are read from their texts (`sizes`) first.
///
/// # Errors
/// `bad-size` naming the `field` whose text is not a size (nothing saved), `settings` when the
/// config file cannot be written, `autostart`, `stopped`.
#[tauri::command]
pub async fn set_settings<R: Runtime>(
    app: AppHandle<R>,
    monitor: State<'_, MonitorHandle>,
    settings_state: State<'_, SettingsState>,
    settings: Settings,
) -> Result<(), IpcError> {
    let config = api::settings::with_size_texts(&settings.config, &settings.sizes)?;
    api::settings::save(settings_state.path()?, &config)?;
    crate::plugins::set_enabled(&app, settings.open_at_login)?;
    monitor.set_alerts(config.alerts.clone()).await?;
    Ok(monitor.set_threshold(config.default_threshold()).await?)
}

/// A producer's samples and reclaims over the last `span_secs` seconds (its chart).
///
/// # Errors
/// `history` when the database cannot be read.
#[tauri::command]
pub async fn producer_history(
    history: State<'_, HistoryState>,
    producer: String,
    span_secs: u64,
) -> Result<ProducerHistory, IpcError> {
    let span = Duration::from_secs(span_secs);
    let db = history.db_path.as_deref();
    Ok(api::history::producer_history(
        db,
        &producer,
        span,
        SystemTime::now(),
    )?)
}

/// A group of unattributed entries' samples over the last `span_secs` seconds (its chart); `key`
/// is the group's `history_key` in the snapshot.
///
/// # Errors
/// `history` when the key is not hex or the database cannot be read.
#[tauri::command]
pub async fn group_history(
    history: State<'_, HistoryState>,
    key: String,
    span_secs: u64,
) -> Result<GroupHistory, IpcError> {
    let span = Duration::from_secs(span_secs);
    let db = history.db_path.as_deref();
    Ok(api::history::group_history(
        db,
        &key,
        span,
        SystemTime::now(),
    )?)
}

/// The reclaims of the last `span_secs` seconds, newest first.
///
/// # Errors
/// `history` when the database cannot be read.
#[tauri::command]
pub async fn reclaim_history(
    history: State<'_, HistoryState>,
    span_secs: u64,
) -> Result<ReclaimHistory, IpcError> {
    let span = Duration::from_secs(span_secs);
    let db = history.db_path.as_deref();
    Ok(api::history::reclaim_history(db, span, SystemTime::now())?)
}

/// What the rule made from the group `label` of root `root` would claim (the engine's own check,
/// against the config file as it is now): the "Make a rule…" dialog.
///
/// # Errors
/// `group` when there is no such group now or the root cannot be listed, `settings` when there is
/// no config file or it cannot be read, `stopped`.
#[tauri::command]
pub async fn preview_group_rule(
    monitor: State<'_, MonitorHandle>,
    settings: State<'_, SettingsState>,
    root: String,
    label: String,
) -> Result<GroupRulePreview, IpcError> {
    let path = settings.config_path.as_deref();
    Ok(api::groups::preview_group_rule(&monitor, path, &root, &label).await?)
}

/// Writes the previewed rule `rule_id` (name regex `regex`) of the group `label` of root `root`
/// into the config file (comments kept); the monitor then shows the group as that producer.
///
/// # Errors
/// `group` when the group is gone or changed, or the rule would claim other entries or miss
/// members (nothing written); `settings` when the config cannot be written; `stopped`.
#[tauri::command]
pub async fn add_group_rule(
    monitor: State<'_, MonitorHandle>,
    settings: State<'_, SettingsState>,
    root: String,
    label: String,
    rule_id: String,
    regex: String,
) -> Result<GroupRuleAdded, IpcError> {
    let path = settings.config_path.as_deref();
    Ok(api::groups::add_group_rule(&monitor, path, &root, &label, &rule_id, &regex).await?)
}

/// A Markdown draft of a report on the group `label` of root `root` for the tracker of the
/// program that leaves it (the window's "Copy report"): template, counts, bytes, growth, the
/// writer and its evidence, the OS. Nothing is sent anywhere.
///
/// # Errors
/// `group` when there is no such group now, `stopped`, `job-failed`.
#[tauri::command]
pub async fn report_draft(
    monitor: State<'_, MonitorHandle>,
    root: String,
    label: String,
) -> Result<ReportDraft, IpcError> {
    Ok(api::report::group_report(&monitor, &root, &label).await?)
}

/// Hides (`ignored`) or shows again the groups of shape label `label`, kept in the config's
/// `[groups] ignore`; returns the labels ignored now.
///
/// # Errors
/// `group` to show again a label not ignored, `settings` when the config cannot be written,
/// `stopped`.
#[tauri::command]
pub async fn ignore_shape(
    monitor: State<'_, MonitorHandle>,
    settings: State<'_, SettingsState>,
    label: String,
    ignored: bool,
) -> Result<Vec<String>, IpcError> {
    let path = settings.config_path.as_deref();
    Ok(api::groups::ignore_shape(&monitor, path, &label, ignored).await?)
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
            ErrorCode::NotEvidence,
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
