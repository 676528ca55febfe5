// The confirm dialog gave counts only. It lists what goes (largest first, with ages),
// what is kept and why, and says that deletion is permanent.
import { describe, expect, it } from 'vitest';
import { goingLines, keptLines, managedLines } from '../../src/views/confirm-list';
import type { KeptItem, PlannedItem } from '../../src/types';
import { keptGroups } from './fixture';

const MIB = 1024 ** 2;

function item(path: string, bytes: number, age: number): PlannedItem {
  return {
    path,
    root: '/tmp',
    producer: 'metal-gpuarchiver',
    allocated_bytes: bytes,
    apparent_bytes: bytes,
    freeable_bytes: bytes,
    age_secs: age,
    dev: 1,
    ino: 1,
    is_symlink: false,
    newest_mtime_unix_secs: 1_700_000_000,
  };
}

/** The preview's view of `items`: all of them as the largest, their count and sums. */
function going(items: PlannedItem[]) {
  return {
    largest: items,
    planned_items: items.length,
    planned_bytes: items.reduce((s, i) => s + i.allocated_bytes, 0),
    planned_freeable_bytes: items.reduce((s, i) => s + i.freeable_bytes, 0),
  };
}

describe('the items a reclaim deletes', () => {
  it('lists them largest first with size and age, and sums the rest', () => {
    const items = [
      item('/tmp/g/gpuarchiver-1', 2 * MIB, 3600),
      item('/tmp/g/gpuarchiver-2', 150 * MIB, 5 * 86400),
      item('/tmp/g/gpuarchiver-3', 5 * MIB, 2 * 86400 + 4 * 3600),
      item('/tmp/g/gpuarchiver-4', 1 * MIB, 600),
    ];
    expect(goingLines(going(items), 2)).toEqual({
      lines: ['gpuarchiver-2 · 150 MiB · 5 d old', 'gpuarchiver-3 · 5.0 MiB · 2 d 4 h old'],
      rest: 'and 2 more items (3.0 MiB)',
    });
    expect(goingLines(going(items)).rest).toBeNull();
  });

  // The preview carries the largest 100 of 700k items; the rest is one line of counts.
  it('sums the items the preview does not carry into the last line', () => {
    const largest = [item('/tmp/g/gpuarchiver-2', 150 * MIB, 5 * 86400), item('/tmp/g/gpuarchiver-3', 5 * MIB, 86400)];
    const plan = { largest, planned_items: 700_000, planned_bytes: 155 * MIB + 699_998 * MIB, planned_freeable_bytes: 155 * MIB + 699_998 * MIB };
    expect(goingLines(plan, 1)).toEqual({
      lines: ['gpuarchiver-2 · 150 MiB · 5 d old'],
      rest: `and 699,999 more items (${(700_003 / 1024).toFixed(0)} GiB)`,
    });
  });
});

describe('the items a reclaim keeps', () => {
  it('groups them by reason, most first, naming a few with why', () => {
    const kept: KeptItem[] = [
      { path: '/tmp/model_77_0_1.mlmodelc', producer: 'katago-coreml', reason: 'owner-alive', pid: 77 },
      { path: '/tmp/g/gpuarchiver-9', producer: 'metal-gpuarchiver', reason: 'too-young', age_secs: 120, needed_secs: 300 },
      { path: '/tmp/model_77_1_1.mlmodelc', producer: 'katago-coreml', reason: 'owner-alive', pid: 77 },
    ];
    expect(keptLines(keptGroups(kept), 1)).toEqual([
      '2 owner running: model_77_0_1.mlmodelc (pid 77), 1 more',
      '1 too young: gpuarchiver-9 (2 min old, needs 5 min)',
    ]);
  });
});

describe('what a reclaim frees where clones share blocks', () => {
  it('says the freeable size first and the allocated size beside it only where they differ', () => {
    const clone = { ...item('/tmp/g/clone', 100 * MIB, 86400), freeable_bytes: 4 * MIB };
    const plain = item('/tmp/g/plain', 10 * MIB, 86400);
    expect(goingLines(going([plain, clone])).lines).toEqual([
      'plain · 10.0 MiB · 1 d old',
      'clone · 4.0 MiB (100 MiB allocated) · 1 d old',
    ]);
    expect(goingLines(going([plain, clone]), 0).rest).toBe('and 2 more items (14.0 MiB (110 MiB allocated))');
  });
});

describe('the native command to prefer', () => {
  const producer = (id: string, items: number, managed_by?: string | null) => ({
    producer: id,
    items,
    allocated_bytes: items * 4096,
    freeable_bytes: items * 4096,
    oldest_age_secs: 90_000,
    managed_by,
  });

  it('names the tool’s command of each planned producer that has one, by id', () => {
    const lines = managedLines([
      producer('swiftpm-cache', 3, 'swift package purge-cache'),
      producer('metal-gpuarchiver', 40, null),
      producer('homebrew-cache', 2, 'brew cleanup'),
      producer('go-build-cache', 0, 'go clean -cache'),
      producer('deno-cache', 1),
    ]);
    expect(lines).toEqual([
      'homebrew-cache is managed by its tool: run `brew cleanup` first; deleting from here stays possible.',
      'swiftpm-cache is managed by its tool: run `swift package purge-cache` first; deleting from here stays possible.',
    ]);
  });
});
