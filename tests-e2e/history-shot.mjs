// Not a test: takes docs/screenshots/producer-chart.png, reclaim-history.png and settings.png from
// the real app, its history database seeded (with sqlite3, beside the running monitor) with four
// hours of samples of the gpuarchiver producer, a reclaim asked for two hours ago and an
// auto-reclaim run one hour ago.
//
//   dbus-run-session -- xvfb-run -a -s "-screen 0 1280x900x24" node tests-e2e/history-shot.mjs
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, realpathSync, utimesSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session, until } from './webdriver.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const APP = process.env.CACHEWATCH_APP ?? join(REPO, 'target/debug/cachewatch-app');
const SHOTS = join(REPO, 'docs/screenshots');
const PRODUCER = 'metal-gpuarchiver';
const MIB = 1024 ** 2;

const freePort = () =>
  new Promise((ok) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'cachewatch-history-')));
const cache = join(dir, 'cache');
const temp = join(dir, 'temp');
const data = join(dir, 'data');
for (const d of [cache, temp, data]) mkdirSync(d);
const longAgo = Date.now() / 1000 - 3 * 86400;
for (let i = 0; i < 24; i++) {
  const d = join(cache, 'com.apple.gpuarchiver', `gpuarchiver-${i}`);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'PersistentState'), Buffer.alloc((1 + (i % 4)) * MIB, 7));
  if (i < 10) {
    utimesSync(join(d, 'PersistentState'), longAgo, longAgo);
    utimesSync(d, longAgo, longAgo);
  }
}
writeFileSync(
  join(dir, 'config.toml'),
  '# the settings panel writes here\n[monitor]\nsample_interval_secs = 300\n\n[alerts]\ntotal_limit_bytes = 21474836480\n',
);

/** Runs `sql` on the history database with the sqlite3 CLI; its output. */
const sql = (text) =>
  execFileSync('sqlite3', ['-cmd', '.timeout 5000', join(data, 'cachewatch.db'), text], { encoding: 'utf8' }).trim();

/** Four hours of samples ending at `bytes`/`items`, with the two reclaims' drops, and the runs. */
function seed(bytes, items) {
  const now = Math.floor(Date.now() / 1000);
  const asked = now - 7200;
  const auto = now - 3600;
  const drop1 = Math.round(bytes * 0.55);
  const drop2 = Math.round(bytes * 0.15);
  sql(`INSERT OR IGNORE INTO series (kind, name, path_text, path_raw) VALUES ('producer', '${PRODUCER}', '', X'');`);
  const id = Number(sql(`SELECT id FROM series WHERE kind = 'producer' AND name = '${PRODUCER}';`));
  const rows = [];
  for (let k = 48; k >= 1; k--) {
    const t = now - k * 300;
    // growing by 70 % of today's size over four hours; what the reclaims took was there before
    const grown = bytes * (1 - 0.7 * (k / 48)) + (t < asked ? drop1 : 0) + (t < auto ? drop2 : 0);
    const b = Math.round(grown);
    rows.push(`(${id}, ${t}, ${b}, ${b}, ${Math.max(1, Math.round((items * b) / bytes))})`);
  }
  sql(`INSERT OR REPLACE INTO samples (series_id, time_unix_secs, allocated_bytes, apparent_bytes, items) VALUES ${rows.join(',')};`);
  const audit = [];
  const row = (t, i, b, outcome) =>
    audit.push(`(${t}, '/gpuarchiver-old${i}', X'', '${PRODUCER}', ${b}, '${outcome}')`);
  for (let i = 0; i < 22; i++) row(asked + (i >> 3), i, Math.round(drop1 / 22), 'deleted');
  row(asked + 3, 90, MIB, 'skipped: in-use');
  row(asked + 3, 91, MIB, 'error: permission denied');
  for (let i = 0; i < 6; i++) row(auto + 1, 100 + i, Math.round(drop2 / 6), 'deleted');
  sql(`INSERT INTO reclaims (time_unix_secs, path_text, path_raw, producer, allocated_bytes, outcome) VALUES ${audit.join(',')};`);
  const run = {
    rule: 'gpuarchiver-hourly',
    trigger: 'interval',
    status: 'done',
    producers: [PRODUCER],
    older_than_secs: 86400,
    started_unix_secs: auto,
    finished_unix_secs: auto + 2,
    planned_items: 6,
    deleted_items: 6,
    freed_bytes: drop2,
    already_gone: 0,
    kept: { 'too-young': 14 },
    errors: 0,
    by_producer: { [PRODUCER]: { items: 6, bytes: drop2 } },
  };
  sql(
    `INSERT INTO auto_reclaim_runs (started_unix_secs, finished_unix_secs, rule, trigger, status, deleted_items, freed_bytes, errors, kept_json, run_json) ` +
      `VALUES (${auto}, ${auto + 2}, 'gpuarchiver-hourly', 'interval', 'done', 6, ${drop2}, 0, '{"too-young":14}', '${JSON.stringify(run)}');`,
  );
}

