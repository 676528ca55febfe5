// End-to-end test of the menu-bar app: the real binary (debug build) under Xvfb, driven through
// tauri-driver + WebKitWebDriver, on a fixture tree given as its roots.
//
//   xvfb-run -a -s "-screen 0 1280x900x24" node --test tests-e2e/
//
// Needs: target/debug/cachewatch-app (cargo build -p cachewatch-app, after `npm run build` in ui/),
// tauri-driver on PATH (cargo install tauri-driver --locked), /usr/bin/WebKitWebDriver, `du`, and
// for the notification test dunst + dunstctl on a D-Bus session bus (run under dbus-run-session).
// Screenshots go to docs/screenshots/ (the X screen ones need ImageMagick's `import`, `xwininfo`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, rmSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session, until } from './webdriver.mjs';
import { freePort, archive as makeArchive, du, parseShown, assertShows } from './fixture.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const APP = process.env.CACHEWATCH_APP ?? join(REPO, 'target/debug/cachewatch-app');
const SHOTS = join(REPO, 'docs/screenshots');
const PRODUCER = 'metal-gpuarchiver';
/** Items a producer must gain within the window to fire `producer-growth` (the test config's). */
const GROWTH_ITEMS = 5;

/** `cmd` on PATH, or null. */
function which(cmd) {
  try {
    return execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

const DUNST = which('dunst') && which('dunstctl');
const NO_DUNST = DUNST
  ? process.env.DBUS_SESSION_BUS_ADDRESS
    ? false
    : 'no D-Bus session bus (run under dbus-run-session)'
  : 'dunst is not installed (apt-get install dunst)';

const fx = {};
/** One archive in this test's cache root (see `fixture.mjs`). */
const archive = (name, files, size, old) => makeArchive(fx.cache, name, files, size, old);
let driver;
let driverBase;
let session;
let dunst;

/** The text of the first element matching `css`, or null. */
const textOf = (css) => session.exec(`return document.querySelector(arguments[0])?.textContent ?? null;`, css);

/** "About 12.3 KiB freeable in 6 items" → [bytes text, items]; null for another text. */
function parseEstimate(text) {
  const m = /^About ([\d.]+ [KMG]?i?B) freeable in ([\d,]+) items?$/.exec(text ?? '');
  return m ? [m[1], Number(m[2].replace(/,/g, ''))] : null;
}

/** "Deletes 6 items older than 1 d, freeing 12.3 KiB." → [bytes text, items]. */
function parseSummary(text) {
  const m = /^Deletes ([\d,]+) items? older than .*, freeing ([\d.]+ [KMG]?i?B)\.$/.exec(text ?? '');
  assert.ok(m, `a confirmation summary: ${JSON.stringify(text)}`);
  return [m[2], Number(m[1].replace(/,/g, ''))];
}

const rowBytes = () =>
  session.exec(
    `const e = document.querySelector('[data-producer="${PRODUCER}"] [data-testid="producer-bytes"]');
     return e ? e.textContent : null;`,
  );

const invoke = (cmd, args = {}) =>
  session.execAsync(
    `const done = arguments[arguments.length - 1];
     window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1])
       .then((v) => done({ ok: v }), (e) => done({ err: e }));`,
    cmd,
    args,
  );

async function shot(name) {
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(join(SHOTS, `${name}.png`), await session.screenshotPng());
  // the whole X screen too, as the user would see the window
  try {
    execFileSync('import', ['-window', 'root', join(SHOTS, `${name}-screen.png`)]);
  } catch (e) {
    console.log(`# no X screenshot (${e.message.split('\n')[0]})`);
  }
}

/** A `pgrep -f` / `pkill -f` pattern of a process started as `path` (with or without args). */
function commandPattern(path) {
  return `^${path.replace(/[.+]/g, '\\$&')}( |$)`;
}

/** Whether a process runs the executable `path` (`pgrep -f`, read only). */
function running(path) {
  try {
    execFileSync('pgrep', ['-f', commandPattern(path)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The D-Bus name the app's single-instance plugin owns (its identifier + `.SingleInstance`). */
const SINGLE_INSTANCE = 'io.github.cachewatch.app.SingleInstance';

/** Whether the session bus has an owner for `name` (false without a bus). */
function busHas(name) {
  try {
    const out = execFileSync(
      'dbus-send',
      ['--session', '--print-reply', '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus.NameHasOwner', `string:${name}`],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    return /boolean true/.test(out);
  } catch {
    return false;
  }
}

/** Runs dunstctl with `args`; its stdout. */
const dunstctl = (...args) => execFileSync('dunstctl', args, { encoding: 'utf8' }).trim();

/** Starts dunst on this X display and session bus, notifications staying until closed. */
async function startDunst() {
  const rc = join(fx.dir, 'dunstrc');
  writeFileSync(
    rc,
    `[global]
    monitor = 0
    follow = none
    width = 440
    height = 300
    origin = top-right
    offset = 16x16
    notification_limit = 3
    font = DejaVu Sans 10
    markup = full
    format = "<b>%s</b>\\n%b"
    padding = 12
    horizontal_padding = 14
    frame_width = 1
    frame_color = "#c7c7cc"
    corner_radius = 0
    icon_position = off
    show_indicators = no
    separator_height = 1

[urgency_low]
    background = "#fbfbfd"
    foreground = "#1d1d1f"
    timeout = 0

[urgency_normal]
    background = "#fbfbfd"
    foreground = "#1d1d1f"
    timeout = 0

[urgency_critical]
    background = "#fbfbfd"
    foreground = "#1d1d1f"
    timeout = 0
`,
  );
  dunst = spawn('dunst', ['-config', rc], { stdio: ['ignore', 'ignore', 'inherit'] });
  // it owns org.freedesktop.Notifications (and answers dunstctl) once it runs
  await until('dunst on the session bus', () => dunstctl('is-paused') === 'false');
}

/** Notifications dunst shows now. */
const displayed = () => Number(dunstctl('count', 'displayed'));

/** The X screen cropped to dunst's window, as `name`.png; a printed reason when it cannot. */
function notificationShot(name) {
  try {
    const tree = execFileSync('xwininfo', ['-root', '-tree'], { encoding: 'utf8' });
    const wins = tree
      .split('\n')
      .filter((l) => /"Dunst"/i.test(l))
      .map((l) => /(\d+)x(\d+)[+-]-?\d+[+-]-?\d+\s+\+(-?\d+)\+(-?\d+)/.exec(l))
      .filter(Boolean)
      .map((m) => m.slice(1).map(Number))
      .sort((a, b) => b[0] * b[1] - a[0] * a[1]);
    assert.ok(wins.length && wins[0][0] > 1 && wins[0][1] > 1, "dunst's window in the X tree");
    const [w, h, x, y] = wins[0];
    const geom = `${w}x${h}+${x}+${y}`;
    mkdirSync(SHOTS, { recursive: true });
    execFileSync('import', ['-window', 'root', '-crop', geom, '+repage', join(SHOTS, `${name}.png`)]);
  } catch (e) {
    console.log(`# no notification screenshot (${e.message.split('\n')[0]})`);
  }
}

before(async () => {
  assert.ok(existsSync(APP), `${APP} exists (cargo build -p cachewatch-app)`);
  fx.dir = realpathSync(mkdtempSync(join(tmpdir(), 'cachewatch-e2e-')));
  fx.temp = join(fx.dir, 'temp');
  fx.cache = join(fx.dir, 'cache');
  fx.data = join(fx.dir, 'data');
  for (const d of [fx.temp, fx.cache, fx.data]) mkdirSync(d);
  writeFileSync(join(fx.temp, 'unknown-tool.log'), Buffer.alloc(20000, 65));
  fx.old = [];
  fx.young = [];
  for (let i = 0; i < 6; i++) fx.old.push(archive(`gpuarchiver-old${i}`, 1 + (i % 3), 30000 * (i + 1), true));
  for (let i = 0; i < 3; i++) fx.young.push(archive(`gpuarchiver-new${i}`, 2, 50000, false));
  fx.firstItems = fx.old.length + fx.young.length;
  // History sampled every second (the monitor samples on its 5 s tick), and a producer-growth alert
  // at GROWTH_ITEMS new items within an hour; the disk rules are off so that only the alert the
  // notification test provokes can fire, whatever the machine's free space.
  writeFileSync(
    join(fx.dir, 'config.toml'),
    `[monitor]\nsample_interval_secs = 1\n\n[alerts]\nproducer_growth_items = ${GROWTH_ITEMS}\n` +
      `producer_growth_window = "1h"\nfree_disk_min_bytes = 0\ndisk_full_eta_min_hours = 0\n`,
  );
  if (!NO_DUNST) startDunst();

  const port = await freePort();
  const nativePort = await freePort();
  const env = {
    ...process.env,
    CACHEWATCH_ROOTS: `temp=${fx.temp},cache=${fx.cache}`,
    CACHEWATCH_DATA_DIR: fx.data,
    CACHEWATCH_CONFIG: join(fx.dir, 'config.toml'),
    CACHEWATCH_LOG: 'warn',
    // WebKitGTK under LANG=C hands JavaScriptCore the locale "C", and Intl calls without a locale
    // then throw "invalid language tag: C", so the page script dies; CI runs with LANG unset.
    LANG: /^(C|POSIX)?(\..*)?$/.test(process.env.LANG ?? '') ? 'en_US.UTF-8' : process.env.LANG,
  };
  driver = spawn(
    process.env.TAURI_DRIVER ?? 'tauri-driver',
    ['--port', String(port), '--native-port', String(nativePort), '--native-driver', '/usr/bin/WebKitWebDriver'],
    { env, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const base = `http://127.0.0.1:${port}`;
  driverBase = base;
  await until('tauri-driver', async () => (await fetch(`${base}/status`)).ok);
  session = await Session.create(base, {
    alwaysMatch: { 'tauri:options': { application: APP, args: ['--show', '--no-hide-on-blur'] } },
  });
});

after(async () => {
  if (session) await session.close().catch(() => {});
  // An app its driver did not stop would outlive the tests and keep the test runner's stderr
  // open, so the runner would never exit: give it 5 s, then kill it.
  for (let i = 0; i < 50 && running(APP); i++) await new Promise((r) => setTimeout(r, 100));
  if (running(APP)) {
    try {
      execFileSync('pkill', ['-KILL', '-f', commandPattern(APP)], { stdio: 'ignore' });
    } catch {}
  }
  if (dunst) dunst.kill('SIGTERM');
  if (driver) {
    driver.kill('SIGTERM');
    const t = setTimeout(() => driver.kill('SIGKILL'), 3000);
    t.unref();
  }
  if (fx.dir) rmSync(fx.dir, { recursive: true, force: true });
});

test('the window shows the producer with the bytes du counts', async () => {
  const expected = du([...fx.old, ...fx.young]);
  const snap = await until('the first scan', async () => {
    const r = await invoke('get_snapshot');
    return r.ok && r.ok.state !== 'scanning' && r.ok.producers.some((p) => p.id === PRODUCER) && r.ok;
  });
  const p = snap.producers.find((x) => x.id === PRODUCER);
  assert.equal(p.items, 9);
  assert.equal(p.allocated_bytes, expected);
  const text = await until('the producer row', rowBytes);
  const [lo, hi] = parseShown(text);
  assert.ok(lo <= expected && expected <= hi, `row shows ${text}, du says ${expected} B`);
  // The estimate at the configured threshold: the old dirs (two days old) when it is at most two
  // days, else nothing; the young ones never.
  const older = snap.threshold_secs <= 2 * 86400 ? fx.old : [];
  const estimate = await until('the estimate in the window', () => textOf('[data-testid="preview-frees"]'));
  if (older.length === 0) {
    assert.equal(estimate, 'Nothing to reclaim at this threshold');
  } else {
    const [bytes, items] = parseEstimate(estimate);
    assert.equal(items, older.length);
    assertShows(bytes, du(older), 'the estimate');
  }
  await shot('window-light');
});

// The first `--show` put the window's top-left at the screen centre, the Reclaim bar
// off-screen.
test('the first window is wholly on the screen', async () => {
  const rect = await session.cmd('GET', '/window/rect');
  const [sw, sh] = await session.exec('return [screen.width, screen.height];');
  assert.ok(rect.width > 0 && rect.height > 0, `a window: ${JSON.stringify(rect)}`);
  assert.ok(rect.x >= 0 && rect.y >= 0, `its top-left on screen: ${JSON.stringify(rect)}`);
  assert.ok(rect.x + rect.width <= sw && rect.y + rect.height <= sh, `its bottom-right on the ${sw}x${sh} screen: ${JSON.stringify(rect)}`);
  const bar = await session.exec(
    `const r = document.querySelector('[data-key="reclaim"]').getBoundingClientRect();
     return [r.bottom, window.innerHeight];`,
  );
  assert.ok(bar[0] > 0 && bar[0] <= bar[1], `the Reclaim button inside the window: ${bar}`);
});

test('a file created in a watched root appears in the window', async () => {
  fx.young.push(archive('gpuarchiver-late', 3, 400000, false));
  const expected = du([...fx.old, ...fx.young]);
  await until('the new item in the snapshot', async () => {
    const r = await invoke('get_snapshot');
    const p = r.ok?.producers.find((x) => x.id === PRODUCER);
    return p && p.items === 10 && p.allocated_bytes === expected;
  });
  await until('the row to show the new total', async () => {
    const [lo, hi] = parseShown(await rowBytes());
    return lo <= expected && expected <= hi;
  });
});

test('the threshold shows the estimate; Reclaim plans, confirms and frees exactly the old items', async () => {
  const oldBytes = du(fx.old);
  // The engine's estimate at 1 d, from its histograms: the six old dirs, to the byte.
  const est = await until('the estimate of the old dirs', async () => {
    const r = await invoke('estimate_reclaim', { producers: [], thresholdSecs: 86400 });
    return r.ok && r.ok.items === fx.old.length && r.ok;
  });
  assert.equal(est.allocated_bytes, oldBytes, 'the estimate counts the bytes du counts');
  assert.deepEqual(est.producers.map((p) => [p.producer, p.items]), [[PRODUCER, fx.old.length]]);
  await session.clickFresh('label:has([data-key="threshold-86400"])');
  const shown = await until('the estimate in the window', async () => {
    const e = parseEstimate(await textOf('[data-testid="preview-frees"]'));
    return e && e[1] === fx.old.length && e;
  });
  assertShows(shown[0], oldBytes, 'the estimate');
  const rows = await session.exec(
    `return [...document.querySelectorAll('[data-testid="preview-producers"] li')].map((l) => l.textContent);`,
  );
  const name = (await invoke('get_snapshot')).ok.producers.find((p) => p.id === PRODUCER).name;
  assert.deepEqual(rows, [`${name}: ${fx.old.length} items, ${shown[0]}`]);
  assert.match(await textOf('[data-testid="preview-asof"]'), /^Estimate as of (just now|\d+ min ago)$/);
  // No plan was made for the estimate: the threshold control never plans.
  await session.clickFresh('[data-key="reclaim"]');
  await until('the confirmation of the real plan', () => session.find('[data-key="dialog-confirm"]'));
  assert.match(await textOf('[data-key="dialog-confirm"]'), new RegExp(`^Delete ${fx.old.length} items$`));
  const [planned, plannedItems] = parseSummary(await textOf('[data-testid="confirm-summary"]'));
  assert.equal(plannedItems, fx.old.length);
  assertShows(planned, oldBytes, 'the confirmation');
  assert.equal(planned, shown[0], 'the plan says what the estimate said');
  assert.equal(await textOf('[data-testid="confirm-changed"]'), null, 'no change since the estimate');
  const listed = await session.exec(
    `return [...document.querySelectorAll('[data-testid="confirm-items"] li')].map((l) => l.textContent.split(' · ')[0]);`,
  );
  assert.deepEqual(listed.sort(), fx.old.map((d) => d.split('/').at(-1)).sort(), 'the confirmation lists the old dirs');
  await shot('reclaim-confirm');
  await session.clickFresh('[data-key="dialog-confirm"]');
  const result = await until('the result', () => textOf('[data-testid="result"]'));
  assert.match(result, new RegExp(`${fx.old.length} deleted`));
  const freedText = /Freed ([\d.]+ [KMG]?i?B)/.exec(result)[1];
  assertShows(freedText, oldBytes, 'the result');
  await shot('reclaim-result');
  for (const d of fx.old) assert.ok(!existsSync(d), `${d} deleted`);
  for (const d of fx.young) assert.ok(existsSync(d), `${d} kept`);
  assert.ok(existsSync(join(fx.temp, 'unknown-tool.log')), 'unattributed files stay');
});

test('an alert reaches the notification daemon', { skip: NO_DUNST }, async () => {
  const snap = (await invoke('get_snapshot')).ok;
  const p = snap.producers.find((x) => x.id === PRODUCER);
  assert.equal(displayed(), 0, 'no notification before the burst');
  // A burst of new dirs: the producer then holds GROWTH_ITEMS more items than at the first history
  // sample (fx.firstItems; the reclaim above removed some since).
  let count = p.items;
  let n = 0;
  const add = () => {
    archive(`gpuarchiver-burst${n++}`, 1, 4096, false);
    count++;
  };
  while (count < fx.firstItems + GROWTH_ITEMS) add();
  const seen = () =>
    invoke('get_snapshot').then((r) => r.ok?.producers.find((x) => x.id === PRODUCER)?.items === count);
  await until('the burst in the snapshot', seen);
  // Alerts are evaluated on each change against the last history sample (taken on the monitor's
  // tick), growth measured from an earlier sample. History keeps one sample a minute (the last),
  // so growth shows once a minute boundary passed: one more dir per round until a change comes
  // after a sample that holds GROWTH_ITEMS more than the base (up to about two minutes).
  await until(
    'the notification on screen',
    async () => {
      if (displayed() > 0) return true;
      add();
      await until('the new dir in the snapshot', seen, { tries: 50, everyMs: 100 });
      return displayed() > 0;
    },
    { tries: 150, everyMs: 500 },
  );
  notificationShot('notification');

  // what the daemon received, read back from its history (shown ones enter it when closed)
  dunstctl('close-all');
  const history = await until('the closed notification in the history', () => {
    const h = JSON.parse(dunstctl('history')).data[0];
    return h.length > 0 && h;
  });
  assert.equal(history.length, 1, `one notification, got ${JSON.stringify(history)}`);
  const summary = history[0].summary.data;
  const body = history[0].body.data;
  assert.ok(summary.includes(p.name), `the title names the producer: ${summary}`);
  // No command to run in the app's notification (the window offers the action).
  assert.ok(!body.includes('cachewatch reclaim'), `no CLI command in the body: ${body}`);
  const m = /grew .* and (\d+) items in .*; now .* in (\d+) items\./.exec(body);
  assert.ok(m, `the body gives the growth: ${body}`);
  const [grew, items] = [Number(m[1]), Number(m[2])];
  assert.ok(
    items >= fx.firstItems + GROWTH_ITEMS && items <= count,
    `${items} items when it fired: between the limit ${fx.firstItems + GROWTH_ITEMS} and the ${count} made`,
  );
  // the base is an earlier history sample (compaction keeps one a minute, so which one varies)
  assert.ok(grew >= GROWTH_ITEMS && grew <= items, `grew ${grew} items: at least the limit, at most all`);
  // the same alert the app recorded and sent to its window
  const alerts = (await invoke('get_snapshot')).ok.alerts;
  const mine = alerts.find((a) => a.rule === 'producer-growth' && a.producer === PRODUCER);
  assert.ok(mine, `the app recorded the alert: ${JSON.stringify(alerts)}`);
  assert.equal(summary, mine.title);
  assert.ok(mine.message.startsWith(body.split(' Upstream:')[0]), `the window's alert is the same: ${mine.message}`);
});

// An alert card's button opens the reclaim estimate of its producer alone, and Reclaim
// then plans, confirms and deletes exactly those items (count and bytes), nothing younger.
test("an alert's Reclaim button deletes what its estimate and plan said", async () => {
  // An alert for the producer (the notification test provokes one; without dunst, do it here).
  const alerted = async () =>
    (await invoke('get_snapshot')).ok?.alerts.some((a) => a.rule === 'producer-growth' && a.producer === PRODUCER);
  let n = 0;
  await until(
    'a producer-growth alert',
    async () => {
      if (await alerted()) return true;
      archive(`gpuarchiver-alertburst${n++}`, 1, 4096, false);
      return false;
    },
    { tries: 300, everyMs: 500 },
  );
  // Two old dirs the preview should offer (everything old was reclaimed above).
  const old = [archive('gpuarchiver-alert-old0', 2, 70000, true), archive('gpuarchiver-alert-old1', 1, 90000, true)];
  const oldBytes = du(old);
  await until('the old dirs in the snapshot', async () => {
    const p = (await invoke('get_snapshot')).ok?.producers.find((x) => x.id === PRODUCER);
    return p && p.reclaimable_items === 2;
  });
  // the result of the reclaim above is still up (a modal dialog): close it, and wait until it is
  // gone and the alert card is there. The window re-renders on every snapshot (the alert bursts
  // above keep them coming), so each click finds its element afresh (`clickFresh`).
  // Done is found and clicked afresh until the dialog is no longer shown (a closed dialog keeps
  // its nodes; a click on a node the snapshot re-rendered away meanwhile does nothing).
  await until('the result dialog to close', () =>
    session.exec(`const done = document.querySelector('[data-key="dialog-done"]');
      const shown = done !== null && done.offsetParent !== null;
      if (shown) done.click();
      return !shown;`),
  );
  await until('the alert card button', () => session.find('[data-testid="alert-reclaim"]'));
  await session.clickFresh('[data-testid="alert-reclaim"]');
  const estimated = await until('the estimate of the producer alone', async () => {
    const scoped = await session.exec(`return document.querySelector('[data-key="scope-clear"]') !== null;`);
    const e = parseEstimate(await textOf('[data-testid="preview-frees"]'));
    return scoped && e && e[1] === 2 && e;
  });
  assertShows(estimated[0], oldBytes, 'the estimate');
  await session.clickFresh('[data-key="reclaim"]');
  await until('the confirmation', () => session.find('[data-key="dialog-confirm"]'));
  assert.match(await textOf('[data-key="dialog-confirm"]'), /^Delete 2 items$/);
  const [planned, plannedItems] = parseSummary(await textOf('[data-testid="confirm-summary"]'));
  assert.equal(plannedItems, 2);
  assertShows(planned, oldBytes, 'the confirmation');
  await session.clickFresh('[data-key="dialog-confirm"]');
  const result = await until('the result', () => textOf('[data-testid="result"]'));
  assert.match(result, /2 deleted/);
  assert.equal(/Freed ([\d.]+ [KMG]?i?B)/.exec(result)[1], planned, 'freed what the confirmation said');
  for (const d of old) assert.ok(!existsSync(d), `${d} deleted`);
  for (const d of fx.young) assert.ok(existsSync(d), `${d} kept`);
  await session.clickFresh('[data-key="dialog-done"]');
});

// A missing root exited the app with one stderr line nobody sees at login.
test('an app started with a missing root watches the other and says so in the window', async () => {
  await session.close();
  session = null;
  // The single-instance plugin hands a second start to a running first one over D-Bus: start the
  // next app only once the first has exited and the bus has dropped its name (else it forwards
  // its arguments to a dying process and exits, "Message recipient disconnected from message bus
  // without replying", and the new session waits for a window that never comes).
  await until('the first app to exit', () => !running(APP) && !busHas(SINGLE_INSTANCE), { tries: 100, everyMs: 100 });
  const missing = join(fx.dir, 'no-such-dir');
  session = await Session.create(driverBase, {
    alwaysMatch: {
      'tauri:options': {
        application: APP,
        args: ['--show', '--no-hide-on-blur', '--root', `temp=${missing}`, '--root', `cache=${fx.cache}`],
      },
    },
  });
  const snap = await until('the first scan', async () => {
    const r = await invoke('get_snapshot');
    return r.ok && r.ok.state !== 'scanning' && r.ok;
  });
  assert.deepEqual(snap.roots.map((r) => r.path), [fx.cache]);
  assert.ok(snap.errors[0].includes('no-such-dir'), `the notice names the root: ${snap.errors}`);
  const banner = await until('the notice in the window', () =>
    session.exec(`const b = document.getElementById('banner'); return b && !b.hidden ? b.textContent : null;`),
  );
  assert.ok(banner.includes('no-such-dir') && banner.includes('not watched'), banner);
  await until('the estimate in the window', () => textOf('[data-testid="preview-frees"]'));
  await shot('missing-root');
});
