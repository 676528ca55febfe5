// The producer list: one row per producer, largest first, expandable to its notes, evidence
// and largest items.
import { h, replaceChildren } from '../dom';
import {
  baseName,
  evidenceLabel,
  formatBytes,
  formatCount,
  formatDuration,
  formatObservedGrowth,
} from '../format';
import { fitAxis } from '../chart-data';
import { sortProducers } from '../sort';
import type { ProducerDto } from '../types';
import { RANGE_SECS, Sparklines, windowed, type ChartRange } from './chart';

/** What the rows do. */
export interface ProducerActions {
  toggle(id: string): void;
  openEvidence(url: string): void;
  reclaimOnly(id: string): void;
  setRange(range: ChartRange): void;
}

/** What the list shows besides the producers. */
export interface ProducerView {
  expanded: ReadonlySet<string>;
  range: ChartRange;
  nowUnixSecs: number;
  /** The first scan runs: an empty list means "not found yet", not "none". */
  scanning?: boolean;
  /** The chart of an expanded row (`ProducerCharts.element`); none: no chart. */
  detailChart?: (id: string) => HTMLElement;
}

/** Renders the list into `el` (its heading and rows). */
export function renderProducers(
  el: HTMLElement,
  producers: readonly ProducerDto[],
  view: ProducerView,
  charts: Sparklines,
  actions: ProducerActions,
): void {
  const sorted = sortProducers(producers);
  charts.prune(new Set(sorted.map((p) => p.id)));
  const list = h('ul', { class: 'rows', 'aria-label': 'Producers' });
  for (const producer of sorted) {
    list.appendChild(renderRow(producer, view, charts, actions));
  }
  replaceChildren(
    el,
    h(
      'div',
      { class: 'section-head' },
      h('h2', { id: 'producers-title' }, 'Producers'),
      rangeSwitch(view.range, actions),
    ),
    sorted.length === 0
      ? h(
          'p',
          { class: 'empty' },
          view.scanning
            ? 'Producers appear as the scan finishes each root.'
            : 'No known producer has items in the watched roots.',
        )
      : list,
  );
}

function rangeSwitch(range: ChartRange, actions: ProducerActions): HTMLElement {
  const group = h('div', { class: 'segmented small', role: 'group', 'aria-label': 'Chart range' });
  for (const option of ['24h', '7d'] as const) {
    group.appendChild(
      h(
        'button',
        {
          type: 'button',
          'data-key': `range-${option}`,
          'aria-pressed': String(option === range),
          onclick: () => actions.setRange(option),
        },
        option === '24h' ? '24 h' : '7 d',
      ),
    );
  }
  return group;
}

function renderRow(
  p: ProducerDto,
  view: ProducerView,
  charts: Sparklines,
  actions: ProducerActions,
): HTMLElement {
  const expanded = view.expanded.has(p.id);
  const detailsId = `producer-details-${p.id}`;
  const to = view.nowUnixSecs;
  const data = windowed(p.history, view.range, to);
  // The axis starts at the first sample: a producer seen for an hour fills the sparkline.
  const [from] = fitAxis(data[0], to - RANGE_SECS[view.range], to);
  const chart = charts.element(p.id, data, from, to);
  const summary = h(
    'div',
    {
      class: 'row-summary',
      role: 'button',
      tabindex: 0,
      'data-key': `producer-${p.id}`,
      'aria-expanded': String(expanded),
      'aria-controls': detailsId,
      onclick: () => actions.toggle(p.id),
      onkeydown: (event: Event) => onRowKey(event as KeyboardEvent, () => actions.toggle(p.id)),
    },
    h('span', { class: 'chevron', 'aria-hidden': 'true' }, expanded ? '▾' : '▸'),
    h(
      'span',
      { class: 'row-main' },
      h(
        'span',
        { class: 'row-line' },
        h('span', { class: 'row-name' }, p.name),
        h('span', { class: 'row-bytes', 'data-testid': 'producer-bytes' }, formatBytes(p.allocated_bytes)),
      ),
      h(
        'span',
        { class: 'row-line sub' },
        h(
          'span',
          { class: 'row-facts' },
          formatCount(p.items, 'item'),
          ' · ',
          h(
            'span',
            { class: growthClass(p.growth?.bytes ?? null), 'data-testid': 'producer-growth' },
            formatObservedGrowth(p.growth),
          ),
        ),
      ),
      h(
        'span',
        { class: 'row-line sub' },
        h(
          'span',
          { class: 'row-reclaimable', 'data-testid': 'producer-reclaimable', title: RECLAIMABLE_TITLE },
          reclaimableText(p),
        ),
      ),
    ),
    chart,
  );
  return h(
    'li',
    { class: `row${expanded ? ' open' : ''}`, 'data-producer': p.id },
    summary,
    expanded ? renderDetails(p, detailsId, actions, view.detailChart?.(p.id) ?? null) : null,
  );
}

