//! "Reclaim now" from the tray menu: plan at the current threshold, confirm in a native dialog,
//! execute the plan by its id, report in a notification.

use std::time::Duration;

use cachewatch::api::preview::{ReclaimPreview, ReclaimResult};
use cachewatch::monitor::MonitorHandle;
use cachewatch::units::{format_bytes, format_count_of, format_threshold};
use tauri::{AppHandle, Runtime};
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
use tauri_plugin_notification::NotificationExt;

/// Runs the flow in the background; every outcome ends in a notification.
pub fn start<R: Runtime>(app: &AppHandle<R>, monitor: MonitorHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let threshold_secs = monitor.snapshot().threshold_secs;
        let plan = match monitor
            .plan_reclaim(Vec::new(), Duration::from_secs(threshold_secs))
            .await
        {
            Ok(p) => p,
            Err(e) => return notify(&app, "Reclaim failed", &e.to_string()),
        };
        if plan.planned_items == 0 {
            let body = format!(
                "No item of an auto-reclaim producer is older than {} ({} kept).",
                format_threshold(threshold_secs),
                format_count_of(plan.kept_items, "item")
            );
            return notify(&app, "Nothing to reclaim", &body);
        }
        if !confirm(&app, &plan, threshold_secs).await {
            return;
        }
        match monitor.execute_reclaim(plan.id).await {
            Ok(report) => notify(&app, &report_title(&report), &report_body(&report)),
            Err(e) => notify(&app, "Reclaim failed", &e.to_string()),
        }
    });
}

/// Asks the user in a native dialog; `false` when declined or the dialog could not be shown.
async fn confirm<R: Runtime>(
    app: &AppHandle<R>,
    plan: &ReclaimPreview,
    threshold_secs: u64,
) -> bool {
    let (tx, rx) = tokio::sync::oneshot::channel();
    app.dialog()
        .message(confirm_text(plan, threshold_secs))
        .title("Reclaim now?")
        .kind(MessageDialogKind::Warning)
        .buttons(MessageDialogButtons::OkCancelCustom(
            "Delete".into(),
            "Cancel".into(),
        ))
        .show(move |ok| {
            if tx.send(ok).is_err() {
                tracing::debug!("reclaim confirmation answered after the flow ended");
            }
        });
    rx.await.unwrap_or(false)
}

/// The confirmation text: what goes, how much, what stays.
pub fn confirm_text(plan: &ReclaimPreview, threshold_secs: u64) -> String {
    format!(
        "Delete {} ({}) older than {}? Deletion is permanent.\n{} are kept (too young, in use, or owned by a running app). The window lists them.",
        format_count_of(plan.planned_items, "item"),
        format_bytes(plan.planned_bytes.into()),
        format_threshold(threshold_secs),
        format_count_of(plan.kept_items, "item")
    )
}

fn report_title(r: &ReclaimResult) -> String {
    format!("Reclaimed {}", format_bytes(r.freed_bytes.into()))
}

fn report_body(r: &ReclaimResult) -> String {
    format!(
        "{} deleted, {} kept, {}.",
        format_count_of(r.deleted_items, "item"),
        format_count_of(r.kept_items, "item"),
        format_count_of(r.error_count, "error")
    )
}

fn notify<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        tracing::warn!("cannot show the notification {title:?}: {e}");
    }
}
