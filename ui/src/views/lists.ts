// The unattributed entries and the recent alerts.
import { h, replaceChildren } from '../dom';
import { baseName, formatAgo, formatBytes } from '../format';
import { topUnattributed } from '../sort';
import type { AlertDto, UnattributedDto } from '../types';

/** How many unattributed entries the window lists. */
export const UNATTRIBUTED_SHOWN = 8;

/** Renders the top unattributed entries (those no rule claims) into `el`. */
export function renderUnattributed(el: HTMLElement, entries: readonly UnattributedDto[]): void {
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
  replaceChildren(
    el,
    h('h2', {}, 'Unattributed'),
    top.length === 0 ? h('p', { class: 'empty' }, 'Nothing unclaimed of note.') : list,
  );
}

/** Renders the recent alerts, newest first, times relative to `nowUnixSecs`. */
export function renderAlerts(
  el: HTMLElement,
  alerts: readonly AlertDto[],
  nowUnixSecs: number,
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
        h('p', {}, alert.message),
      ),
    );
  }
  replaceChildren(
    el,
    h('h2', {}, 'Recent alerts'),
    alerts.length === 0 ? h('p', { class: 'empty' }, 'No alerts.') : list,
  );
}
