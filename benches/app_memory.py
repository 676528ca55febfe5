#!/usr/bin/python3
"""What the menu-bar app costs at rest and with its window open (Linux, under Xvfb).

  benches/app_memory.py APP CLI TREE [--cycles N] [--grace SECS] [--settle SECS] [--rest-cpu SECS]
                        [--idle-web SECS] [--idle-settle SECS] [--drift SECS]
                        [--keep-log PATH] [--mappings N]

APP: the app's release build (target/release/cachewatch-app); CLI: the CLI's (target/release/
cachewatch), for the engine-alone figure; TREE: a seed tree (benches/gen_tree.py seed TREE N 800),
watched as the app's only root and never changed.

Runs itself under `dbus-run-session -- xvfb-run` unless $DISPLAY and a session bus are there, with
tests-e2e/tray-host.py (or $TRAY_HOST) as the tray host, so the app is the tray popover.
The window is opened by clicking the tray menu's "Open CacheWatch" (dbusmenu, as a panel does) and
closed by WM_DELETE_WINDOW (as a window manager's close button), with tests-e2e/desktop.py's X
calls made in this process.

Prints every figure of the app's cost (README, docs/benchmarks.md), each PSS summed over the app
and all its descendants
(/proc/PID/smaps_rollup), with the per-process figures:
  - `cachewatch watch` alone on the tree, SETTLE s after its first scan;
  - the app at rest, window never opened, SETTLE s after its first scan, and its CPU over
    REST_CPU s (should be 0);
  - window open, IDLE_SETTLE s after it showed, and the web process's CPU over IDLE_WEB s of
    nothing changing (should be under 1% of a core);
  - after the close plus the grace (GRACE s, passed to the app as CACHEWATCH_WINDOW_GRACE_SECS);
  - after N more open/close cycles, each waiting until no WebKit process is left (the webview is
    destroyed after the grace, the network process a second later) and then 1 s more, and the
    change against the first rest (should be within 5%);
  - the open latency of every open: from the click to the window mapped (X), and from the open
    request to the first paint with content (the page reports it; the app logs
    "window content shown after the open request ms=N"), median and max.
Whether any WebKit process is alive is said at each point.
"""
import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DESKTOP = os.path.join(HERE, "..", "tests-e2e", "desktop.py")
# After the grace, the app destroys the window, ends the network process 1 s later, hands back the
# engine's code 2 s after that and, once JavaScriptCore's collector has run, its heap and code
# again 30 s later (src-tauri/src/window.rs): the rest is measured after all of it.
SETTLE_AFTER_CLOSE = 40
TRAY_HOST = os.environ.get(
    "TRAY_HOST", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests-e2e", "tray-host.py"))
TITLE = "CacheWatch"
MIB = 1024 * 1024
TICK = os.sysconf("SC_CLK_TCK")


def children_of():
    """ppid -> [pid] for every process."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree(pid):
    kids, out, todo = children_of(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def pss_kib(pid, field="Pss"):
    """A field of /proc/PID/smaps_rollup, KiB: Pss, or its part Pss_Anon (heap, stacks) or
    Pss_File (mapped files: the libraries' code and data, which the kernel can drop and read again)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            m = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
            return int(m.group(1)) if m else 0
    except OSError:
        return 0


def mappings(pid):
    """PSS KiB per mapped file (anonymous mappings under "[anon]") of one process, from
    /proc/PID/smaps."""
    out, cur = {}, None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                head = line.split(None, 5)
                if "-" in head[0] and not head[0].endswith(":"):
                    cur = head[5].strip() if len(head) > 5 else "[anon]"
                elif head[0] == "Pss:":
                    out[cur] = out.get(cur, 0) + int(head[1])
    except OSError:
        pass
    return out


def grown(before, after, top):
    """The `top` mappings whose PSS grew most between two `mappings` readings, as text."""
    rows = sorted(((after.get(k, 0) - before.get(k, 0), k) for k in set(before) | set(after)),
                  reverse=True)[:top]
    return "\n".join(f"    {d / 1024:+7.1f} MiB  {k}" for d, k in rows if d)


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def measure(pid):
    """(total PSS MiB, [(name, pid, PSS MiB)])."""
    rows = [(name(p), p, pss_kib(p) / 1024) for p in tree(pid)]
    rows = [r for r in rows if r[2] > 0]
    return sum(r[2] for r in rows), rows


def webkit(pid):
    return [(n, p) for n, p, _ in measure(pid)[1] if n.startswith("WebKit")]


def cpu_percent(pids_of, secs):
    """CPU of the processes `pids_of()` names, % of one core over `secs`."""
    before = {p: cpu_ticks(p) for p in pids_of()}
    time.sleep(secs)
    after = {p: cpu_ticks(p) for p in pids_of()}
    used = sum(after[p] - before.get(p, 0) for p in after)
    return 100.0 * used / TICK / secs


def report(label, pid, table):
    total, rows = measure(pid)
    per = ", ".join(f"{n} {m:.0f}" for n, _, m in sorted(rows, key=lambda r: -r[2]))
    wk = webkit(pid)
    anon, file = pss_kib(pid, "Pss_Anon") / 1024, pss_kib(pid, "Pss_File") / 1024
    print(f"{label}: total PSS {total:.1f} MiB ({per}; the app's own: {anon:.0f} anon, "
          f"{file:.0f} file); WebKit processes: {', '.join(n for n, _ in wk) if wk else 'none'}",
          flush=True)
    table.append((label, total, rows, (anon, file)))
    return total


def wait_for(what, probe, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if probe():
            return True
        time.sleep(0.05)
    sys.exit(f"timed out waiting for {what}")


def log_has(path, text):
    try:
        with open(path, errors="replace") as f:
            return text in f.read()
    except OSError:
        return False


def desktop(*args):
    return subprocess.run(["/usr/bin/python3", DESKTOP, *args]).returncode == 0


def engine_alone(cli, tree_dir, work, settle, table):
    data = os.path.join(work, "cli-data")
    os.makedirs(data)
    log = os.path.join(work, "cli.log")
    with open(log, "w") as out:
        p = subprocess.Popen([cli, "watch", "--root", f"cache={tree_dir}", "--data-dir", data,
                              "--config", os.path.join(work, "cli.toml"), "-v"],
                             stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for("the CLI's first scan", lambda: log_has(log, "first scan and figures done"), 3600)
        time.sleep(settle)
        report("cachewatch watch (engine alone)", p.pid, table)
    finally:
        p.terminate()
        p.wait()


def load_desktop():
    """tests-e2e/desktop.py as a module: X calls in this process, no interpreter start per probe."""
    spec = importlib.util.spec_from_file_location("desktop", DESKTOP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def menu_click(items, label):
    """The gdbus command that clicks tray menu entry `label` (resolved once, before the timing)."""
    with open(items) as f:
        item = f.readline().strip()
    i = item.index("/")
    bus, path = item[:i], item[i:]
    gdbus = lambda *args: subprocess.run(["gdbus", "call", "--session", *args], check=True,
                                         capture_output=True, text=True).stdout
    menu = re.search(r"objectpath '([^']+)'", gdbus(
        "-d", bus, "-o", path, "-m", "org.freedesktop.DBus.Properties.Get",
        "org.kde.StatusNotifierItem", "Menu")).group(1)
    layout = gdbus("-d", bus, "-o", menu, "-m", "com.canonical.dbusmenu.GetLayout",
                   "--", "0", "-1", '["label"]')
    m = re.search(r"\((\d+), \{'label': <'" + re.escape(label) + "'>", layout)
    if not m:
        sys.exit(f"no menu entry {label!r} in {layout}")
    return ["gdbus", "call", "--session", "-d", bus, "-o", menu, "-m",
            "com.canonical.dbusmenu.Event", "--", m.group(1), "clicked", "<int32 0>", "0"]


SHOWN = re.compile(
    r"window content shown after the open request ms=(\d+) page_ms=(\d+) launch_ms=(\d+)")


def shown_times(log):
    with open(log, errors="replace") as f:
        text = re.sub(r"\x1b\[[0-9;]*m", "", f.read())  # tracing colours its fields
    return [(int(m), int(p), int(n)) for m, p, n in SHOWN.findall(text)]


def by_name(rows, prefix):
    return sum(m for n, _, m in rows if n.startswith(prefix))


def run(a):
    work = tempfile.mkdtemp(prefix="cachewatch-app-memory-")
    table = []
    dt = load_desktop()
    try:
        engine_alone(a.cli, a.tree, work, a.settle, table)
        items = os.path.join(work, "tray-items")
        host = subprocess.Popen(["/usr/bin/python3", TRAY_HOST, items], stdout=subprocess.DEVNULL)
        wait_for("the tray host", lambda: subprocess.run(
            ["gdbus", "call", "--session", "-d", "org.freedesktop.DBus", "-o",
             "/org/freedesktop/DBus", "-m", "org.freedesktop.DBus.NameHasOwner",
             "org.kde.StatusNotifierWatcher"], capture_output=True, text=True).stdout.find("true") >= 0, 30)
        log = os.path.join(work, "app.log")
        env = dict(os.environ, CACHEWATCH_ROOTS=f"cache={a.tree}",
                   CACHEWATCH_DATA_DIR=os.path.join(work, "data"),
                   CACHEWATCH_CONFIG=os.path.join(work, "config.toml"),
                   CACHEWATCH_WINDOW_GRACE_SECS=str(a.grace),
                   CACHEWATCH_LOG=os.environ.get("CACHEWATCH_LOG", "info,notify=warn"))
        if re.fullmatch(r"(C|POSIX)?(\..*)?", env.get("LANG", "")):
            env["LANG"] = "en_US.UTF-8"  # WebKitGTK's JavaScriptCore rejects the locale "C"
        with open(log, "w") as out:
            app = subprocess.Popen([a.app], env=env, stdout=out, stderr=subprocess.STDOUT)
        mapped = lambda: dt.mapped(TITLE)
        # (click -> mapped, open request -> content shown, of it the page from its navigation
        # start, of it before that navigation: ms)
        latencies = []

        def open_window():
            n = len(shown_times(log))
            t0 = time.time()
            subprocess.run(click, check=True, capture_output=True)
            wait_for("the window", mapped, 30)
            t_map = 1000 * (time.time() - t0)
            wait_for("the window's content", lambda: len(shown_times(log)) > n, 30)
            latencies.append((t_map, *shown_times(log)[-1]))

        def close_window():
            dt.close(TITLE)
            wait_for("the window to close", lambda: not mapped(), 30)

        try:
            wait_for("the app's first scan", lambda: log_has(log, "first scan and figures done"), 3600)
            wait_for("the tray item", lambda: os.path.exists(items), 30)
            time.sleep(a.settle)
            if app.poll() is not None:
                sys.exit(f"the app exited with status {app.returncode}; see {log}")
            click = menu_click(items, "Open CacheWatch")
            rest = report("app at rest, window never opened", app.pid, table)
            maps_at_rest = mappings(app.pid)
            if a.mappings:
                print(f"  the app's largest mappings at rest:\n"
                      f"{grown({}, maps_at_rest, a.mappings)}", flush=True)
            rest_cpu = cpu_percent(lambda: tree(app.pid), a.rest_cpu)
            print(f"  CPU at rest over {a.rest_cpu} s: {rest_cpu:.2f}% of a core", flush=True)

            open_window()
            print(f"  window mapped {latencies[0][0]:.0f} ms after the click; content shown "
                  f"{latencies[0][1]} ms after the open request (the app's log), "
                  f"{latencies[0][2]} ms after the page's navigation started, which started "
                  f"{latencies[0][3]} ms after the open request", flush=True)
            time.sleep(a.idle_settle)
            report("window open", app.pid, table)
            web = lambda: [p for n, p in webkit(app.pid) if n.startswith("WebKitWebProces")]
            web_cpu = cpu_percent(web, a.idle_web)
            print(f"  web process CPU, window open, nothing changing, {a.idle_web} s: "
                  f"{web_cpu:.2f}% of a core", flush=True)

            close_window()
            time.sleep(a.grace + SETTLE_AFTER_CLOSE)
            first_rest = report(f"closed, {a.grace} s grace + {SETTLE_AFTER_CLOSE} s", app.pid,
                                table)
            maps_first_rest = mappings(app.pid)
            if a.mappings:
                print(f"  the app's mappings that grew most since the rest before any open:\n"
                      f"{grown(maps_at_rest, mappings(app.pid), a.mappings)}", flush=True)
            if a.drift:
                # What the engine alone adds at rest meanwhile (a root it must poll rescans it
                # every 60 s): to tell it from what the cycles add.
                time.sleep(a.drift)
                drift = report(f"{a.drift} s later, window closed", app.pid, table)
                print(f"  at rest over {a.drift} s without opening: "
                      f"{100 * (drift / first_rest - 1):+.1f}%", flush=True)

            for i in range(a.cycles):
                open_window()
                time.sleep(1)
                close_window()
                wait_for("no WebKit process", lambda: not webkit(app.pid), a.grace + 30)
                # A user does not reopen within the instant the network process ends; an open
                # then waits for it to be gone plus 100 ms (window.rs, `Ended`).
                time.sleep(1)
                if (i + 1) % 10 == 0:
                    print(f"  {i + 1} cycles", flush=True)
            time.sleep(SETTLE_AFTER_CLOSE)
            after = report(f"after {a.cycles} more open/close cycles", app.pid, table)
            change = 100 * (after / first_rest - 1) if first_rest else 0.0
            print(f"  rest after the cycles vs the first rest: {change:+.1f}%")
            if a.mappings:
                print(f"  the app's mappings that grew most over the cycles:\n"
                      f"{grown(maps_first_rest, mappings(app.pid), a.mappings)}", flush=True)
            print(f"  rest (never opened) vs after a close: {rest:.1f} vs {first_rest:.1f} MiB")
            maps = sorted(m for m, _, _, _ in latencies)
            shows = sorted(s for _, s, _, _ in latencies)
            pages = sorted(p for _, _, p, _ in latencies)
            launches = sorted(n for _, _, _, n in latencies)
            med = lambda v: v[len(v) // 2]
            print(f"  open latency over {len(latencies)} opens: click -> mapped median "
                  f"{med(maps):.0f} ms (max {maps[-1]:.0f}); open request -> content shown median "
                  f"{med(shows)} ms (max {shows[-1]}), of which the page from its navigation start "
                  f"{med(pages)} ms, before the page's navigation (webview built, web process "
                  f"launched) {med(launches)} ms; the first open: {latencies[0][0]:.0f} / "
                  f"{latencies[0][1]} ms", flush=True)
        finally:
            app.terminate()
            try:
                app.wait(10)
            except subprocess.TimeoutExpired:
                app.kill()
            host.terminate()
        print("\n| | total PSS | app (anon + file) | WebKitWebProcess | WebKitNetworkProcess |\n"
              "|---|---|---|---|---|")
        for label, total, rows, (anon, file) in table:
            own = sum(m for _, p, m in rows if p == rows[0][1])
            cell = lambda prefix: f"{by_name(rows, prefix):.0f}" if by_name(rows, prefix) else "-"
            print(f"| {label} | {total:.0f} MiB | {own:.0f} ({anon:.0f} + {file:.0f}) | "
                  f"{cell('WebKitWebProces')} | {cell('WebKitNetworkPr')} |")
        print(f"\nCPU at rest over {a.rest_cpu} s: {rest_cpu:.2f}% of a core; web process, window "
              f"open and idle, over {a.idle_web} s: {web_cpu:.2f}%; open: click -> mapped median "
              f"{med(maps):.0f} ms, open request -> content shown median {med(shows)} ms "
              f"({len(latencies)} opens); rest after {a.cycles} cycles vs the first: {change:+.1f}%")
    finally:
        if a.keep_log:
            shutil.copy(os.path.join(work, "app.log"), a.keep_log)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("app")
    ap.add_argument("cli")
    ap.add_argument("tree")
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--grace", type=int, default=5)
    ap.add_argument("--settle", type=int, default=20)
    ap.add_argument("--rest-cpu", type=int, default=60)
    ap.add_argument("--idle-web", type=int, default=60)
    ap.add_argument("--idle-settle", type=int, default=10)
    ap.add_argument("--drift", type=int, default=0, metavar="SECS",
                    help="after the first rest, wait SECS and report the rest again")
    ap.add_argument("--keep-log", metavar="PATH", help="copy the app's log there at the end")
    ap.add_argument("--mappings", type=int, default=0, metavar="N",
                    help="after the first close, print the N mappings of the app process whose "
                         "PSS grew most since the rest before any open; after the cycles, those "
                         "that grew most over them")
    a = ap.parse_args()
    a.app, a.cli, a.tree = (os.path.abspath(p) for p in (a.app, a.cli, a.tree))
    if not os.environ.get("DISPLAY") or not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        os.execvp("dbus-run-session", ["dbus-run-session", "--", "xvfb-run", "-a", "-s",
                                       "-screen 0 1280x900x24", "/usr/bin/python3",
                                       os.path.abspath(__file__), *sys.argv[1:]])
    run(a)


if __name__ == "__main__":
    main()
