//! Forwards the monitor's output to the window and the desktop: each snapshot to the tray and, while
//! a window exists, as the event `snapshot`; each alert as a notification and, to a window, the
//! event `alert`. A click on a notification opens the window (building it when needed) on the
//! alert's producer: kept in the `UiStore` for a new window, `focus-producer` for an open one.

use std::collections::VecDeque;
use std::sync::Mutex;

use cachewatch::api::monitor::MonitorHandle;
use cachewatch::dto::AlertDto;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_notification::NotificationExt;
use tokio::sync::broadcast::error::RecvError;

use crate::ui_state::UiStore;
use crate::window::MAIN;

/// How many shown notifications remember their producer for a click.
const REMEMBERED: usize = 64;

/// Notification id → producer id of the recent notifications (managed state).
#[derive(Debug, Default)]
pub struct Shown(Mutex<VecDeque<(i32, Option<String>)>>);

impl Shown {
    fn remember(&self, producer: Option<String>) -> i32 {
        let mut q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let id = q.back().map_or(1, |(id, _)| id.wrapping_add(1).max(1));
        q.push_back((id, producer));
        if q.len() > REMEMBERED {
            q.pop_front();
        }
        id
    }

    fn producer_of(&self, id: i32) -> Option<String> {
        let q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        q.iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, p)| p.clone())
    }
}

/// Starts the two forwarding tasks on Tauri's async runtime and the notification click handler.
pub fn start<R: Runtime>(app: &AppHandle<R>, monitor: &MonitorHandle) {
    app.manage(Shown::default());
    let on_click = app.clone();
    let registered = app.notification().on_action(move |action| {
        let id = action.notification().map(|n| n.id());
        let producer = id.and_then(|id| on_click.state::<Shown>().producer_of(id));
        // A window built now reads the producer at load; an open one hears the event.
        if let Some(p) = &producer {
            on_click.state::<UiStore>().focus(p.clone());
        }
        if let Err(e) = crate::window::show(&on_click) {
            tracing::warn!("{e}");
        }
        if let Some(p) = producer {
            if let Err(e) = on_click.emit_to(MAIN, "focus-producer", p) {
                tracing::warn!("cannot emit focus-producer: {e}");
            }
        }
    });
    if let Err(e) = registered {
        tracing::warn!("notification clicks will not open the window: {e}");
    }

    let mut snapshots = monitor.subscribe();
    let a = app.clone();
    tauri::async_runtime::spawn(async move {
        let mut shown = crate::tray::Shown::default();
        loop {
            let snap = snapshots.borrow_and_update().clone();
            // No window, nothing to serialize: a new one fetches the snapshot at load.
            if crate::window::get(&a).is_some() {
                if let Err(e) = a.emit_to(MAIN, "snapshot", &*snap) {
                    tracing::warn!("cannot emit a snapshot: {e}");
                }
            }
            crate::tray::update(&a, &snap, &mut shown);
            if snapshots.changed().await.is_err() {
                tracing::info!("the monitor stopped; no more snapshots");
                break;
            }
        }
    });

    let mut alerts = monitor.alerts();
    let a = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            match alerts.recv().await {
                Ok(alert) => on_alert(&a, &alert),
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!("{n} alerts were missed (the app was busy)")
                }
                Err(RecvError::Closed) => break,
            }
        }
    });
}

/// Emits `alert` and shows it as a notification (the engine already applied the cooldowns).
fn on_alert<R: Runtime>(app: &AppHandle<R>, alert: &AlertDto) {
    if crate::window::get(app).is_some() {
        if let Err(e) = app.emit_to(MAIN, "alert", alert) {
            tracing::warn!("cannot emit an alert: {e}");
        }
    }
    let id = app.state::<Shown>().remember(alert.producer.clone());
    let shown = app
        .notification()
        .builder()
        .id(id)
        .title(&alert.title)
        .body(&alert.app_message)
        .show();
    if let Err(e) = shown {
        tracing::warn!(
            "cannot show a notification for alert {:?}: {e}",
            alert.title
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn shown_notifications_remember_their_producer_up_to_a_bound() {
        let s = Shown::default();
        let first = s.remember(Some("metal-gpuarchiver".into()));
        let second = s.remember(None);
        assert_ne!(first, second);
        assert_eq!(s.producer_of(first).as_deref(), Some("metal-gpuarchiver"));
        assert_eq!(s.producer_of(second), None);
        for _ in 0..REMEMBERED {
            s.remember(Some("x".into()));
        }
        assert_eq!(s.producer_of(first), None, "the oldest is forgotten");
        assert_eq!(s.0.lock().unwrap().len(), REMEMBERED);
    }
}
