// What the reclaim panel says while the threshold moves: the engine's estimate (from its age
// histograms, no plan made), per producer, marked as an estimate with its age.
import { h } from '../dom';
import { formatAgo, formatBytes, formatCount } from '../format';
import type { ReclaimEstimate } from '../types';

/** How many producers the estimate names; the rest are summed in one line. */
export const PRODUCERS_NAMED = 3;

/** The estimate in words. */
export interface EstimateText {
  /** `About 2.0 GiB freeable in 340 items`, or that there is nothing to reclaim. */
  frees: string;
  /**
   * One line per producer, most freeable first: name `Metal gpuarchiver` and figures
   * `340 items, 2.0 GiB` (the name gives way when the line is too long).
   */
  producers: { name: string; figures: string }[];
  /** `Estimate as of 2 min ago` (`Estimate` before the engine's first figures). */
  asOf: string;
}

/**
 * The estimate in words at `nowUnixSecs` (the engine's clock), producers named by `nameOf`. Sizes
 * are freeable bytes (what deleting frees: allocated less blocks shared with clones).
 */
export function estimateText(
  estimate: ReclaimEstimate,
  nowUnixSecs: number,
  nameOf: (id: string) => string,
  named = PRODUCERS_NAMED,
): EstimateText {
  const frees =
    estimate.items === 0
      ? 'Nothing to reclaim at this threshold'
      : `About ${formatBytes(estimate.freeable_bytes)} freeable in ${formatCount(estimate.items, 'item')}`;
  const sorted = [...estimate.producers].sort(
    (a, b) => b.freeable_bytes - a.freeable_bytes || b.items - a.items || a.producer.localeCompare(b.producer),
  );
  const shown = sorted.slice(0, named);
  const producers = shown.map((p) => ({
    name: nameOf(p.producer),
    figures: `${formatCount(p.items, 'item')}, ${formatBytes(p.freeable_bytes)}`,
  }));
  const rest = sorted.slice(named);
  if (rest.length > 0) {
    const items = rest.reduce((s, p) => s + p.items, 0);
    const bytes = rest.reduce((s, p) => s + p.freeable_bytes, 0);
    producers.push({
      name: formatCount(rest.length, 'more producer'),
      figures: `${formatCount(items, 'item')}, ${formatBytes(bytes)}`,
    });
  }
  const asOf =
    estimate.as_of_unix_secs > 0 ? `Estimate as of ${formatAgo(estimate.as_of_unix_secs, nowUnixSecs)}` : 'Estimate';
  return { frees, producers, asOf };
}

/** The estimate's elements for the panel's preview area. */
export function estimateElements(
  estimate: ReclaimEstimate,
  nowUnixSecs: number,
  nameOf: (id: string) => string,
): HTMLElement[] {
  const text = estimateText(estimate, nowUnixSecs, nameOf);
  const out: HTMLElement[] = [
    h(
      'span',
      {
        class: 'frees',
        'data-testid': 'preview-frees',
        title: estimate.items === 0 ? null : `${formatBytes(estimate.allocated_bytes)} allocated`,
      },
      text.frees,
    ),
  ];
  if (text.producers.length > 0) {
    const list = h('ul', { class: 'estimate-producers', 'aria-label': 'By producer', 'data-testid': 'preview-producers' });
    for (const line of text.producers) {
      list.appendChild(
        h('li', { title: `${line.name}: ${line.figures}` }, h('span', { class: 'name' }, `${line.name}: `), h('span', { class: 'figures' }, line.figures)),
      );
    }
    out.push(list);
  }
  out.push(
    h(
      'span',
      {
        class: 'as-of',
        'data-testid': 'preview-asof',
        // the panel's live region announces a new estimate, not each minute of its age
        'aria-live': 'off',
        title: 'From the engine\u2019s age histograms; Reclaim makes the real plan, checking each item.',
      },
      text.asOf,
    ),
  );
  return out;
}
