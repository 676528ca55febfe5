import { describe, expect, it } from 'vitest';
import {
  baseName,
  formatAgo,
  formatBytes,
  formatFreeable,
  formatCount,
  formatDuration,
  formatEta,
  formatObservedGrowth,
  formatEtaBasis,
  formatSignedBytes,
} from '../../src/format';

describe('formatBytes (binary units)', () => {
  it('keeps bytes below one KiB whole', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1)).toBe('1 B');
    expect(formatBytes(1023)).toBe('1023 B');
  });
  it('uses 1024, not 1000, per step', () => {
    expect(formatBytes(1024)).toBe('1.0 KiB');
    expect(formatBytes(1000)).toBe('1000 B');
    expect(formatBytes(1536)).toBe('1.5 KiB'); // 1536 / 1024 = 1.5
    expect(formatBytes(1048576)).toBe('1.0 MiB'); // 1024²
    expect(formatBytes(1073741824)).toBe('1.0 GiB'); // 1024³
    expect(formatBytes(1099511627776)).toBe('1.0 TiB'); // 1024⁴
  });
  it('drops the decimal from 100 of a unit up', () => {
    expect(formatBytes(150 * 1048576)).toBe('150 MiB');
    expect(formatBytes(99.94 * 1048576)).toBe('99.9 MiB');
    expect(formatBytes(99.96 * 1048576)).toBe('100 MiB'); // rounds to 100.0: no decimal
  });
  it('moves up a unit when rounding reaches 1024', () => {
    // 1023.7 KiB rounds to 1024 KiB, which is shown as 1.0 MiB.
    expect(formatBytes(Math.round(1023.7 * 1024))).toBe('1.0 MiB');
  });
  it('formats a real du -k figure', () => {
    // 10 GiB + 256 MiB = 10.25 GiB = 11005853696 bytes.
    expect(formatBytes(11005853696)).toBe('10.3 GiB');
    // 4 KiB blocks: 3 blocks as du -k reports them.
    expect(formatBytes(3 * 4096)).toBe('12.0 KiB');
  });
  it('signs growth', () => {
    expect(formatSignedBytes(1610612736)).toBe('+1.5 GiB');
    expect(formatSignedBytes(-200 * 1048576)).toBe('−200 MiB');
    expect(formatSignedBytes(0)).toBe('0 B');
  });
  it('says — for a value that is not a number', () => {
    expect(formatBytes(Number.NaN)).toBe('—');
  });
});

describe('formatDuration', () => {
  it('uses at most two adjacent units, rounded down', () => {
    expect(formatDuration(0)).toBe('0 s');
    expect(formatDuration(45)).toBe('45 s');
    expect(formatDuration(300)).toBe('5 min');
    expect(formatDuration(3600)).toBe('1 h');
    expect(formatDuration(5400)).toBe('1 h 30 min');
    expect(formatDuration(5459)).toBe('1 h 30 min');
    expect(formatDuration(86400)).toBe('1 d');
    expect(formatDuration(2 * 86400 + 4 * 3600 + 59)).toBe('2 d 4 h');
    expect(formatDuration(86400 + 300)).toBe('1 d'); // 5 min is not adjacent to days
    expect(formatDuration(7 * 86400)).toBe('7 d');
    expect(formatDuration(30 * 86400)).toBe('30 d');
  });
  it('says — for a negative duration', () => {
    expect(formatDuration(-1)).toBe('—');
  });
});

describe('formatEta', () => {
  it('says when the disk is full', () => {
    expect(formatEta(null)).toBe('not filling');
    expect(formatEta(30)).toBe('full in < 1 min');
    expect(formatEta(3 * 86400 + 4 * 3600)).toBe('full in 3 d 4 h');
    expect(formatEta(90 * 60)).toBe('full in 1 h 30 min');
  });
});

describe('observed growth, the ETA basis and counts', () => {
  // Two minutes into a leak the row said "+31.6 GiB/day": say what was observed.
  it('says growth over the span observed, never per day', () => {
    // "no history" sat beside a sparkline that drew the history: say what is missing.
    expect(formatObservedGrowth(null)).toBe('growth not measured yet');
    expect(formatObservedGrowth({ bytes: 105 * 1048576, items: 40, span_secs: 180 })).toBe(
      '+105 MiB in the last 3 min',
    );
    expect(formatObservedGrowth({ bytes: 0, items: 0, span_secs: 7200 })).toBe('no change in the last 2 h');
    expect(formatObservedGrowth({ bytes: -3 * 1048576, items: -1, span_secs: 86400 })).toBe(
      '−3.0 MiB in the last 1 d',
    );
  });
  it('gives no ETA for a growing total without a steady trend, and states the span of one', () => {
    expect(formatEta(null, { bytes: 105 * 1048576, items: 40, span_secs: 120 })).toBe('no steady trend yet');
    expect(formatEta(null, { bytes: 0, items: 0, span_secs: 120 })).toBe('not filling');
    expect(formatEtaBasis(2 * 3600)).toBe('steady over 2 h');
    expect(formatEtaBasis(null)).toBe('');
  });
  it('formats counts with separators and plurals', () => {
    expect(formatCount(1, 'item')).toBe('1 item');
    expect(formatCount(0, 'item')).toBe('0 items');
    expect(formatCount(12345, 'item')).toBe('12,345 items');
  });
  it('formats how long ago', () => {
    expect(formatAgo(1000, 1030)).toBe('just now');
    expect(formatAgo(1000, 1000 + 300)).toBe('5 min ago');
    expect(formatAgo(0, 2 * 86400 + 3 * 3600)).toBe('2 d 3 h ago');
  });
  it('takes the last path component', () => {
    expect(baseName('/var/folders/x/T/gpuarchiver-123/')).toBe('gpuarchiver-123');
    expect(baseName('/tmp/a.onnx')).toBe('a.onnx');
    expect(baseName('plain')).toBe('plain');
  });
});

describe('evidenceLabel', () => {
  it('shortens GitHub issues and other URLs', async () => {
    const { evidenceLabel } = await import('../../src/format');
    expect(evidenceLabel('https://github.com/lightvector/KataGo/issues/1234')).toBe('lightvector/KataGo#1234');
    expect(evidenceLabel('https://github.com/microsoft/onnxruntime/pull/99')).toBe('microsoft/onnxruntime#99');
    expect(evidenceLabel('https://developer.apple.com/forums/thread/12345')).toBe('developer.apple.com/12345');
    expect(evidenceLabel('not a url')).toBe('not a url');
  });
});

describe('formatFreeable', () => {
  it('is the freeable size alone when it equals the allocated one, else both', () => {
    expect(formatFreeable(2 * 1024 ** 3, 2 * 1024 ** 3)).toBe('2.0 GiB');
    expect(formatFreeable(1024 ** 3, 2 * 1024 ** 3)).toBe('1.0 GiB (2.0 GiB allocated)');
  });
});
