#!/usr/bin/python3
"""What a desktop does to the app, for the end-to-end test and benches/app_memory.sh under Xvfb
(no window manager, tests-e2e/tray-host.py as the tray host):

  desktop.py click ITEMS_FILE LABEL   click the tray menu entry LABEL of the first item registered
                                      in ITEMS_FILE (tray-host.py's list), as a panel does (dbusmenu)
  desktop.py close TITLE              ask every top-level X window named TITLE to close, as a
                                      window manager's close button does (WM_DELETE_WINDOW)
  desktop.py mapped TITLE             exit 0 when a window named TITLE is on screen, else 1

Needs /usr/bin/python3 (no modules beyond the standard library), gdbus, libX11, $DISPLAY and a
session bus.
"""
import ctypes
import re
import subprocess
import sys


def gdbus(*args):
    return subprocess.run(["gdbus", "call", "--session", *args], check=True,
                          capture_output=True, text=True).stdout


def click(items_file, label):
    with open(items_file) as f:
        item = f.readline().strip()
    i = item.index("/")
    bus, path = item[:i], item[i:]
    menu = re.search(r"objectpath '([^']+)'", gdbus(
        "-d", bus, "-o", path, "-m", "org.freedesktop.DBus.Properties.Get",
        "org.kde.StatusNotifierItem", "Menu")).group(1)
    layout = gdbus("-d", bus, "-o", menu, "-m", "com.canonical.dbusmenu.GetLayout",
                   "--", "0", "-1", '["label"]')
    m = re.search(r"\((\d+), \{'label': <'" + re.escape(label) + "'>", layout)
    if not m:
        sys.exit(f"no menu entry {label!r} in {layout}")
    gdbus("-d", bus, "-o", menu, "-m", "com.canonical.dbusmenu.Event",
          "--", m.group(1), "clicked", "<int32 0>", "0")


class ClientMessage(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("window", ctypes.c_ulong),
                ("message_type", ctypes.c_ulong), ("format", ctypes.c_int),
                ("data", ctypes.c_long * 5)]


class XEvent(ctypes.Union):
    _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]


class Attributes(ctypes.Structure):
    # XWindowAttributes up to map_state (the rest is not read; the buffer is large enough)
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("border_width", ctypes.c_int), ("depth", ctypes.c_int),
                ("visual", ctypes.c_void_p), ("root", ctypes.c_ulong), ("c_class", ctypes.c_int),
                ("bit_gravity", ctypes.c_int), ("win_gravity", ctypes.c_int),
                ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong),
                ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int),
                ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int),
                ("map_state", ctypes.c_int), ("pad", ctypes.c_long * 16)]


def x11():
    x = ctypes.cdll.LoadLibrary("libX11.so.6")
    x.XOpenDisplay.restype = ctypes.c_void_p
    x.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x.XDefaultRootWindow.restype = ctypes.c_ulong
    x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                             ctypes.POINTER(ctypes.c_ulong),
                             ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong)),
                             ctypes.POINTER(ctypes.c_uint)]
    x.XFetchName.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_char_p)]
    x.XInternAtom.restype = ctypes.c_ulong
    x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long,
                             ctypes.POINTER(XEvent)]
    x.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong,
                                       ctypes.POINTER(Attributes)]
    x.XFlush.argtypes = [ctypes.c_void_p]
    x.XCloseDisplay.argtypes = [ctypes.c_void_p]
    dpy = x.XOpenDisplay(None)
    if not dpy:
        sys.exit("cannot open the X display (is $DISPLAY set?)")
    return x, dpy


def named(x, dpy, title):
    """The top-level windows named `title` (children of the root: no window manager)."""
    root, parent = ctypes.c_ulong(), ctypes.c_ulong()
    children, n = ctypes.POINTER(ctypes.c_ulong)(), ctypes.c_uint()
    x.XQueryTree(dpy, x.XDefaultRootWindow(dpy), ctypes.byref(root), ctypes.byref(parent),
                 ctypes.byref(children), ctypes.byref(n))
    found = []
    for i in range(n.value):
        name = ctypes.c_char_p()
        if x.XFetchName(dpy, children[i], ctypes.byref(name)) and name.value == title.encode():
            found.append(children[i])
    return found


def close(title):
    x, dpy = x11()
    protocols = x.XInternAtom(dpy, b"WM_PROTOCOLS", 0)
    delete = x.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
    for w in named(x, dpy, title):
        ev = XEvent()
        ev.xclient.type = 33  # ClientMessage
        ev.xclient.window = w
        ev.xclient.message_type = protocols
        ev.xclient.format = 32
        ev.xclient.data[0] = delete
        x.XSendEvent(dpy, w, 0, 0, ctypes.byref(ev))
    x.XFlush(dpy)
    x.XCloseDisplay(dpy)


def mapped(title):
    x, dpy = x11()
    on = False
    for w in named(x, dpy, title):
        a = Attributes()
        if x.XGetWindowAttributes(dpy, w, ctypes.byref(a)) and a.map_state == 2:  # IsViewable
            on = True
    x.XCloseDisplay(dpy)
    return on


if __name__ == "__main__":
    cmd = sys.argv[1:2]
    if cmd == ["click"] and len(sys.argv) == 4:
        click(sys.argv[2], sys.argv[3])
    elif cmd == ["close"] and len(sys.argv) == 3:
        close(sys.argv[2])
    elif cmd == ["mapped"] and len(sys.argv) == 3:
        sys.exit(0 if mapped(sys.argv[2]) else 1)
    else:
        sys.exit(__doc__)