const port = await freePort();
const driver = spawn(
  'tauri-driver',
  ['--port', String(port), '--native-port', String(await freePort()), '--native-driver', '/usr/bin/WebKitWebDriver'],
  {
    env: {
      ...process.env,
      CACHEWATCH_ROOTS: `temp=${temp},cache=${cache}`,
      CACHEWATCH_DATA_DIR: data,
      CACHEWATCH_CONFIG: join(dir, 'config.toml'),
      CACHEWATCH_LOG: 'warn',
      LANG: 'en_US.UTF-8',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  },
);
const base = `http://127.0.0.1:${port}`;
let session;
const shot = async (name) =>
  writeFileSync(join(SHOTS, `${name}.png`), Buffer.from(await session.cmd('GET', '/screenshot'), 'base64'));
try {
  await until('tauri-driver', async () => (await fetch(`${base}/status`)).ok);
  session = await Session.create(base, {
    alwaysMatch: { 'tauri:options': { application: APP, args: ['--show', '--no-hide-on-blur'] } },
  });
  await session.cmd('POST', '/window/rect', { width: 420, height: 760 }).catch(() => {});
  const p = await until('the first scan', async () => {
    const snap = await session.execAsync(
      `const done = arguments[arguments.length - 1];
       window.__TAURI_INTERNALS__.invoke('get_snapshot').then(done, () => done(null));`,
    );
    return snap && snap.state !== 'scanning' && snap.producers.find((x) => x.id === PRODUCER);
  });
  await until('the history database', async () => sql('PRAGMA user_version;') === '2');
  seed(p.allocated_bytes, p.items);
  mkdirSync(SHOTS, { recursive: true });

  await session.clickFresh(`[data-key="producer-${PRODUCER}"]`);
  await until('the chart', () => session.find(`[data-testid="chart-${PRODUCER}"] canvas`));
  await new Promise((r) => setTimeout(r, 500));
  const over = await session.find(`[data-testid="chart-${PRODUCER}"] .u-over`);
  // the pointer over the chart, a third of the way in: the hover readout
  await session
    .cmd('POST', '/actions', {
      actions: [
        {
          type: 'pointer',
          id: 'mouse',
          parameters: { pointerType: 'mouse' },
          actions: [{ type: 'pointerMove', duration: 0, origin: { 'element-6066-11e4-a52e-4f735466cecf': over }, x: -60, y: 0 }],
        },
      ],
    })
    .catch((e) => console.log(`# no hover: ${e.message}`));
  await session.exec(`document.querySelector('[data-producer="${PRODUCER}"]').scrollIntoView({ block: 'start' });`);
  await new Promise((r) => setTimeout(r, 300));
  console.log(await session.exec(`return document.querySelector('[data-testid="chart-${PRODUCER}"]').textContent;`));
  await shot('producer-chart');

  await session.clickFresh('[data-key="history-toggle"]');
  await until('the past reclaims', () => session.find('[data-testid="history-run"]'));
  await session.exec(`document.getElementById('history').scrollIntoView({ block: 'start' });`);
  await new Promise((r) => setTimeout(r, 300));
  console.log(await session.exec(`return document.getElementById('history').textContent;`));
  await shot('reclaim-history');

  await session.clickFresh('[data-key="settings"]');
  await until('the settings', () => session.find('#set-alerts-total_limit_bytes'));
  await new Promise((r) => setTimeout(r, 300));
  await shot('settings');
} finally {
  if (session) await session.close().catch(() => {});
  driver.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
