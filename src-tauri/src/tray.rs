//! The menu-bar icon: its menu (built from the [`MENU`] table), its two states, and its title.

use cachewatch::api::monitor::Snapshot;
use cachewatch::dto::MonitorState;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Runtime};

/// The tray icon's id.
pub const TRAY_ID: &str = "main";

/// An alert younger than this puts the icon in its "a leak is growing" state, seconds.
pub const GROWING_WINDOW_SECS: u64 = 3600;

/// What a menu entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Show the window.
    Open,
    /// Plan a reclaim at the current threshold, confirm it in a dialog, execute it.
    ReclaimNow,
    /// Pause or resume watching.
    TogglePause,
    /// Turn starting at login on or off (a check item).
    OpenAtLogin,
    /// Quit the app (the only way to).
    Quit,
}

/// One row of the menu; `action: None` is a separator.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// What it does.
    pub action: Option<Action>,
    /// The menu item id.
    pub id: &'static str,
    /// The label.
    pub label: &'static str,
    /// A check item.
    pub check: bool,
    /// Keyboard shortcut.
    pub accelerator: Option<&'static str>,
}

const fn item(action: Action, id: &'static str, label: &'static str) -> Row {
    Row {
        action: Some(action),
        id,
        label,
        check: false,
        accelerator: None,
    }
}

const SEPARATOR: Row = Row {
    action: None,
    id: "",
    label: "",
    check: false,
    accelerator: None,
};

/// The menu, top to bottom.
pub const MENU: &[Row] = &[
    item(Action::Open, "open", "Open CacheWatch"),
    item(Action::ReclaimNow, "reclaim", "Reclaim now…"),
    SEPARATOR,
    item(Action::TogglePause, "pause", "Pause watching"),
    Row {
        check: true,
        ..item(Action::OpenAtLogin, "login", "Open at login")
    },
    SEPARATOR,
    Row {
        accelerator: Some("CmdOrCtrl+Q"),
        ..item(Action::Quit, "quit", "Quit CacheWatch")
    },
];

/// The label of the pause item in `state`.
pub fn pause_label(state: MonitorState) -> &'static str {
    match state {
        MonitorState::Paused => "Resume watching",
        _ => "Pause watching",
    }
}

/// The action of menu item `id`.
pub fn action_of(id: &str) -> Option<Action> {
    MENU.iter().find(|r| r.id == id).and_then(|r| r.action)
}

/// The menu items whose text or check mark follow the state (managed state).
pub struct TrayMenu<R: Runtime> {
    pause: MenuItem<R>,
    login: CheckMenuItem<R>,
}

/// Builds the menu from [`MENU`] and the tray icon, and manages [`TrayMenu`]. Menu clicks go to
/// `on_action`; a left click on the icon toggles the window (where the platform reports clicks:
/// macOS and Windows; Linux indicators only open the menu).
///
/// # Errors
/// Tauri's error when the menu or the icon cannot be made.
pub fn build<R: Runtime>(
    app: &AppHandle<R>,
    open_at_login: bool,
    on_action: impl Fn(&AppHandle<R>, Action) + Send + Sync + 'static,
) -> tauri::Result<()> {
    let mut items: Vec<Box<dyn IsMenuItem<R>>> = Vec::new();
    let mut pause = None;
    let mut login = None;
    for row in MENU {
        match row.action {
            None => items.push(Box::new(PredefinedMenuItem::separator(app)?)),
            Some(_) if row.check => {
                let c = CheckMenuItem::with_id(
                    app,
                    row.id,
                    row.label,
                    true,
                    open_at_login,
                    row.accelerator,
                )?;
                login = Some(c.clone());
                items.push(Box::new(c));
            }
            Some(action) => {
                let m = MenuItem::with_id(app, row.id, row.label, true, row.accelerator)?;
                if action == Action::TogglePause {
                    pause = Some(m.clone());
                }
                items.push(Box::new(m));
            }
        }
    }
    let refs: Vec<&dyn IsMenuItem<R>> = items.iter().map(|b| b.as_ref()).collect();
    let menu = Menu::with_items(app, &refs)?;
    if let (Some(pause), Some(login)) = (pause, login) {
        app.manage(TrayMenu { pause, login });
    }
    let (icon, template) = crate::tray_icon::icon(false)?;
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(icon)
        .icon_as_template(template)
        .tooltip("CacheWatch")
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(move |app, event| match action_of(event.id().as_ref()) {
            Some(a) => on_action(app, a),
            None => tracing::warn!("menu event for unknown item {:?}", event.id()),
        })
        .on_tray_icon_event(|tray, event| {
            let app = tray.app_handle();
            tauri_plugin_positioner::on_tray_event(app, &event);
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                if let Err(e) = crate::window::toggle(app) {
                    tracing::warn!("{e}");
                }
            }
        })
        .build(app)?;
    Ok(())
}

/// True when the icon should show "a leak is growing": an alert fired within
/// [`GROWING_WINDOW_SECS`] of the snapshot.
pub fn is_growing(s: &Snapshot) -> bool {
    s.alerts
        .iter()
        .any(|a| s.taken_at_unix_secs.saturating_sub(a.time_unix_secs) < GROWING_WINDOW_SECS)
}

