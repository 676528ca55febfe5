// End-to-end test of the window's life in tray mode: the real app (debug build) under Xvfb with a
// tray host (tests-e2e/tray-host.py, or $TRAY_HOST), driven by tauri-driver +
// WebKitWebDriver. The window is built when opened (the tray menu's "Open CacheWatch", clicked
// over dbusmenu as a panel does) and destroyed a grace after it closes (WM_DELETE_WINDOW, as a
// window manager's close button); no web engine process lives while it is closed, and each new
// window shows what the engine holds (the totals `cachewatch scan --json` reports) and what the
// user was doing, a reclaim's result included. The root holds nested big dirs and a chain of dirs
// deeper than the scan's fd budget (the shape whose first scan never ended): the snapshot's root
// total equals the CLI's (and `du`), and the window shows it within its display precision (half a
// unit of the last digit shown).
//
//   dbus-run-session -- xvfb-run -a -s "-screen 0 1280x900x24" node --test tests-e2e/
//
// Needs what app.test.mjs needs, plus /usr/bin/python3 with python3-gi (the tray host), gdbus, and target/debug/cachewatch (or $CACHEWATCH_CLI; without it the totals are
// checked against `du` alone).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, rmSync, realpathSync, readdirSync, readFileSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session, until } from './webdriver.mjs';
import { freePort, archive as makeArchive, du, assertShows, parseShown } from './fixture.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const APP = process.env.CACHEWATCH_APP ?? join(REPO, 'target/debug/cachewatch-app');
const CLI = process.env.CACHEWATCH_CLI ?? join(dirname(APP), 'cachewatch');
const TRAY_HOST = process.env.TRAY_HOST ?? join(REPO, 'tests-e2e/tray-host.py');
const DESKTOP = join(REPO, 'tests-e2e/desktop.py');
const SHOTS = join(REPO, 'docs/screenshots');
const PRODUCER = 'metal-gpuarchiver';
const TITLE = 'CacheWatch';
/** How long a closed window is kept before it is destroyed, seconds (the app's default is 30). */
const GRACE_SECS = 2;

const SKIP = !process.env.DBUS_SESSION_BUS_ADDRESS
  ? 'no D-Bus session bus (run under dbus-run-session)'
  : !existsSync(TRAY_HOST)
    ? `no tray host at ${TRAY_HOST} (set TRAY_HOST)`
    : false;

const fx = {};
/** One archive in this test's cache root (see `fixture.mjs`). */
const archive = (name, files, size, old) => makeArchive(fx.cache, name, files, size, old);
let driver;
let host;
let session;

/**
 * A developer's tree beside the archives, of the shape whose first scan never ended: dirs of more
 * than one listing batch (1,100 entries) nested in each other, and a chain of 1,100 nested dirs
 * (deeper than the scan's fd budget, at most 1,024) with such a dir at its bottom.
 */
function nestedBigDirs(top) {
  const big = (dir, level) => {
    mkdirSync(dir, { recursive: true });
    for (let i = 0; i < 1100; i++) writeFileSync(join(dir, `f${i}`), i % 10 === 0 ? 'x'.repeat(i) : '');
    if (level < 2) for (let j = 0; j < 2; j++) big(join(dir, `sub${j}`), level + 1);
  };
  big(top, 0);
  let chain = join(top, 'chain');
  for (let i = 1; i < 1100; i++) chain = join(chain, 'd');
  big(join(chain, 'bottom'), 2);
}

/** What `cachewatch scan --json` says of the fixture: [root bytes, producer items, producer bytes]. */
function scanJson() {
  if (!existsSync(CLI)) {
    const dirs = readdirSync(join(fx.cache, 'com.apple.gpuarchiver')).map((d) => join(fx.cache, 'com.apple.gpuarchiver', d));
    return { root: du([fx.cache]), items: dirs.length, bytes: du(dirs), from: 'du' };
  }
  const out = JSON.parse(execFileSync(CLI, ['scan', '--json', '--root', `cache=${fx.cache}`], { encoding: 'utf8' }));
  const p = out.producers.find((x) => x.id === PRODUCER);
  return { root: out.roots[0].allocated_bytes, items: p.items, bytes: p.allocated_bytes, from: 'cachewatch scan --json' };
}

const textOf = (css) => session.exec(`return document.querySelector(arguments[0])?.textContent ?? null;`, css);

const invoke = (cmd, args = {}) =>
  session.execAsync(
    `const done = arguments[arguments.length - 1];
     window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1])
       .then((v) => done({ ok: v }), (e) => done({ err: e }));`,
    cmd,
    args,
  );

