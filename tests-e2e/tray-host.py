#!/usr/bin/python3
"""The tray host of the end-to-end tests and benches/app_memory.py: what a desktop panel offers a
tray icon on Linux, reduced to what the app needs. A panel owns org.kde.StatusNotifierWatcher on
the session bus; an appindicator icon registers itself there and the panel then reads the icon and
its menu from the item. Under Xvfb there is no panel, so without this the app sees no tray host
and becomes a normal window (src-tauri/src/tray_host.rs), and the tray cannot be tested.

usage: tray-host.py [ITEMS_FILE]

Owns the watcher name, accepts item and host registrations, answers the watcher's properties and
drops an item when its bus name leaves the bus. With ITEMS_FILE, the registered items are kept
there, one `BUS/OBJECT-PATH` a line in registration order, replaced whole at each change (never
read half written); tests-e2e/desktop.py reads it to click a tray menu entry as a panel would.
Prints `tray host up` once it owns the name; exits 1 when the name is taken. Stops on SIGTERM or
SIGINT.

Needs only Debian's python3-gi (Gio) and a session bus (dbus-run-session); run it with
/usr/bin/python3, which sees Debian's modules.
"""
import os
import signal
import sys
import tempfile
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

WATCHER = "org.kde.StatusNotifierWatcher"
WATCHER_PATH = "/StatusNotifierWatcher"
# The object path an item registered by bus name alone is read at.
ITEM_PATH = "/StatusNotifierItem"
INTROSPECTION = f"""
<node>
  <interface name="{WATCHER}">
    <method name="RegisterStatusNotifierItem"><arg name="service" type="s" direction="in"/></method>
    <method name="RegisterStatusNotifierHost"><arg name="service" type="s" direction="in"/></method>
    <property name="RegisteredStatusNotifierItems" type="as" access="read"/>
    <property name="IsStatusNotifierHostRegistered" type="b" access="read"/>
    <property name="ProtocolVersion" type="i" access="read"/>
    <signal name="StatusNotifierItemRegistered"><arg name="service" type="s"/></signal>
    <signal name="StatusNotifierItemUnregistered"><arg name="service" type="s"/></signal>
    <signal name="StatusNotifierHostRegistered"/>
    <signal name="StatusNotifierHostUnregistered"/>
  </interface>
</node>
"""


def log(*words):
    print(time.strftime("%H:%M:%S"), *words, flush=True)


class Host:
    """The watcher's state: the items in registration order, each with the bus name it lives on."""

    def __init__(self, conn, items_file):
        self.conn = conn
        self.items_file = items_file
        self.items = []  # "BUS/PATH" strings, as the watcher's property lists them
        self.watches = {}  # bus name -> the Gio name-watch id that drops its items when it leaves
        info = Gio.DBusNodeInfo.new_for_xml(INTROSPECTION).interfaces[0]
        conn.register_object(WATCHER_PATH, info, self.on_call, self.on_get, None)

    def on_call(self, conn, sender, path, iface, method, params, invocation):
        if method == "RegisterStatusNotifierItem":
            (service,) = params.unpack()
            # An item names either its object path (then it lives on the caller's connection) or
            # its bus name (then it is at the conventional path on that name).
            if service.startswith("/"):
                bus, obj = sender, service
            else:
                bus, obj = service, ITEM_PATH
            self.add(bus, bus + obj)
            invocation.return_value(None)
        elif method == "RegisterStatusNotifierHost":
            invocation.return_value(None)
        else:
            invocation.return_dbus_error("org.freedesktop.DBus.Error.UnknownMethod",
                                         f"no method {method} on {iface}")

    def on_get(self, conn, sender, path, iface, prop):
        if prop == "RegisteredStatusNotifierItems":
            return GLib.Variant("as", self.items)
        if prop == "IsStatusNotifierHostRegistered":
            return GLib.Variant("b", True)
        if prop == "ProtocolVersion":
            return GLib.Variant("i", 0)
        return None

    def add(self, bus, item):
        if item in self.items:
            return
        self.items.append(item)
        if bus not in self.watches:
            self.watches[bus] = Gio.bus_watch_name_on_connection(
                self.conn, bus, Gio.BusNameWatcherFlags.NONE, None,
                lambda conn, name: self.gone(name))
        log("registered", item)
        self.emit("StatusNotifierItemRegistered", item)
        self.save()

    def gone(self, bus):
        """The bus name `bus` left the bus: its items are gone with it."""
        Gio.bus_unwatch_name(self.watches.pop(bus))
        for item in [i for i in self.items if i.startswith(bus + "/")]:
            self.items.remove(item)
            log("unregistered", item)
            self.emit("StatusNotifierItemUnregistered", item)
        self.save()

    def emit(self, signal_name, item):
        self.conn.emit_signal(None, WATCHER_PATH, WATCHER, signal_name, GLib.Variant("(s)", (item,)))

    def save(self):
        if not self.items_file:
            return
        # A temp file in the same dir, renamed over the old list: a reader sees the old or the new.
        folder = os.path.dirname(os.path.abspath(self.items_file))
        fd, tmp = tempfile.mkstemp(prefix=".tray-items-", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write("".join(i + "\n" for i in self.items))
        os.replace(tmp, self.items_file)


def main():
    if len(sys.argv) > 2 or sys.argv[1:2] in (["-h"], ["--help"]):
        sys.exit(__doc__)
    items_file = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        conn = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    except GLib.Error as e:
        sys.exit(f"tray-host: no session bus ({e.message}): run it under dbus-run-session")
    loop = GLib.MainLoop()
    host = Host(conn, items_file)

    def acquired(conn, name):
        log("tray host up")
        conn.emit_signal(None, WATCHER_PATH, WATCHER, "StatusNotifierHostRegistered", None)

    def lost(conn, name):
        sys.stderr.write(f"tray-host: cannot own {name}: another tray host runs on this bus\n")
        loop.quit()
        host.failed = True

    host.failed = False
    owner = Gio.bus_own_name_on_connection(conn, WATCHER, Gio.BusNameOwnerFlags.NONE,
                                           acquired, lost)
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    loop.run()
    Gio.bus_unown_name(owner)
    sys.exit(1 if host.failed else 0)


if __name__ == "__main__":
    main()
