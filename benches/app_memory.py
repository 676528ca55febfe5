#!/usr/bin/python3
"""What the menu-bar app costs at rest and with its window open (Linux, under Xvfb).

  benches/app_memory.py APP CLI TREE [--cycles N] [--grace SECS] [--settle SECS] [--rest-cpu SECS]

APP: the app's release build (target/release/cachewatch-app); CLI: the CLI's (target/release/
cachewatch), for the engine-alone figure; TREE: a seed tree (benches/gen_tree.py seed TREE N 800),
watched as the app's only root and never changed.

Runs itself under `dbus-run-session -- xvfb-run` unless $DISPLAY and a session bus are there, with
/work/shared/tools/tray-host.py (or $TRAY_HOST) as the tray host, so the app is the tray popover.
The window is opened by clicking the tray menu's "Open CacheWatch" (dbusmenu, as a panel does) and
closed by WM_DELETE_WINDOW (as a window manager's close button), both with tests-e2e/desktop.py.

Prints, each as PSS summed over the app and all its descendants (/proc/PID/smaps_rollup), with
the per-process figures:
  - `cachewatch watch` alone on the tree, SETTLE s after its first scan;
  - the app at rest, window never opened, SETTLE s after its first scan, and its CPU over
    REST_CPU s (should be 0);
  - window open (after the click; also how long until the window is mapped) and the web
    process's CPU over 20 s of nothing changing;
  - after the close plus the grace (GRACE s, passed to the app as CACHEWATCH_WINDOW_GRACE_SECS);
  - after N more open/close cycles, each waiting out the grace (the webview destroyed each time).
Whether any WebKit process is alive is said at each point.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DESKTOP = os.path.join(HERE, "..", "tests-e2e", "desktop.py")
TRAY_HOST = os.environ.get("TRAY_HOST", "/work/shared/tools/tray-host.py")
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


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            m = re.search(r"^Pss:\s+(\d+) kB", f.read(), re.M)
            return int(m.group(1)) if m else 0
    except OSError:
        return 0


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
    print(f"{label}: total PSS {total:.1f} MiB ({per}); WebKit processes: "
          f"{', '.join(n for n, _ in wk) if wk else 'none'}", flush=True)
    table.append((label, total, rows, bool(wk)))
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


def run(a):
    work = tempfile.mkdtemp(prefix="cachewatch-app-memory-")
    table = []
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
                   CACHEWATCH_WINDOW_GRACE_SECS=str(a.grace), CACHEWATCH_LOG="info,notify=warn")
        if re.fullmatch(r"(C|POSIX)?(\..*)?", env.get("LANG", "")):
            env["LANG"] = "en_US.UTF-8"  # WebKitGTK's JavaScriptCore rejects the locale "C"
        with open(log, "w") as out:
            app = subprocess.Popen([a.app], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for("the app's first scan", lambda: log_has(log, "first scan and figures done"), 3600)
            wait_for("the tray item", lambda: os.path.exists(items), 30)
            time.sleep(a.settle)
            if app.poll() is not None:
                sys.exit(f"the app exited with status {app.returncode}; see {log}")
            rest = report("app at rest, window never opened", app.pid, table)
            cpu = cpu_percent(lambda: tree(app.pid), a.rest_cpu)
            print(f"  CPU at rest over {a.rest_cpu} s: {cpu:.2f}% of a core", flush=True)

            t0 = time.time()
            desktop("click", items, "Open CacheWatch")
            wait_for("the window", lambda: desktop("mapped", TITLE), 30)
            print(f"  window mapped {1000 * (time.time() - t0):.0f} ms after the click", flush=True)
            time.sleep(5)
            report("window open", app.pid, table)
            web = lambda: [p for n, p in webkit(app.pid) if n.startswith("WebKitWebProces")]
            print(f"  web process CPU, window open, nothing changing, 20 s: "
                  f"{cpu_percent(web, 20):.2f}% of a core", flush=True)

            desktop("close", TITLE)
            wait_for("the window to close", lambda: not desktop("mapped", TITLE), 30)
            time.sleep(a.grace + 5)
            first_rest = report(f"closed, {a.grace} s grace + 5 s", app.pid, table)

            for i in range(a.cycles):
                desktop("click", items, "Open CacheWatch")
                wait_for("the window", lambda: desktop("mapped", TITLE), 30)
                time.sleep(1)
                desktop("close", TITLE)
                wait_for("the window to close", lambda: not desktop("mapped", TITLE), 30)
                time.sleep(a.grace + 1.5)
            time.sleep(5)
            after = report(f"after {a.cycles} more open/close cycles", app.pid, table)
            if first_rest:
                print(f"  rest after the cycles vs the first rest: {100 * (after / first_rest - 1):+.1f}%")
            print(f"  rest (never opened) vs after a close: {rest:.1f} vs {first_rest:.1f} MiB")
        finally:
            app.terminate()
            try:
                app.wait(10)
            except subprocess.TimeoutExpired:
                app.kill()
            host.terminate()
        print("\n| | total PSS MiB | per process (MiB) | WebKit alive |\n|---|---|---|---|")
        for label, total, rows, wk in table:
            per = ", ".join(f"{n} {m:.0f}" for n, _, m in sorted(rows, key=lambda r: -r[2]))
            print(f"| {label} | {total:.0f} | {per} | {'yes' if wk else 'no'} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("app")
    ap.add_argument("cli")
    ap.add_argument("tree")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--grace", type=int, default=5)
    ap.add_argument("--settle", type=int, default=20)
    ap.add_argument("--rest-cpu", type=int, default=60)
    a = ap.parse_args()
    a.app, a.cli, a.tree = (os.path.abspath(p) for p in (a.app, a.cli, a.tree))
    if not os.environ.get("DISPLAY") or not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        os.execvp("dbus-run-session", ["dbus-run-session", "--", "xvfb-run", "-a", "-s",
                                       "-screen 0 1280x900x24", "/usr/bin/python3",
                                       os.path.abspath(__file__), *sys.argv[1:]])
    run(a)


if __name__ == "__main__":
    main()
