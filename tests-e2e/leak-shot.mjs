// Not a test: takes docs/screenshots/leak-two-minutes.png, the real app two minutes into a leak
// (one gpuarchiver dir of 1 MiB every 2 s), to show that growth is said over the span observed
// ("+N MiB in the last 2 min") and that no disk-full ETA is made up from minutes of data.
//
//   dbus-run-session -- xvfb-run -a -s "-screen 0 1280x900x24" node tests-e2e/leak-shot.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, realpathSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session, until } from './webdriver.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const APP = process.env.CACHEWATCH_APP ?? join(REPO, 'target/debug/cachewatch-app');
const LEAK_SECS = Number(process.env.LEAK_SECS ?? 120);

const freePort = () =>
  new Promise((ok) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'cachewatch-leak-')));
const cache = join(dir, 'cache');
const temp = join(dir, 'temp');
for (const d of [cache, temp, join(dir, 'data')]) mkdirSync(d);
let n = 0;
const leak = () => {
  const d = join(cache, 'com.apple.gpuarchiver', `gpuarchiver-${n++}`);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'PersistentState'), Buffer.alloc(1 << 20, 7));
};
leak();
writeFileSync(join(dir, 'config.toml'), '[monitor]\nsample_interval_secs = 1\n');
const port = await freePort();
const driver = spawn(
  'tauri-driver',
  ['--port', String(port), '--native-port', String(await freePort()), '--native-driver', '/usr/bin/WebKitWebDriver'],
  {
    env: {
      ...process.env,
      CACHEWATCH_ROOTS: `temp=${temp},cache=${cache}`,
      CACHEWATCH_DATA_DIR: join(dir, 'data'),
      CACHEWATCH_CONFIG: join(dir, 'config.toml'),
      CACHEWATCH_LOG: 'warn',
      LANG: 'en_US.UTF-8',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  },
);
const base = `http://127.0.0.1:${port}`;
let session;
try {
  await until('tauri-driver', async () => (await fetch(`${base}/status`)).ok);
  session = await Session.create(base, {
    alwaysMatch: { 'tauri:options': { application: APP, args: ['--show', '--no-hide-on-blur'] } },
  });
  const t0 = Date.now();
  while (Date.now() - t0 < LEAK_SECS * 1000) {
    await new Promise((r) => setTimeout(r, 2000));
    leak();
  }
  await new Promise((r) => setTimeout(r, 6000)); // one more sample tick
  const facts = await session.exec(`return [...document.querySelectorAll('.row-facts')].map((e) => e.textContent);`);
  const eta = await session.exec(`return document.querySelector('[data-testid="eta"]').textContent;`);
  console.log(`${n} dirs written; rows: ${JSON.stringify(facts)}; eta: ${eta}`);
  mkdirSync(join(REPO, 'docs/screenshots'), { recursive: true });
  writeFileSync(join(REPO, 'docs/screenshots/leak-two-minutes.png'), Buffer.from(await session.cmd('GET', '/screenshot'), 'base64'));
} finally {
  if (session) await session.close().catch(() => {});
  driver.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
