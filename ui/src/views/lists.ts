// The unattributed entries and the recent alerts.
import { h, replaceChildren } from '../dom';
import { formatAgo, formatBytes, formatCount, baseName } from '../format';
import { topUnattributed } from '../sort';
import type { AlertDto, RootDto, RootStatus, UnattributedDto } from '../types';

/** How many unattributed entries the window lists. */
export const UNATTRIBUTED_SHOWN = 8;

export { writerText } from './groups';

/**
 * Renders the groups of unattributed entries (unknown producers, by name shape: `groupParts`,
 * from `renderGroups`) and the top unattributed entries that joined no group (those no rule
 * claims) into `el`.
 */
export function renderUnattributed(
  el: HTMLElement,
  entries: readonly UnattributedDto[],
  groupParts: readonly HTMLElement[] = [],
): void {
  const top = topUnattributed(entries, UNATTRIBUTED_SHOWN);
  const list = h('ul', { class: 'plain-list', 'aria-label': 'Unattributed entries' });
  for (const entry of top) {
    list.appendChild(
      h(
        'li',
        { title: entry.path, 'data-testid': 'unattributed' },
        h('span', { class: 'item-name' }, baseName(entry.path)),
        h('span', { class: 'tag' }, entry.root_kind),
        h('span', { class: 'item-bytes' }, formatBytes(entry.allocated_bytes)),
      ),
    );
  }
  const parts: HTMLElement[] = [];
  parts.push(...groupParts);
  parts.push(
    h('h2', {}, 'Unattributed'),
    top.length === 0 ? h('p', { class: 'empty' }, 'Nothing unclaimed of note.') : list,
  );
  replaceChildren(el, ...parts);
}

/** The producer an alert card's button reclaims: the one the engine suggests, else the alert's. */
function alertProducer(alert: AlertDto): string | null {
  return alert.suggested_reclaim?.producer ?? alert.producer;
}

/** What an alert card's button does. */
export interface AlertActions {
  /** Whether the producer can be reclaimed at all (still listed, `reclaimable` by the engine). */
  canReclaim(producer: string): boolean;
  /** Opens the reclaim preview for that producer only. */
  previewReclaim(producer: string): void;
}

/** Renders the recent alerts, newest first, times relative to `nowUnixSecs`. */
export function renderAlerts(
  el: HTMLElement,
  alerts: readonly AlertDto[],
  nowUnixSecs: number,
  actions?: AlertActions,
): void {
  const list = h('ul', { class: 'alerts', 'aria-label': 'Recent alerts' });
  for (const alert of alerts) {
    list.appendChild(
      h(
        'li',
        { class: `alert rule-${alert.rule}`, 'data-testid': 'alert' },
        h(
          'div',
          { class: 'alert-head' },
          h('strong', {}, alert.title),
          h('time', {}, formatAgo(alert.time_unix_secs, nowUnixSecs)),
        ),
        // The engine's text for the window: no command to run (the card has a button instead).
        h('p', {}, alert.app_message),
        alertProducer(alert) !== null && actions?.canReclaim(alertProducer(alert) as string)
          ? h(
              'button',
              {
                type: 'button',
                class: 'link-button',
                'data-key': `alert-reclaim-${alert.id}`,
                'data-testid': 'alert-reclaim',
                onclick: () => actions.previewReclaim(alertProducer(alert) as string),
              },
              'Preview reclaim…',
            )
          : null,
      ),
    );
  }
  replaceChildren(
    el,
    h('h2', {}, 'Recent alerts'),
    alerts.length === 0 ? h('p', { class: 'empty' }, 'No alerts.') : list,
  );
}

/** What a root that is gone wears (its `state`), as a badge and on its second line. */
export const ROOT_GONE: Record<Exclude<RootStatus, 'ok'>, string> = {
  missing: 'Missing',
  'replaced-by-link': 'Replaced by a link',
  'not-a-dir': 'Not a dir',
};

/** The badge of a root whose path no longer leads to a real dir; `null` for one that does (or a
 * snapshot from an engine without `state`). */
export function rootGone(root: RootDto): string | null {
  const state = root.state ?? 'ok';
  return state === 'ok' ? null : ROOT_GONE[state];
}

/** A root's second line: `on / · events · 2 rescans` (`mount unknown`, `polling`, unreadable paths);
 * a gone root's: `replaced by a link · not watched · 2 rescans`. */
export function rootDetail(root: RootDto): string {
  const gone = rootGone(root);
  if (gone) return [gone.toLowerCase(), 'not watched', formatCount(root.rescans ?? 0, 'rescan')].join(' · ');
  const parts = [
    root.mount ? `on ${root.mount}` : 'mount unknown',
    root.watch_mode === 'off' ? 'not watched' : root.watch_mode,
    formatCount(root.rescans ?? 0, 'rescan'),
  ];
  if (root.unreadable > 0) parts.push(`${formatCount(root.unreadable, 'unreadable path')}`);
  return parts.join(' · ');
}

/** A root's tooltip: path, mount, volume figures, watch mode and error. */
export function rootTooltip(root: RootDto): string {
  const lines = [root.path, `mount: ${root.mount ?? 'unknown'}`];
  if (root.free_bytes !== null && root.volume_bytes !== null) {
    lines.push(`volume: ${formatBytes(root.free_bytes)} free of ${formatBytes(root.volume_bytes)}`);
  }
  lines.push(`${formatCount(root.items, 'item')}, ${formatCount(root.rescans ?? 0, 'rescan')} since start`);
  if (root.watch_error) lines.push(rootGone(root) ? root.watch_error : `not watched by events: ${root.watch_error}`);
  for (const p of root.unwatched_paths ?? []) lines.push(`polled, not watched: ${p}`);
  for (const p of root.unreadable_paths ?? []) lines.push(`unreadable: ${p}`);
  return lines.join('\n');
}

/** Renders the watched roots, one compact two-line entry each. */
export function renderRoots(el: HTMLElement, roots: readonly RootDto[], scanning = false): void {
  const list = h('ul', { class: 'plain-list roots', 'aria-label': 'Watched roots' });
  for (const root of roots) {
    list.appendChild(
      h(
        'li',
        { title: rootTooltip(root), 'data-testid': 'root', class: root.watch_mode === 'off' || rootGone(root) ? 'root off' : 'root' },
        h(
          'div',
          { class: 'root-line' },
          h('span', { class: 'tag' }, root.kind),
          rootGone(root) && h('span', { class: 'tag gone', 'data-testid': 'root-gone' }, rootGone(root) ?? ''),
          root.watch_mode === 'polling' &&
            h('span', { class: 'tag polling', 'data-testid': 'root-polling', title: 'Not watched by events: polled every 60 s' }, 'Polling'),
          h('span', { class: 'item-name' }, root.path),
          h('span', { class: 'item-bytes' }, formatBytes(root.allocated_bytes)),
        ),
        h('div', { class: 'root-detail', 'data-testid': 'root-detail' }, rootDetail(root)),
      ),
    );
  }
  replaceChildren(
    el,
    h('h2', {}, 'Roots'),
    roots.length === 0 ? h('p', { class: 'empty' }, scanning ? 'Scanning…' : 'No roots watched.') : list,
  );
}
