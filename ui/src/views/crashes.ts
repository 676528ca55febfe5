// Crash loops: crash reports grouped by process and signature (the engine's `crash_groups`).
import { h, replaceChildren } from '../dom';
import { formatAgo, formatBytes, formatCount } from '../format';
import type { CrashGroupDto } from '../types';

/** Reports from which a group is shown as a loop (the engine's default `crash_loop_reports`). */
export const CRASH_LOOP_REPORTS = 5;

/** Whether a group has reports enough to be highlighted as a crash loop. */
export function isCrashLoop(group: CrashGroupDto): boolean {
  return group.count >= CRASH_LOOP_REPORTS;
}

/** The texts of one group's row. */
export interface CrashGroupText {
  /** `12 reports`. */
  count: string;
  /** `last 5 min ago`. */
  last: string;
  /** `1.2 MiB of reports`. */
  bytes: string;
  /** The tooltip: signature id and the span of the reports. */
  detail: string;
}

/** The texts of `group`, times relative to `nowUnixSecs`. */
export function crashGroupText(group: CrashGroupDto, nowUnixSecs: number): CrashGroupText {
  return {
    count: formatCount(group.count, 'report'),
    last: `last ${formatAgo(group.last_unix_secs, nowUnixSecs)}`,
    bytes: `${formatBytes(group.report_bytes)} of reports`,
    detail: `${group.signature}: first ${formatAgo(group.first_unix_secs, nowUnixSecs)}, last ${formatAgo(group.last_unix_secs, nowUnixSecs)}`,
  };
}

/**
 * Renders the crash groups into `el` in the engine's order (newest report first); hides `el`
 * when there are none.
 */
export function renderCrashGroups(
  el: HTMLElement,
  groups: readonly CrashGroupDto[] | undefined,
  nowUnixSecs: number,
): void {
  const list = groups ?? [];
  el.hidden = list.length === 0;
  if (list.length === 0) {
    replaceChildren(el);
    return;
  }
  const ul = h('ul', { class: 'crashes', 'aria-label': 'Crash loops' });
  for (const group of list) {
    const text = crashGroupText(group, nowUnixSecs);
    const loop = isCrashLoop(group);
    ul.appendChild(
      h(
        'li',
        { class: `crash${loop ? ' loop' : ''}`, title: text.detail, 'data-testid': 'crash-group' },
        h(
          'div',
          { class: 'crash-head' },
          h('strong', { class: 'crash-process' }, group.process),
          h('span', { class: 'crash-count', 'data-testid': 'crash-count' }, text.count),
        ),
        h('p', { class: 'crash-title' }, group.title),
        h(
          'p',
          { class: 'crash-facts' },
          h('time', {}, text.last),
          ' · ',
          h('span', { 'data-testid': 'crash-bytes' }, text.bytes),
        ),
      ),
    );
  }
  replaceChildren(el, h('h2', {}, 'Crash loops'), ul);
}
