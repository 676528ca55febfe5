// Fixture helpers shared by the app's end-to-end tests: a free port, Metal archive dirs, `du`,
// and the reading of a byte text the window shows.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, utimesSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** Two days before the test run started, in Unix seconds (an "old" item's mtime). */
export const TWO_DAYS_AGO = Date.now() / 1000 - 2 * 86400;

/** A TCP port nobody listens on right now (127.0.0.1). */
export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
    s.on('error', fail);
  });
}

/**
 * One `gpuarchiver-*` dir under `<cache>/com.apple.gpuarchiver` with `files` files of `size` bytes;
 * old ones get mtimes two days back. Returns its path.
 */
export function archive(cache, name, files, size, old) {
  const dir = join(cache, 'com.apple.gpuarchiver', name);
  mkdirSync(dir, { recursive: true });
  for (let f = 0; f < files; f++) {
    const p = join(dir, `f${f}`);
    writeFileSync(p, Buffer.alloc(size, 120));
    if (old) utimesSync(p, TWO_DAYS_AGO, TWO_DAYS_AGO);
  }
  if (old) utimesSync(dir, TWO_DAYS_AGO, TWO_DAYS_AGO);
  return dir;
}

/** Allocated bytes of `paths` together, as `du -s -c -B1` counts them. */
export function du(paths) {
  const out = execFileSync('du', ['-s', '-c', '-B1', ...paths], { encoding: 'utf8' });
  return Number(out.trim().split('\n').at(-1).split(/\s+/)[0]);
}

/** "12.3 KiB" → [low, high] bytes it can stand for at its display precision. */
export function parseShown(text) {
  const m = /^([\d.]+) (B|KiB|MiB|GiB|TiB)$/.exec((text ?? '').trim());
  assert.ok(m, `a byte text: ${JSON.stringify(text)}`);
  const unit = 1024 ** ['B', 'KiB', 'MiB', 'GiB', 'TiB'].indexOf(m[2]);
  const half = (m[1].includes('.') ? 0.05 : 0.5) * unit;
  return [Number(m[1]) * unit - half, Number(m[1]) * unit + half];
}

/** Asserts that a shown byte text stands for `bytes` (`what` names it in the message). */
export function assertShows(text, bytes, what) {
  const [lo, hi] = parseShown(text);
  assert.ok(lo <= bytes && bytes <= hi, `${what} says ${text}, expected ${bytes} B`);
}
