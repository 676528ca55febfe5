import { describe, expect, it } from 'vitest';
import { humanizeKey, readAlerts } from '../../src/views/settings';
import { previewText, reportText } from '../../src/views/reclaim';
import { plan } from './fixture';
import type { KeptItem } from '../../src/types';

const MIB = 1024 ** 2;

describe('previewText', () => {
  it('says what deleting frees (clones share blocks), with the allocated size beside it', () => {
    const clones = { ...plan('c', [100 * MIB]), planned_freeable_bytes: 4 * MIB };
    expect(previewText(clones).frees).toBe('Frees 4.0 MiB (100 MiB allocated) · 1 item');
  });

  it('sums what a plan frees and counts what it keeps by reason', () => {
    const kept: KeptItem[] = [
      { path: '/tmp/a', producer: 'p', reason: 'too-young', age_secs: 10, needed_secs: 86400 },
      { path: '/tmp/b', producer: 'p', reason: 'owner-alive', pid: 42 },
      { path: '/tmp/c', producer: 'p', reason: 'too-young', age_secs: 20, needed_secs: 86400 },
    ];
    // 512 MiB + 256 MiB + 256 MiB = 1 GiB
    expect(previewText(plan('x', [512 * MIB, 256 * MIB, 256 * MIB], kept))).toEqual({
      frees: 'Frees 1.0 GiB · 3 items',
      keeps: 'Keeps 3 items: 2 too young, 1 owner running',
    });
    expect(previewText(plan('y', []))).toEqual({
      frees: 'Nothing to reclaim at this threshold',
      keeps: 'Keeps nothing',
    });
  });
});

describe('reportText', () => {
  it('lists freed bytes, deleted, kept, already gone and errors', () => {
    expect(
      reportText({
        deleted_items: 1,
        freed_bytes: 3 * MIB,
        kept_items: 1,
        already_gone_items: 2,
        error_count: 1,
        deleted: [{ path: '/tmp/a', producer: 'p', allocated_bytes: 3 * MIB }],
        kept: [{ path: '/tmp/b', producer: 'p', reason: 'changed', what: 'inode' }],
        errors: [{ path: '/tmp/e', message: 'permission denied' }],
      }),
    ).toBe('Freed 3.0 MiB · 1 deleted · 1 kept · 2 already gone · 1 error');
  });
});

describe('settings form', () => {
  it('names fields from their keys', () => {
    expect(humanizeKey('producer_growth_bytes_per_hour')).toBe('Producer growth bytes per hour');
  });
  it('reads values back with their types, nested tables included', () => {
    const base = { limit_bytes: 10, cooldown: '6h', on: true, growth: { items: 5000, window: null } };
    const form: Record<string, string | boolean> = {
      'alerts.limit_bytes': ' 2048 ',
      'alerts.cooldown': '2h',
      'alerts.on': false,
      'alerts.growth.items': '100',
      'alerts.growth.window': '',
    };
    expect(readAlerts(base, (path) => form[path])).toEqual({
      limit_bytes: 2048,
      cooldown: '2h',
      on: false,
      growth: { items: 100, window: null },
    });
    form['alerts.limit_bytes'] = 'lots';
    expect(() => readAlerts(base, (path) => form[path])).toThrow('"lots" is not a number (Limit bytes)');
  });
});
