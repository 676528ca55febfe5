// The producer chart's data shaping: the axis fitted to the data, columns, tick and hover texts.
import { beforeAll, describe, expect, it } from 'vitest';
import { chartModel, fitAxis, hoverText, MIN_AXIS_SECS, reclaimText, tickText, whenText } from '../../src/chart-data';
import { keptText, runLines } from '../../src/views/reclaim-history';
import { PRODUCER_HISTORY, RECLAIM_RUN_ASKED, RECLAIM_RUN_BY_RULE } from '../generated/samples';

const MIB = 1024 ** 2;
// 2023-11-14 22:13:20 UTC
const NOW = 1_700_000_000;

beforeAll(() => {
  process.env.TZ = 'UTC'; // tick and hover texts are local time
});

describe('the chart axis', () => {
  it('starts at the first sample, not a day before it (a producer seen for an hour fills the chart)', () => {
    expect(fitAxis([NOW - 3600, NOW - 1800], NOW - 86400, NOW)).toEqual([NOW - 3600, NOW]);
  });

  it('spans the whole range without data, and never starts before the range', () => {
    expect(fitAxis([], NOW - 86400, NOW)).toEqual([NOW - 86400, NOW]);
    expect(fitAxis([NOW - 90000], NOW - 86400, NOW)).toEqual([NOW - 86400, NOW]);
  });

  it('is never narrower than ten minutes (one sample alone is still a readable chart)', () => {
    expect(MIN_AXIS_SECS).toBe(600);
    expect(fitAxis([NOW - 30], NOW - 86400, NOW)).toEqual([NOW - 600, NOW]);
  });
});

describe('the chart model', () => {
  it('turns a producer history into uPlot columns, the fitted axis and the reclaims inside it', () => {
    const model = chartModel(PRODUCER_HISTORY);
    expect(model.columns).toEqual([
      [1_699_990_000, 1_699_999_000],
      [300 * MIB, 40 * MIB],
      [300, 40],
    ]);
    expect(model.axis).toEqual([1_699_990_000, NOW]);
    expect(model.reclaims.map((r) => r.time_unix_secs)).toEqual([1_699_995_000, 1_699_998_000]);
  });

  it('sorts samples by time and widens the axis to a reclaim older than the first sample', () => {
    const model = chartModel({
      producer: 'p', from_unix_secs: NOW - 86400, to_unix_secs: NOW,
      samples: [
        { time_unix_secs: NOW - 60, allocated_bytes: 2, items: 2 },
        { time_unix_secs: NOW - 120, allocated_bytes: 1, items: 1 },
      ],
      reclaims: [{ time_unix_secs: NOW - 7200, items: 1, bytes: 5 }],
    });
    expect(model.columns[0]).toEqual([NOW - 120, NOW - 60]);
    expect(model.columns[1]).toEqual([1, 2]);
    expect(model.axis).toEqual([NOW - 7200, NOW]);
  });
});

describe('chart texts', () => {
  it('ticks read the clock, and the day at midnight', () => {
    expect(tickText(NOW)).toBe('22:13');
    expect(tickText(1_699_920_000)).toBe('Tue 14'); // 2023-11-14 00:00 UTC
  });

  it('a time today reads the clock, another day adds the day', () => {
    expect(whenText(NOW - 3600, NOW)).toBe('21:13');
    expect(whenText(NOW - 86400, NOW)).toBe('Mon 13 22:13');
  });

  it('hover says the time, the size and the items of the sample under the pointer', () => {
    const model = chartModel(PRODUCER_HISTORY);
    expect(hoverText(model.columns, 0, NOW)).toBe('19:26 · 300 MiB · 300 items');
    expect(hoverText(model.columns, 1, NOW)).toBe('21:56 · 40.0 MiB · 40 items');
    expect(hoverText(model.columns, null, NOW)).toBe('');
    expect(hoverText(model.columns, 2, NOW)).toBe('');
  });

  it('a reclaim mark says what it freed, when, and which rule ran it', () => {
    const [asked, byRule] = PRODUCER_HISTORY.reclaims;
    expect(reclaimText(asked, NOW)).toBe('Reclaimed 260 items, 260 MiB at 20:50');
    expect(reclaimText(byRule, NOW)).toBe('Reclaimed 3 items, 3.0 MiB at 21:40 (rule metal-daily)');
  });
});

describe('the reclaim history', () => {
  it('says per run who asked, what each producer lost, what was kept and the errors', () => {
    const names = (id: string) => (id === 'metal-gpuarchiver' ? 'Metal gpuarchiver' : id);
    expect(runLines(RECLAIM_RUN_BY_RULE, NOW, names)).toEqual({
      when: '20:50',
      who: 'rule metal-daily',
      freed: '260 MiB freed',
      detail: 'Metal gpuarchiver: 260 items, 260 MiB · kept 2 in use · 1 item already gone',
      errors: '1 error: permission denied',
    });
    expect(runLines(RECLAIM_RUN_ASKED, NOW, names).who).toBe('asked for');
    expect(runLines(RECLAIM_RUN_ASKED, NOW, names).errors).toBe('');
  });

  it('names keep reasons in words, and an unknown one as its code', () => {
    expect(keptText({ 'too-young': 3, 'in-use': 1, zero: 0, 'new-reason': 2 })).toBe('3 too young, 1 in use, 2 new-reason');
  });
});