const desktop = (...args) => {
  try {
    execFileSync('/usr/bin/python3', [DESKTOP, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
    return true;
  } catch {
    return false;
  }
};

/** The app's pid (the process whose executable is APP), or null. */
function appPid() {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (realpathSync(`/proc/${d}/exe`) === realpathSync(APP)) return Number(d);
    } catch {}
  }
  return null;
}

/** The names of the app's descendant processes. */
function descendants(pid) {
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const comm = readFileSync(`/proc/${d}/comm`, 'utf8').trim();
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push([Number(d), comm]);
    } catch {}
  }
  const out = [];
  const todo = [pid];
  while (todo.length) {
    for (const [p, comm] of kids.get(todo.pop()) ?? []) {
      out.push(comm);
      todo.push(p);
    }
  }
  return out;
}

const webProcesses = () => descendants(fx.pid).filter((n) => n.startsWith('WebKitWebProces'));
/**
 * The web engine processes but the network process, which the app keeps while a WebDriver drives
 * it (WebKit ends the automation session with it); the last test checks it goes too, undriven.
 */
const webkitProcesses = () =>
  descendants(fx.pid).filter((n) => n.startsWith('WebKit') && n !== 'WebKitNetworkPr');

/** Makes the window WebDriver talks to the one the app has now (a new one after each open). */
async function attach() {
  const handle = await until('a window to drive', async () => {
    const handles = await session.cmd('GET', '/window/handles');
    return handles.at(-1);
  });
  await session.cmd('POST', '/window', { handle });
  await until('the page to load', () => session.exec(`return document.querySelector('[data-testid="total"]') !== null;`));
}

async function open() {
  assert.ok(desktop('click', fx.items, 'Open CacheWatch'), 'the tray menu entry clicks');
  await until('the window on screen', () => desktop('mapped', TITLE));
  await attach();
}

/** Closes the window as a window manager would, then waits for its web process to go. */
async function closeAndWaitGone() {
  assert.ok(desktop('close', TITLE), 'the close request is sent');
  await until('the window off screen', () => !desktop('mapped', TITLE));
  await until(`no WebKit process after the ${GRACE_SECS} s grace`, () => webkitProcesses().length === 0, {
    tries: 100,
    everyMs: 200,
  });
}

/** The window shows the totals `cachewatch scan --json` reports. */
async function assertContent(what) {
  const expected = scanJson();
  const snap = await until('the snapshot', async () => {
    const r = await invoke('get_snapshot');
    const p = r.ok?.producers.find((x) => x.id === PRODUCER);
    return p && p.items === expected.items && p.allocated_bytes === expected.bytes && r.ok;
  });
  assert.equal(snap.roots[0].allocated_bytes, expected.root, `the root total as ${expected.from} says`);
  // The window may have drawn the snapshot before the engine's, which it follows when pushed.
  const showing = (selector, bytes) => async () => {
    const t = await textOf(selector);
    if (!t) return null;
    const [lo, hi] = parseShown(t);
    return lo <= bytes && bytes <= hi ? t : null;
  };
  const rowSel = `[data-producer="${PRODUCER}"] [data-testid="producer-bytes"]`;
  const row = await until(`${what}: the producer row at ${expected.bytes} B`, showing(rowSel, expected.bytes));
  assertShows(row, expected.bytes, `${what}: the producer row`);
  const total = await until(`${what}: the total`, showing('[data-testid="total"]', snap.total_allocated_bytes));
  assertShows(total, snap.total_allocated_bytes, `${what}: the total`);
}

