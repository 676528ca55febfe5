import { describe, expect, it } from 'vitest';
import { humanizeKey, readAlerts } from '../../src/views/settings';
import { reclaimableText } from '../../src/views/producers';
import { reportText } from '../../src/views/reclaim';
import { estimateText } from '../../src/views/estimate';
import { changedText, emptyText } from '../../src/views/reclaim-dialog';
import { planDiffers, type Estimated } from '../../src/reclaim-state';
import { plan } from './fixture';
import { writerText } from '../../src/views/lists';
import type { KeptItem, ReclaimEstimate, UnattributedGroupDto } from '../../src/types';

const MIB = 1024 ** 2;

describe('estimateText', () => {
  const names: Record<string, string> = { a: 'Alpha', b: 'Beta', c: 'Gamma', d: 'Delta' };
  const nameOf = (id: string) => names[id] ?? id;
  function estimate(producers: [string, number, number][], asOf: number): ReclaimEstimate {
    return {
      threshold_secs: 86400,
      items: producers.reduce((s, [, items]) => s + items, 0),
      allocated_bytes: producers.reduce((s, [, , bytes]) => s + 2 * bytes, 0),
      freeable_bytes: producers.reduce((s, [, , bytes]) => s + bytes, 0),
      producers: producers.map(([producer, items, bytes]) => ({
        producer, items, allocated_bytes: 2 * bytes, freeable_bytes: bytes, oldest_age_secs: 0,
      })),
      as_of_unix_secs: asOf,
    };
  }

  it('says what the histograms give, freeable bytes, per producer most first, and how old it is', () => {
    const now = 1_760_000_000;
    // 512 MiB + 256 MiB + 256 MiB = 1 GiB freeable; 3 + 1 + 1 = 5 items
    const e = estimate([['b', 1, 256 * MIB], ['a', 3, 512 * MIB], ['c', 1, 256 * MIB]], now - 150);
    const text = estimateText(e, now, nameOf);
    expect(text.frees).toBe('About 1.0 GiB freeable in 5 items');
    expect(text.producers.map((p) => `${p.name}: ${p.figures}`)).toEqual([
      'Alpha: 3 items, 512 MiB',
      'Beta: 1 item, 256 MiB',
      'Gamma: 1 item, 256 MiB',
    ]);
    expect(text.asOf).toBe('Estimate as of 2 min ago');
    expect(estimateText(e, now - 140, nameOf).asOf).toBe('Estimate as of just now');
  });

  it('sums the producers past the ones it names', () => {
    const e = estimate([['a', 4, 4 * MIB], ['b', 3, 3 * MIB], ['c', 2, 2 * MIB], ['d', 1, MIB], ['x', 1, MIB]], 10);
    const text = estimateText(e, 70, nameOf, 3);
    // the last two: 1 + 1 items, 1 MiB + 1 MiB
    expect(text.producers.at(-1)).toEqual({ name: '2 more producers', figures: '2 items, 2.0 MiB' });
    expect(text.producers).toHaveLength(4);
    expect(text.asOf).toBe('Estimate as of 1 min ago');
  });

  it('says when there is nothing to take, and gives no age before the first figures', () => {
    expect(estimateText(estimate([], 0), 1_760_000_000, nameOf)).toEqual({
      frees: 'Nothing to reclaim at this threshold',
      producers: [],
      asOf: 'Estimate',
    });
  });
});

describe('the plan dialog texts', () => {
  const request = { producers: [], thresholdSecs: 3600 };
  const shown = (items: number, bytes: number): Estimated => ({
    request,
    estimate: { threshold_secs: 3600, items, allocated_bytes: bytes, freeable_bytes: bytes, producers: [], as_of_unix_secs: 1 },
  });

  it('says the real plan is empty and what the estimate had said', () => {
    const kept: KeptItem[] = [
      { path: '/tmp/a', producer: 'p', reason: 'in-use', pid: 7, open_path: '/tmp/a/f' },
      { path: '/tmp/b', producer: 'p', reason: 'owner-alive', pid: 42 },
    ];
    expect(emptyText(plan('e', [], kept), request, shown(2, 3 * MIB))).toBe(
      'The plan made now finds nothing older than 1 h to delete: 2 items must stay. The estimate said about 2 items, 3.0 MiB; items changed since.',
    );
    // an estimate of another threshold is not compared
    expect(emptyText(plan('e', []), { producers: [], thresholdSecs: 60 }, shown(2, 3 * MIB))).toBe(
      'The plan made now finds nothing older than 1 h to delete.',
    );
  });

  it('tells the confirmation when the plan differs from the estimate of the same request', () => {
    const p = plan('p', [MIB, 2 * MIB]); // 2 items, 3 MiB
    expect(planDiffers(shown(2, 3 * MIB), request, p)).toBe(false);
    expect(planDiffers(shown(3, 3 * MIB), request, p)).toBe(true);
    expect(planDiffers(shown(2, 4 * MIB), request, p)).toBe(true);
    expect(planDiffers(shown(3, 3 * MIB), { producers: ['x'], thresholdSecs: 3600 }, p)).toBe(false);
    expect(changedText(shown(3, 5 * MIB))).toBe('The estimate said about 3 items, 5.0 MiB; items changed since. These are the figures now.');
  });
});

describe('the producer row\'s reclaimable figure', () => {
  it('says its unit (allocated), as the reclaim panel says freeable', () => {
    expect(reclaimableText({ reclaim: 'auto', reclaimable: true, reclaimable_bytes: 3 * MIB })).toBe('3.0 MiB reclaimable (allocated)');
    expect(reclaimableText({ reclaim: 'manual', reclaimable: true, reclaimable_bytes: 0 })).toBe('0 B reclaimable (allocated, manual)');
    expect(reclaimableText({ reclaim: 'auto', reclaimable: false, reclaimable_bytes: MIB })).toBe('never reclaimed');
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

describe('writerText', () => {
  const group = (
    writers: UnattributedGroupDto['writers'],
    evidence: UnattributedGroupDto['evidence'] = [],
  ): UnattributedGroupDto => ({
    shape: '.<hex16>-<digits8>.dylib',
    label: '.<hex16>-<digits8>.dylib',
    root_kind: 'temp',
    root: '/tmp',
    items: 81653,
    allocated_bytes: 190 * 1024 ** 3,
    apparent_bytes: 190 * 1024 ** 3,
    oldest_mtime: null,
    newest_mtime: null,
    examples: [],
    writers,
    evidence,
    confirmed_leak: false,
    history_key: '',
  });

  it('names the first writer with its pid', () => {
    expect(writerText(group([{ pid: 4242, name: 'bun' }]))).toBe('written by bun (pid 4242)');
  });

  it('says nothing without a writer', () => {
    expect(writerText(group([]))).toBe('');
  });

  it('names the writer by its strongest evidence when nothing holds a member', () => {
    const evidence: UnattributedGroupDto['evidence'] = [
      {
        kind: 'pid-in-name',
        name: 'katago',
        exe: '/opt/homebrew/bin/katago',
        app: null,
        agree: 28,
        total: 30,
        orphans: 27,
        alive: false,
        last_seen_unix_secs: 1_765_000_000,
      },
    ];
    expect(writerText(group([], evidence))).toBe('pid in name: katago (28 of 30)');
    expect(writerText(group([{ pid: 4242, name: 'bun' }], evidence))).toBe('written by bun (pid 4242)');
  });
});
