import { describe, expect, it } from 'vitest';
import { CRASH_LOOP_REPORTS, crashGroupText, isCrashLoop } from '../../src/views/crashes';
import { rootDetail, rootGone, rootTooltip } from '../../src/views/lists';
import type { CrashGroupDto, RootDto } from '../../src/types';

const NOW = 1_760_000_000;
const GIB = 1024 ** 3;

function group(over: Partial<CrashGroupDto>): CrashGroupDto {
  return {
    process: 'ModelWorker',
    signature: 'coreai-ndarray-allocation-cap',
    title: 'CoreAI runtime allocation cap: the process is killed after 16384 outputs',
    count: 1,
    first_unix_secs: NOW - 3600,
    last_unix_secs: NOW - 300,
    report_bytes: 0,
    ...over,
  };
}

function root(over: Partial<RootDto>): RootDto {
  return {
    kind: 'temp',
    path: '/tmp',
    canonical: '/tmp',
    state: 'ok',
    allocated_bytes: 0,
    apparent_bytes: 0,
    items: 0,
    files: 0,
    dirs: 1,
    vanished: 0,
    free_bytes: null,
    purgeable_bytes: null,
    volume_bytes: null,
    mount: null,
    watch_mode: 'events',
    watch_error: null,
    unreadable: 0,
    unreadable_paths: [],
    unwatched_paths: [],
    rescans: 0,
    ...over,
  };
}

describe('crash groups', () => {
  it('highlights a group from 5 reports on (the engine default crash_loop_reports)', () => {
    expect(CRASH_LOOP_REPORTS).toBe(5);
    expect(isCrashLoop(group({ count: 4 }))).toBe(false);
    expect(isCrashLoop(group({ count: 5 }))).toBe(true);
    expect(isCrashLoop(group({ count: 120 }))).toBe(true);
  });
  it('words count, last time, report bytes and the span', () => {
    // 12 reports of 96 KiB = 1179648 B = 1.125 MiB → "1.1 MiB".
    expect(crashGroupText(group({ count: 12, report_bytes: 12 * 98304 }), NOW)).toEqual({
      count: '12 reports',
      last: 'last 5 min ago',
      bytes: '1.1 MiB of reports',
      detail: 'coreai-ndarray-allocation-cap: first 1 h ago, last 5 min ago',
    });
    const once = crashGroupText(
      group({ count: 1, report_bytes: 40960, first_unix_secs: NOW - 30, last_unix_secs: NOW - 30 }),
      NOW,
    );
    expect(once.count).toBe('1 report');
    expect(once.last).toBe('last just now');
    expect(once.bytes).toBe('40.0 KiB of reports');
  });
});

describe('roots line', () => {
  it('shows the mount, the watch mode and the rescans', () => {
    expect(rootDetail(root({ mount: '/', rescans: 0 }))).toBe('on / · events · 0 rescans');
    expect(rootDetail(root({ mount: '/home', watch_mode: 'polling', rescans: 1, unreadable: 2 }))).toBe(
      'on /home · polling · 1 rescan · 2 unreadable paths',
    );
    expect(rootDetail(root({ watch_mode: 'off', rescans: 12345 }))).toBe('mount unknown · not watched · 12,345 rescans');
  });
  it('says when a root is gone, and why, instead of its mount and watch mode', () => {
    const why = 'the root dir was replaced by a symbolic link (or a dir on its path was), which is never followed';
    const linked = root({ state: 'replaced-by-link', watch_mode: 'off', watch_error: why, rescans: 2 });
    expect(rootGone(linked)).toBe('Replaced by a link');
    expect(rootDetail(linked)).toBe('replaced by a link · not watched · 2 rescans');
    expect(rootTooltip(linked).split('\n')).toContain(why);
    expect(rootDetail(root({ state: 'missing', watch_mode: 'off' }))).toBe('missing · not watched · 0 rescans');
    expect(rootGone(root({ state: 'not-a-dir' }))).toBe('Not a dir');
    expect(rootGone(root({}))).toBeNull();
    // A snapshot from an engine without the field: a root that is there.
    const old = root({}) as Partial<RootDto>;
    delete old.state;
    expect(rootGone(old as RootDto)).toBeNull();
  });
  it('puts path, mount, volume, counts and the watch error in the tooltip', () => {
    const tip = rootTooltip(
      root({
        path: '/home/u/.cache',
        mount: '/home',
        free_bytes: 100 * GIB,
        volume_bytes: 1000 * GIB,
        items: 40,
        rescans: 3,
        watch_error: 'inotify watch limit reached',
      }),
    );
    expect(tip.split('\n')).toEqual([
      '/home/u/.cache',
      'mount: /home',
      'volume: 100 GiB free of 1000 GiB',
      '40 items, 3 rescans since start',
      'not watched by events: inotify watch limit reached',
    ]);
    expect(rootTooltip(root({})).split('\n')).toEqual(['/tmp', 'mount: unknown', '0 items, 0 rescans since start']);
  });
});
