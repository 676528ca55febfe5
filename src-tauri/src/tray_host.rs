//! Whether the desktop shows tray icons. On Linux a tray icon needs a StatusNotifierWatcher on the
//! session bus (GNOME without its AppIndicator extension has none); without one the popover (hide
//! on blur, no decorations) would leave no way back to the window, so the app is a normal window
//! instead. macOS always has the menu bar.

/// Whether the tray icons are template images: macOS recolours black-on-alpha icons for light and
/// dark menu bars; other panels show pixels as they are (see `tray_icon`).
pub const TEMPLATE_ICONS: bool = cfg!(target_os = "macos");

/// The D-Bus name a tray host owns.
pub const WATCHER: &str = "org.kde.StatusNotifierWatcher";

/// True when a tray host is registered (always on macOS; on Linux, [`WATCHER`] has an owner on the
/// session bus; no session bus means no tray host).
#[cfg(target_os = "linux")]
pub fn present() -> bool {
    use gio::prelude::*;
    let bus = match gio::bus_get_sync(gio::BusType::Session, gio::Cancellable::NONE) {
        Ok(b) => b,
        Err(e) => {
            tracing::info!("no session bus ({e}): no tray host, the app is a normal window");
            return false;
        }
    };
    let reply = bus.call_sync(
        Some("org.freedesktop.DBus"),
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "NameHasOwner",
        Some(&(WATCHER,).to_variant()),
        Some(glib::VariantTy::new("(b)").unwrap_or(glib::VariantTy::ANY)),
        gio::DBusCallFlags::NONE,
        2000,
        gio::Cancellable::NONE,
    );
    match reply.map(|v| v.get::<(bool,)>()) {
        Ok(Some((owned,))) => owned,
        Ok(None) => false,
        Err(e) => {
            tracing::warn!("cannot ask the session bus for a tray host: {e}");
            false
        }
    }
}

/// True when a tray host is registered (macOS: the menu bar always is one).
#[cfg(not(target_os = "linux"))]
pub fn present() -> bool {
    true
}
