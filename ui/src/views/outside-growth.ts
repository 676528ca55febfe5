// The growth-outside-the-roots card (issue 11): free space fell by much more than the watched
// dirs grew, so something outside them is growing. Shown in the banner, one line per volume the
// engine marked `notable` (thresholds: `[alerts] unexplained_growth_*` in the config).
import { h } from '../dom';
import { formatBytes, formatDuration } from '../format';
import type { Unexplained } from '../bindings';

/** The sentence for one volume, as `cachewatch status` says it (with the app's units). */
export function outsideGrowthText(u: Unexplained): string {
  const roots =
    u.roots_growth_bytes < 0
      ? `shrank ${formatBytes(-u.roots_growth_bytes)}`
      : `grew ${formatBytes(u.roots_growth_bytes)}`;
  const span = formatDuration(u.to_unix_secs - u.from_unix_secs);
  const leftOut = u.left_out_secs > 0 ? ` (${formatDuration(u.left_out_secs)} with reclaims left out)` : '';
  return (
    `Free space on ${u.mount} fell ${formatBytes(u.free_fall_bytes)} in ${span}${leftOut}; ` +
    `the watched dirs ${roots}: something outside them is growing (for example /private/tmp).`
  );
}

/** The notable volumes of a snapshot, largest unexplained growth first. */
export function notableOutsideGrowth(all: readonly Unexplained[] | undefined): Unexplained[] {
  return (all ?? []).filter((u) => u.notable).sort((a, b) => b.unexplained_bytes - a.unexplained_bytes);
}

/** One banner paragraph per notable volume. */
export function renderOutsideGrowth(all: readonly Unexplained[] | undefined): HTMLParagraphElement[] {
  return notableOutsideGrowth(all).map((u) =>
    h('p', { class: 'outside-growth', 'data-mount': u.mount }, outsideGrowthText(u)),
  );
}
