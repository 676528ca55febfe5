import { describe, expect, it } from 'vitest';
import { freeLabel, minFreeBytes, purgeableOfMinFree } from '../../src/views/header';
import type { Snapshot } from '../../src/types';
import { SNAPSHOT } from '../generated/samples';

const GIB = 1024 ** 3;

function withSpace(space: [number | null, number | null][]): Snapshot {
  const base = SNAPSHOT.roots[0];
  return {
    ...SNAPSHOT,
    roots: space.map(([free, purgeable], i) => ({
      ...base,
      path: `/r${i}`,
      free_bytes: free,
      purgeable_bytes: purgeable,
    })),
  };
}

describe('the header free figure', () => {
  it('names the purgeable part of the smallest free space (Finder counts it as available)', () => {
    // Two volumes: the smaller free space (118.6 GiB, 77.4 of it purgeable) is the one shown.
    const s = withSpace([
      [500 * GIB, 0],
      [118.6 * GIB, 77.4 * GIB],
    ]);
    expect(minFreeBytes(s)).toBe(118.6 * GIB);
    expect(purgeableOfMinFree(s)).toBe(77.4 * GIB);
    expect(freeLabel(s)).toBe('free, 77.4 GiB purgeable');
  });

  it('says only "free" when nothing is purgeable or it is unknown (Linux, older engines)', () => {
    expect(freeLabel(withSpace([[30 * GIB, 0]]))).toBe('free');
    expect(freeLabel(withSpace([[30 * GIB, null]]))).toBe('free');
    expect(freeLabel(withSpace([[null, null]]))).toBe('free');
    // The purgeable part of a larger volume is not the shown volume's.
    expect(freeLabel(withSpace([[10 * GIB, 0], [90 * GIB, 50 * GIB]]))).toBe('free');
  });
});
