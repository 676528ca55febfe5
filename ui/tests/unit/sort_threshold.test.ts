import { describe, expect, it } from 'vitest';
import { countByReason, mergeAlerts, sortProducers, topUnattributed } from '../../src/sort';
import { presetFor, THRESHOLD_PRESETS } from '../../src/threshold';
import type { AlertDto, AlertRule, UnattributedDto } from '../../src/types';
import { producer } from './fixture';

describe('sortProducers', () => {
  it('orders by allocated bytes, then reclaimable, then name', () => {
    const list = [
      producer({ id: 'b', name: 'Beta', allocated_bytes: 100, reclaimable_bytes: 5 }),
      producer({ id: 'a', name: 'Alpha', allocated_bytes: 100, reclaimable_bytes: 5 }),
      producer({ id: 'c', name: 'Gamma', allocated_bytes: 300 }),
      producer({ id: 'd', name: 'Delta', allocated_bytes: 100, reclaimable_bytes: 50 }),
    ];
    expect(sortProducers(list).map((p) => p.id)).toEqual(['c', 'd', 'a', 'b']);
    expect(list.map((p) => p.id)).toEqual(['b', 'a', 'c', 'd']); // input untouched
  });
});

describe('topUnattributed', () => {
  it('keeps the largest, largest first', () => {
    const entries: UnattributedDto[] = [10, 30, 20, 40].map((bytes, i) => ({
      path: `/tmp/e${i}`,
      root_kind: 'temp',
      allocated_bytes: bytes,
      apparent_bytes: bytes,
    }));
    expect(topUnattributed(entries, 2).map((e) => e.path)).toEqual(['/tmp/e3', '/tmp/e1']);
  });
});

describe('mergeAlerts', () => {
  const alert = (id: number, time: number, rule: AlertRule = 'producer-growth'): AlertDto => ({
    id,
    time_unix_secs: time,
    rule,
    producer: 'p',
    title: `t${id}`,
    message: 'm',
    app_message: 'm',
    suggested_reclaim: null,
  });
  it('lists each alert once, newest first', () => {
    const merged = mergeAlerts([alert(2, 200), alert(1, 100)], [alert(3, 300), alert(2, 200)], 10);
    expect(merged.map((a) => a.id)).toEqual([3, 2, 1]);
  });
  it('tells id-0 alerts apart by rule and time', () => {
    const merged = mergeAlerts([alert(0, 100, 'free-disk')], [alert(0, 100, 'free-disk'), alert(0, 100, 'total-limit')], 10);
    expect(merged.map((a) => a.rule)).toEqual(['free-disk', 'total-limit']);
  });
  it('stops at the limit', () => {
    expect(mergeAlerts([alert(1, 1), alert(2, 2), alert(3, 3)], [], 2).map((a) => a.id)).toEqual([3, 2]);
  });
});

describe('countByReason', () => {
  it('counts kept items per reason', () => {
    const kept = [{ reason: 'too-young' as const }, { reason: 'in-use' as const }, { reason: 'too-young' as const }];
    expect([...countByReason(kept)]).toEqual([
      ['too-young', 2],
      ['in-use', 1],
    ]);
  });
});

describe('threshold presets', () => {
  it('has the five presets of the brief', () => {
    expect(THRESHOLD_PRESETS.map((p) => p.secs)).toEqual([300, 3600, 86400, 259200, 604800]);
    expect(presetFor(86400)?.label).toBe('1 d');
    expect(presetFor(5400)).toBeUndefined();
  });
});