/**
 * What a reclaim at the current threshold would delete of the producer, in allocated bytes (the
 * engine's figure) and said so, beside the reclaim panel's freeable bytes:
 * `2.0 GiB reclaimable (allocated)`, `… (allocated, manual)`, `never reclaimed`.
 */
export function reclaimableText(p: Pick<ProducerDto, 'reclaim' | 'reclaimable' | 'reclaimable_bytes'>): string {
  if (!p.reclaimable) return 'never reclaimed';
  const unit = p.reclaim === 'manual' ? 'allocated, manual' : 'allocated';
  return `${formatBytes(p.reclaimable_bytes)} reclaimable (${unit})`;
}

/** The tooltip of the reclaimable figure: its unit and why it may differ from the panel's. */
export const RECLAIMABLE_TITLE =
  'Allocated bytes of the items a reclaim at the current threshold would delete. The reclaim panel says freeable bytes: less where clones share blocks.';

function growthClass(bytes: number | null): string {
  if (bytes === null || bytes === 0) return 'growth';
  return bytes > 0 ? 'growth up' : 'growth down';
}

function renderDetails(
  p: ProducerDto,
  id: string,
  actions: ProducerActions,
  chart: HTMLElement | null,
): HTMLElement {
  const items = h('ol', { class: 'items', 'aria-label': `Largest items of ${p.name}` });
  for (const item of p.top_items) {
    items.appendChild(
      h(
        'li',
        { title: item.path },
        h('span', { class: 'item-name' }, baseName(item.path)),
        h('span', { class: 'item-bytes' }, formatBytes(item.allocated_bytes)),
        h('span', { class: 'item-age' }, formatDuration(item.age_secs)),
      ),
    );
  }
  const evidence = h('p', { class: 'evidence' });
  p.evidence.forEach((url, index) => {
    if (index > 0) evidence.appendChild(document.createTextNode(' · '));
    evidence.appendChild(
      h(
        'a',
        {
          href: url,
          'data-key': `evidence-${p.id}-${index}`,
          rel: 'noreferrer',
          title: url,
          onclick: (event: Event) => {
            event.preventDefault();
            actions.openEvidence(url);
          },
        },
        evidenceLabel(url),
      ),
    );
  });
  return h(
    'div',
    { class: 'row-details', id },
    chart,
    p.notes ? h('p', { class: 'notes' }, p.notes) : null,
    p.managed_by
      ? h(
          'p',
          { class: 'managed', 'data-testid': `managed-${p.id}` },
          `Managed by its tool: run \`${p.managed_by}\` first; deleting from here stays possible.`,
        )
      : null,
    p.evidence.length > 0 ? evidence : null,
    h(
      'p',
      { class: 'facts' },
      `${formatCount(p.files, 'file')} · ${formatBytes(p.apparent_bytes)} apparent`,
      p.orphan_bytes > 0 ? ` · ${formatBytes(p.orphan_bytes)} orphaned` : '',
    ),
    p.top_items.length > 0 ? h('h3', {}, 'Largest items') : null,
    p.top_items.length > 0 ? items : null,
    p.reclaimable
      ? h(
          'button',
          {
            type: 'button',
            class: 'link-button',
            'data-key': `only-${p.id}`,
            onclick: () => actions.reclaimOnly(p.id),
          },
          `Preview reclaim of ${p.name} only`,
        )
      : null,
  );
}

/** Enter and Space act on a row; ArrowUp/ArrowDown move between rows. */
export function onRowKey(event: KeyboardEvent, act: () => void): void {
  if (event.key === 'Enter' || event.key === ' ') {
    event.preventDefault();
    act();
    return;
  }
  if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
  const rows = Array.from(document.querySelectorAll<HTMLElement>('.row-summary'));
  const index = rows.indexOf(event.currentTarget as HTMLElement);
  const next = rows[index + (event.key === 'ArrowDown' ? 1 : -1)];
  if (next) {
    event.preventDefault();
    next.focus();
  }
}
