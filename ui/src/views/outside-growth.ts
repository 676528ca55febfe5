// The growth-outside-the-roots card: free space fell by much more than the watched
// dirs grew, so something outside them is growing. Shown in the banner, one line per volume the
// engine marked `notable` (thresholds: `[alerts] unexplained_growth_*` in the config).
import { h } from '../dom';
import type { Unexplained } from '../bindings';

/** The notable volumes of a snapshot, largest unexplained growth first. */
export function notableOutsideGrowth(all: readonly Unexplained[] | undefined): Unexplained[] {
  return (all ?? []).filter((u) => u.notable).sort((a, b) => b.unexplained_bytes - a.unexplained_bytes);
}

/** One banner paragraph per notable volume: the engine's sentence, as `cachewatch status` says it. */
export function renderOutsideGrowth(all: readonly Unexplained[] | undefined): HTMLParagraphElement[] {
  return notableOutsideGrowth(all).map((u) =>
    h('p', { class: 'outside-growth', 'data-mount': u.mount }, u.message),
  );
}
