// The window's human text of numbers against the engine's (`cachewatch::units`): the vectors in
// ../generated/human.ts are written by `cargo test -p cachewatch-app --lib bindings` from the
// Rust functions, so a rule changed on one side only fails here.
import { describe, expect, it } from 'vitest';
import { formatBytes, formatCount, formatDuration } from '../../src/format';
import { BYTES, COUNTS, DURATIONS } from '../generated/human';

describe('the engine’s human text, in the window', () => {
  it('formats bytes as units::format_bytes', () => {
    for (const [n, text] of BYTES) expect([n, formatBytes(n)]).toEqual([n, text]);
  });

  it('formats durations as units::format_duration', () => {
    for (const [secs, text] of DURATIONS) expect([secs, formatDuration(secs)]).toEqual([secs, text]);
  });

  it('formats counts as units::format_count_of', () => {
    for (const [n, text] of COUNTS) expect([n, formatCount(n, 'item')]).toEqual([n, text]);
  });
});