/// The icon's title (shown next to it in the macOS menu bar): the watched total, binary units.
pub fn title(s: &Snapshot) -> String {
    cachewatch::api::units::format_bytes(s.total_allocated_bytes.into())
}

/// The tooltip: the total and what the monitor is doing.
pub fn tooltip(s: &Snapshot) -> String {
    let state = match s.state {
        MonitorState::Scanning => "scanning",
        MonitorState::Watching => "watching",
        MonitorState::Paused => "paused",
    };
    format!(
        "CacheWatch: {} in {} producers, {state}",
        title(s),
        s.producers.len()
    )
}

/// What the tray shows now: [`update`] changes only what differs from it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Shown {
    growing: bool,
    title: String,
    tooltip: String,
    pause: &'static str,
    /// The failures logged as warnings: the same failure again, at a later snapshot, is logged
    /// at debug level (snapshots come several a second while a scan runs).
    warned: std::collections::BTreeSet<String>,
}

impl Shown {
    /// The most distinct failures remembered; past it the memory starts over.
    const WARNED_MAX: usize = 16;

    fn failed(&mut self, what: &str, e: impl std::fmt::Display) {
        let msg = format!("cannot {what}: {e}");
        if self.warned.contains(&msg) {
            tracing::debug!("{msg}");
            return;
        }
        tracing::warn!("{msg}");
        if self.warned.len() >= Self::WARNED_MAX {
            self.warned.clear();
        }
        self.warned.insert(msg);
    }
}

/// Brings the icon, its title, its tooltip and the pause item in line with `s`, touching only
/// what differs from `shown`: a snapshot comes with every poll and heartbeat, and each label set
/// on Linux goes through the indicator and its exported menu again. `shown` records only what was
/// set: what failed (or had no tray yet) is tried again with the next snapshot.
pub fn update<R: Runtime>(app: &AppHandle<R>, s: &Snapshot, shown: &mut Shown) {
    if let Some(tray) = app.tray_by_id(TRAY_ID) {
        let growing = is_growing(s);
        if growing != shown.growing {
            let r = crate::tray_icon::icon(growing)
                .and_then(|(i, template)| tray.set_icon_with_as_template(Some(i), template));
            match r {
                Ok(()) => shown.growing = growing,
                Err(e) => shown.failed("change the tray icon", e),
            }
        }
        let title = title(s);
        if title != shown.title {
            match tray.set_title(Some(&title)) {
                Ok(()) => shown.title = title,
                Err(e) => shown.failed("set the tray title", e),
            }
        }
        let tooltip = tooltip(s);
        if tooltip != shown.tooltip {
            match tray.set_tooltip(Some(&tooltip)) {
                Ok(()) => shown.tooltip = tooltip,
                Err(e) => shown.failed("set the tray tooltip", e),
            }
        }
    }
    let pause = pause_label(s.state);
    if pause != shown.pause {
        if let Some(menu) = app.try_state::<TrayMenu<R>>() {
            match menu.pause.set_text(pause) {
                Ok(()) => shown.pause = pause,
                Err(e) => shown.failed("relabel the pause item", e),
            }
        }
    }
}

/// Sets the check mark of "Open at login".
pub fn set_login_checked<R: Runtime>(app: &AppHandle<R>, on: bool) {
    if let Some(menu) = app.try_state::<TrayMenu<R>>() {
        if let Err(e) = menu.login.set_checked(on) {
            tracing::warn!("cannot check the open-at-login item: {e}");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn menu_ids_are_unique_and_map_back_to_their_action() {
        let rows: Vec<&Row> = MENU.iter().filter(|r| r.action.is_some()).collect();
        assert_eq!(rows.len(), 5);
        for r in &rows {
            assert_eq!(action_of(r.id), r.action, "{}", r.id);
            assert_eq!(rows.iter().filter(|o| o.id == r.id).count(), 1, "{}", r.id);
        }
        assert_eq!(action_of(""), None);
        assert_eq!(action_of("nope"), None);
        assert_eq!(MENU.last().and_then(|r| r.action), Some(Action::Quit));
    }

    /// With no tray and no menu (none built yet), nothing is recorded as shown, so the next
    /// snapshot sets everything once they exist.
    #[test]
    fn what_was_not_set_is_not_recorded_as_shown() {
        let app = tauri::test::mock_app();
        let s = crate::bindings::samples::snapshot();
        assert!(!title(&s).is_empty());
        let mut shown = Shown::default();
        update(app.handle(), &s, &mut shown);
        assert_eq!(shown, Shown::default());
    }

    /// Each failure is warned of once, however often it repeats, and two failing together do not
    /// take turns at warning.
    #[test]
    fn a_repeated_failure_is_warned_of_once() {
        let mut shown = Shown::default();
        for _ in 0..3 {
            shown.failed("set the tray title", "no indicator");
            shown.failed("set the tray tooltip", "no indicator");
        }
        let warned: Vec<&str> = shown.warned.iter().map(String::as_str).collect();
        assert_eq!(
            warned,
            [
                "cannot set the tray title: no indicator",
                "cannot set the tray tooltip: no indicator"
            ]
        );
    }
}
