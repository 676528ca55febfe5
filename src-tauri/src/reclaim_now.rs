//! "Reclaim now" from the tray menu: plan at the current threshold, confirm in a native dialog,
//! execute the plan by its id, report in a notification.

use std::time::Duration;

use cachewatch::api::monitor::MonitorHandle;
use cachewatch::api::units::{format_bytes, format_count_of, format_duration, format_threshold};
use cachewatch::dto::{ReclaimPreview, ReclaimResult};
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

/// The confirmation text: what goes, how much, the native command to prefer for a producer whose
/// tool manages its cache, what stays. The threshold reads as the window's confirmation writes it
/// ([`format_duration`]).
pub fn confirm_text(plan: &ReclaimPreview, threshold_secs: u64) -> String {
    let mut text = format!(
        "Delete {} ({}) older than {}? Deletion is permanent.",
        format_count_of(plan.planned_items, "item"),
        format_bytes(plan.planned_bytes.into()),
        format_duration(threshold_secs),
    );
    let mut managed: Vec<_> = plan
        .producers
        .iter()
        .filter(|p| p.items > 0)
        .filter_map(|p| Some((p.producer.as_str(), p.managed_by.as_deref()?)))
        .collect();
    managed.sort_unstable();
    for (producer, cmd) in managed {
        text.push_str(&format!(
            "\n{producer} is managed by its tool: run `{cmd}` first; deleting from here stays possible."
        ));
    }
    text.push_str(&format!(
        "\n{} kept (too young, in use, or owned by a running app): the window lists them.",
        format_count_of(plan.kept_items, "item")
    ));
    text
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

#[cfg(test)]
mod tests {
    use cachewatch::dto::PreviewProducer;

    use super::*;

    fn producer(id: &str, items: u64, managed_by: Option<&str>) -> PreviewProducer {
        PreviewProducer {
            producer: id.to_owned(),
            items,
            allocated_bytes: items * 4096,
            freeable_bytes: items * 4096,
            oldest_age_secs: 200_000,
            managed_by: managed_by.map(str::to_owned),
        }
    }

    /// The tray's confirmation said counts only: it names the native command of a managed
    /// producer, and the threshold as the window does (`1 h 30 min`, not `90 min`).
    #[test]
    fn the_confirmation_names_the_native_command_and_reads_as_the_window() {
        let plan = ReclaimPreview {
            id: "0".repeat(32),
            created_unix_secs: 0,
            threshold_secs: 5400,
            planned_items: 5,
            planned_bytes: 5 * 4096,
            planned_freeable_bytes: 5 * 4096,
            producers: vec![
                producer("swiftpm-cache", 2, Some("swift package purge-cache")),
                producer("metal-gpuarchiver", 3, None),
            ],
            kept_items: 1,
            kept: Vec::new(),
            largest: Vec::new(),
        };
        assert_eq!(
            confirm_text(&plan, 5400),
            "Delete 5 items (20.0 KiB) older than 1 h 30 min? Deletion is permanent.\n\
             swiftpm-cache is managed by its tool: run `swift package purge-cache` first; deleting \
             from here stays possible.\n1 item kept (too young, in use, or owned by a running \
             app): the window lists them."
        );
    }
}