before(async () => {
  if (SKIP) return;
  assert.ok(existsSync(APP), `${APP} exists (cargo build -p cachewatch-app)`);
  fx.dir = realpathSync(mkdtempSync(join(tmpdir(), 'cachewatch-window-')));
  fx.cache = join(fx.dir, 'cache');
  fx.data = join(fx.dir, 'data');
  for (const d of [fx.cache, fx.data]) mkdirSync(d);
  fx.old = [];
  fx.young = [];
  for (let i = 0; i < 40; i++) fx.old.push(archive(`gpuarchiver-old${i}`, 1 + (i % 3), 20000 + 1000 * i, true));
  for (let i = 0; i < 3; i++) fx.young.push(archive(`gpuarchiver-new${i}`, 2, 50000, false));
  nestedBigDirs(join(fx.cache, 'build-tree'));
  fx.items = join(fx.dir, 'tray-items');
  host = spawn('/usr/bin/python3', [TRAY_HOST, fx.items], { stdio: ['ignore', 'ignore', 'inherit'] });
  await until('the tray host', () => {
    try {
      return /true/.test(
        execFileSync('gdbus', ['call', '--session', '-d', 'org.freedesktop.DBus', '-o', '/org/freedesktop/DBus', '-m', 'org.freedesktop.DBus.NameHasOwner', 'org.kde.StatusNotifierWatcher'], { encoding: 'utf8' }),
      );
    } catch {
      return false;
    }
  });
  const port = await freePort();
  const nativePort = await freePort();
  fx.env = {
    CACHEWATCH_ROOTS: `cache=${fx.cache}`,
    CACHEWATCH_DATA_DIR: fx.data,
    CACHEWATCH_CONFIG: join(fx.dir, 'config.toml'),
    CACHEWATCH_WINDOW_GRACE_SECS: String(GRACE_SECS),
    CACHEWATCH_LOG: 'warn',
    LANG: /^(C|POSIX)?(\..*)?$/.test(process.env.LANG ?? '') ? 'en_US.UTF-8' : process.env.LANG,
  };
  const env = { ...process.env, ...fx.env };
  driver = spawn(
    process.env.TAURI_DRIVER ?? 'tauri-driver',
    ['--port', String(port), '--native-port', String(nativePort), '--native-driver', '/usr/bin/WebKitWebDriver'],
    { env, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const base = `http://127.0.0.1:${port}`;
  await until('tauri-driver', async () => (await fetch(`${base}/status`)).ok);
  // `--show`: WebDriver needs a first window to attach to; the others are opened from the tray.
  session = await Session.create(base, {
    alwaysMatch: { 'tauri:options': { application: APP, args: ['--show', '--no-hide-on-blur'] } },
  });
  fx.pid = await until('the app process', appPid);
  await until('the tray item', () => existsSync(fx.items));
});

after(async () => {
  if (session) await session.close().catch(() => {});
  if (fx.pid) {
    for (let i = 0; i < 50 && existsSync(`/proc/${fx.pid}`); i++) await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(fx.pid, 'SIGKILL');
    } catch {}
  }
  if (host) host.kill('SIGTERM');
  if (driver) {
    driver.kill('SIGTERM');
    setTimeout(() => driver.kill('SIGKILL'), 3000).unref();
  }
  if (fx.dir) rmSync(fx.dir, { recursive: true, force: true });
});

test('each window shows the engine totals, and no web process lives while it is closed', { skip: SKIP }, async () => {
  await until('the first scan', async () => {
    const r = await invoke('get_snapshot');
    return r.ok && r.ok.state !== 'scanning';
  });
  await assertContent('the first window');
  assert.ok(webProcesses().length > 0, `a web process while the window is open: ${descendants(fx.pid)}`);
  for (let round = 1; round <= 3; round++) {
    await closeAndWaitGone();
    assert.deepEqual(webkitProcesses(), [], `round ${round}: no web engine process while closed`);
    // and none comes back on its own
    await new Promise((r) => setTimeout(r, 1500));
    assert.deepEqual(webkitProcesses(), [], `round ${round}: still none 1.5 s later`);
    // the engine goes on without a window: a new item while it is closed shows in the next one
    fx.young.push(archive(`gpuarchiver-closed${round}`, 1, 30000, false));
    await open();
    await assertContent(`window ${round + 1}`);
  }
});

test('the view and a reclaim outlive the window: closed while it runs, reopened, the result is shown', { skip: SKIP }, async () => {
  // a producer's row open and the reclaim scoped to it
  await session.clickFresh(`[data-key="producer-${PRODUCER}"]`);
  await session.clickFresh('label:has([data-key="threshold-86400"])');
  await until('the estimate of the old dirs', async () => {
    const t = await textOf('[data-testid="preview-frees"]');
    return t && new RegExp(`in ${fx.old.length} items$`).test(t);
  });
  const viewBefore = (await invoke('get_ui_state')).ok.view;
  assert.equal(viewBefore.threshold_secs, 86400, 'the threshold is kept in the shell');
  const oldBytes = du(fx.old);
  await session.clickFresh('[data-key="reclaim"]');
  await until('the confirmation', () => session.find('[data-key="dialog-confirm"]'));
  // confirm and close at once: the run goes on in the engine, the window goes
  await session.clickFresh('[data-key="dialog-confirm"]');
  assert.ok(desktop('close', TITLE));
  await until('the window off screen', () => !desktop('mapped', TITLE));
  await until('no web engine process', () => webkitProcesses().length === 0, { tries: 100, everyMs: 200 });
  for (const d of fx.old) await until(`${d} deleted`, () => !existsSync(d));
  for (const d of fx.young) assert.ok(existsSync(d), `${d} kept`);

  await open();
  const result = await until('the result in the new window', () => textOf('[data-testid="result"]'));
  assert.match(result, new RegExp(`${fx.old.length} deleted`));
  assertShows(/Freed ([\d.]+ [KMG]?i?B)/.exec(result)[1], oldBytes, 'the result');
  await until('the new window on the same threshold', () =>
    session.exec(`return document.querySelector('[data-key="threshold-86400"]')?.checked === true;`),
  );
  const state = (await invoke('get_ui_state')).ok;
  assert.equal(state.reclaim.phase, 'done');
  assert.equal(state.reclaim.report.deleted_items, fx.old.length);
  assert.equal(state.view.threshold_secs, 86400);
  assert.deepEqual(state.view.expanded, viewBefore.expanded);
  // the audit rows say the same: one run, the old dirs, their bytes
  const history = (await invoke('reclaim_history', { spanSecs: 3600 })).ok;
  assert.equal(history.runs.length, 1, JSON.stringify(history.runs));
  assert.equal(history.runs[0].deleted_items, fx.old.length);
  assert.equal(history.runs[0].freed_bytes, state.reclaim.report.freed_bytes);
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(join(SHOTS, 'window-reopened-result.png'), await session.screenshotPng());
  await session.clickFresh('[data-key="dialog-done"]');
  await until('the result forgotten once closed', async () => (await invoke('get_ui_state')).ok.reclaim.phase === 'idle');
  await assertContent('after the reclaim');
});

test('undriven, no web engine process at all lives while the window is closed, network process included', { skip: SKIP }, async () => {
  // The WebDriver session ends the driven app; this one is launched as a user would, with its own
  // tray host (the first one lists the gone app's item first).
  await session.close();
  session = null;
  await until('the driven app gone', () => !existsSync(`/proc/${fx.pid}`), { tries: 100, everyMs: 100 }).catch(() => {
    process.kill(fx.pid, 'SIGKILL');
  });
  host.kill('SIGTERM');
  await until('the first tray host gone', () => host.exitCode !== null || host.signalCode !== null);
  fx.items = join(fx.dir, 'tray-items-2');
  host = spawn('/usr/bin/python3', [TRAY_HOST, fx.items], { stdio: ['ignore', 'ignore', 'inherit'] });
  const log = join(fx.dir, 'app.log');
  // The window module's debug lines say whether each closed window's web view was finalized.
  const env = { ...process.env, ...fx.env, CACHEWATCH_LOG: 'info,notify=warn,cachewatch_app::window=debug' };
  delete env.TAURI_WEBVIEW_AUTOMATION;
  const out = openSync(log, 'w');
  let app;
  await until('the tray host', () => {
    try {
      return /true/.test(
        execFileSync('gdbus', ['call', '--session', '-d', 'org.freedesktop.DBus', '-o', '/org/freedesktop/DBus', '-m', 'org.freedesktop.DBus.NameHasOwner', 'org.kde.StatusNotifierWatcher'], { encoding: 'utf8' }),
      );
    } catch {
      return false;
    }
  });
  app = spawn(APP, ['--no-hide-on-blur'], { env, stdio: ['ignore', out, out] });
  fx.pid = app.pid;
  try {
    await until('the tray item', () => existsSync(fx.items));
    const shown = () => (readFileSync(log, 'utf8').match(/window content shown after the open request/g) ?? []).length;
    for (let round = 1; round <= 3; round++) {
      const before = shown();
      assert.ok(desktop('click', fx.items, 'Open CacheWatch'), 'the tray menu entry clicks');
      await until('the window on screen', () => desktop('mapped', TITLE));
      await until(`round ${round}: the page's first content on screen (its window_shown call)`, () => shown() > before);
      const open = descendants(fx.pid);
      assert.ok(open.includes('WebKitWebProces') && open.includes('WebKitNetworkPr'), `round ${round}, open: ${open}`);
      assert.ok(desktop('close', TITLE));
      await until('the window off screen', () => !desktop('mapped', TITLE));
      await until(`round ${round}: no WebKit process (web or network) after the grace`, () =>
        descendants(fx.pid).every((n) => !n.startsWith('WebKit')), { tries: 100, everyMs: 200 });
      await new Promise((r) => setTimeout(r, 1500));
      assert.deepEqual(descendants(fx.pid).filter((n) => n.startsWith('WebKit')), [], `round ${round}: none comes back`);
      // The app asks, once the window is gone, whether its web view object was finalized (a
      // guard in its GObject data, dropped only then): a reference kept anywhere keeps the view,
      // its user content manager and its scripts for the app's life, each cycle adding more.
      const text = readFileSync(log, 'utf8');
      assert.equal((text.match(/the closed window's web view is freed/g) ?? []).length, round, `round ${round}: the view freed`);
      assert.doesNotMatch(text, /web view is still alive/, `round ${round}`);
    }
    assert.equal(app.exitCode, null, 'the app still runs');
    assert.doesNotMatch(readFileSync(log, 'utf8'), /panicked/);
  } finally {
    app.kill('SIGTERM');
    await until('the app gone', () => app.exitCode !== null || app.signalCode !== null).catch(() => app.kill('SIGKILL'));
    fx.pid = null;
  }
});
