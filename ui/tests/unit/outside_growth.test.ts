import { describe, expect, it } from 'vitest';
import { notableOutsideGrowth } from '../../src/views/outside-growth';
import type { Unexplained } from '../../src/bindings';
import { SNAPSHOT } from '../generated/samples';

const GIB = 1024 ** 3;
const NOW = 1_760_000_000;

function u(over: Partial<Unexplained>): Unexplained {
  return {
    mount: '/',
    from_unix_secs: NOW - 6 * 3600,
    to_unix_secs: NOW,
    free_fall_bytes: 42 * GIB,
    roots_growth_bytes: 1.2 * GIB,
    unexplained_bytes: 40.8 * GIB,
    left_out_secs: 0,
    notable: true,
    message: '',
    ...over,
  };
}

describe('growth outside the roots', () => {
  it('shows only notable volumes, largest first', () => {
    const list = [
      u({ mount: '/a', unexplained_bytes: 2 * GIB }),
      u({ mount: '/b', notable: false, unexplained_bytes: 90 * GIB }),
      u({ mount: '/c', unexplained_bytes: 5 * GIB }),
    ];
    expect(notableOutsideGrowth(list).map((x) => x.mount)).toEqual(['/c', '/a']);
    expect(notableOutsideGrowth(undefined)).toEqual([]);
  });

  it('reads the snapshot the engine sends', () => {
    const [first] = notableOutsideGrowth(SNAPSHOT.unexplained_growth);
    expect(first.mount).toBe('/');
    // The engine's sentence (outside_growth::tests::says_the_fall_the_span_and_what_the_watched_dirs_did).
    expect(first.message).toMatch(/^Free space on \/ fell 42\.0 GiB in 6 h; the watched dirs grew 1\.2 GiB/);
  });
});
