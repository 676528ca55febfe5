// End-to-end test of the menu-bar app: the real binary (debug build) under Xvfb, driven through
// tauri-driver + WebKitWebDriver, on a fixture tree given as its roots.
//
//   xvfb-run -a -s "-screen 0 1280x900x24" node --test tests-e2e/
//
// Needs: target/debug/cachewatch-app (cargo build -p cachewatch-app, after `npm run build` in ui/),
// tauri-driver on PATH (cargo install tauri-driver --locked), /usr/bin/WebKitWebDriver, `du`.
// Screenshots go to docs/screenshots/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, utimesSync, existsSync, rmSync, realpathSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session, until } from './webdriver.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const APP = process.env.CACHEWATCH_APP ?? join(REPO, 'target/debug/cachewatch-app');
const SHOTS = join(REPO, 'docs/screenshots');
const PRODUCER = 'metal-gpuarchiver';
const TWO_DAYS_AGO = Date.now() / 1000 - 2 * 86400;

const fx = {};
let driver;
let session;

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
    s.on('error', fail);
  });
}

/** One gpuarchiver dir with `files` files of `size` bytes; old ones get mtimes two days back. */
function archive(name, files, size, old) {
  const dir = join(fx.cache, 'com.apple.gpuarchiver', name);
  mkdirSync(dir, { recursive: true });
  for (let f = 0; f < files; f++) {
    const p = join(dir, `f${f}`);
    writeFileSync(p, Buffer.alloc(size, 120));
    if (old) utimesSync(p, TWO_DAYS_AGO, TWO_DAYS_AGO);
  }
  if (old) utimesSync(dir, TWO_DAYS_AGO, TWO_DAYS_AGO);
  return dir;
}

/** Allocated bytes of `paths` as `du -s -c -B1` counts them. */
function du(paths) {
  const out = execFileSync('du', ['-s', '-c', '-B1', ...paths], { encoding: 'utf8' });
  return Number(out.trim().split('\n').at(-1).split(/\s+/)[0]);
}

/** "12.3 KiB" → [low, high] bytes it can stand for at its display precision. */
function parseShown(text) {
  const m = /^([\d.]+) (B|KiB|MiB|GiB)$/.exec(text.trim());
  assert.ok(m, `a byte text: ${JSON.stringify(text)}`);
  const unit = 1024 ** ['B', 'KiB', 'MiB', 'GiB'].indexOf(m[2]);
  const half = (m[1].includes('.') ? 0.05 : 0.5) * unit;
  return [Number(m[1]) * unit - half, Number(m[1]) * unit + half];
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
  await until('tauri-driver', async () => (await fetch(`${base}/status`)).ok);
  session = await Session.create(base, {
    alwaysMatch: { 'tauri:options': { application: APP, args: ['--show', '--no-hide-on-blur'] } },
  });
});

after(async () => {
  if (session) await session.close().catch(() => {});
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
  await shot('window-light');
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

test('reclaim from the window frees exactly the planned items', async () => {
  const oldBytes = du(fx.old);
  await session.click(await session.find('label:has([data-key="threshold-86400"])'));
  await until('the preview', async () => {
    const t = await session.exec(`return document.querySelector('[data-testid="preview-frees"]')?.textContent ?? null;`);
    return t && t.includes('6');
  });
  await session.click(await session.find('[data-key="reclaim"]'));
  const confirm = await until('the confirmation', () => session.find('[data-key="dialog-confirm"]'));
  assert.match(await session.exec(`return document.querySelector('[data-key="dialog-confirm"]').textContent;`), /Delete 6 items/);
  await shot('reclaim-confirm');
  await session.click(confirm);
  const result = await until('the result', () =>
    session.exec(`return document.querySelector('[data-testid="result"]')?.textContent ?? null;`),
  );
  assert.match(result, /6 deleted/);
  const freedText = /Freed ([\d.]+ [KMG]?i?B)/.exec(result)[1];
  const [lo, hi] = parseShown(freedText);
  assert.ok(lo <= oldBytes && oldBytes <= hi, `result says ${freedText}, the old dirs took ${oldBytes} B`);
  await shot('reclaim-result');
  for (const d of fx.old) assert.ok(!existsSync(d), `${d} deleted`);
  for (const d of fx.young) assert.ok(existsSync(d), `${d} kept`);
  assert.ok(existsSync(join(fx.temp, 'unknown-tool.log')), 'unattributed files stay');
});
