// The header: total watched, free disk, disk-full ETA, monitor state and its buttons.
import { h, replaceChildren } from '../dom';
import { formatBytes, formatCount, formatEta, formatEtaBasis } from '../format';
import type { Snapshot } from '../types';
import { icon } from './icons';

/** What the header's buttons do. */
export interface HeaderActions {
  togglePause(paused: boolean): void;
  rescan(): void;
  openSettings(): void;
}

/** The smallest free space among the roots' volumes, bytes; `null` when none is known. */
export function minFreeBytes(snapshot: Snapshot): number | null {
  let min: number | null = null;
  for (const root of snapshot.roots) {
    if (root.free_bytes === null) continue;
    min = min === null ? root.free_bytes : Math.min(min, root.free_bytes);
  }
  return min;
}

/**
 * The purgeable part of the smallest free space among the roots' volumes (macOS: space the system
 * frees on demand, which Finder counts as available), bytes; 0 when none or unknown.
 */
export function purgeableOfMinFree(snapshot: Snapshot): number {
  let min: { free: number; purgeable: number } | null = null;
  for (const root of snapshot.roots) {
    if (root.free_bytes === null) continue;
    if (min === null || root.free_bytes < min.free) {
      min = { free: root.free_bytes, purgeable: root.purgeable_bytes ?? 0 };
    }
  }
  return min?.purgeable ?? 0;
}

/** The free figure's label: `free`, or `free, 3.0 GiB purgeable` when part of it is purgeable. */
export function freeLabel(snapshot: Snapshot): string {
  const purgeable = purgeableOfMinFree(snapshot);
  return purgeable > 0 ? `free, ${formatBytes(purgeable)} purgeable` : 'free';
}

/** The state in words: `Watching`, `Scanning`, `Paused` (the scan's progress is [`scanText`]). */
export function stateLabel(snapshot: Snapshot): string {
  switch (snapshot.state) {
    case 'watching':
      return 'Watching';
    case 'paused':
      return 'Paused';
    case 'scanning':
      return 'Scanning';
  }
}

/**
 * What the first scan has done, in words: `root 1 of 2 · 12,345 entries so far` (the files, dirs
 * and symlinks listed so far, the root being scanned included; the engine updates it every second).
 */
export function scanText(snapshot: Snapshot): string {
  const { roots_done, roots_total, entries_done } = snapshot.scan_progress;
  const root = roots_total > 0 ? `root ${Math.min(roots_done + 1, roots_total)} of ${roots_total}` : 'roots';
  return `Scanning ${root} · ${formatCount(entries_done ?? 0, 'entry', 'entries')} so far`;
}

/** The scan's progress bar: roots finished of all, standing still between snapshots. */
export function scanProgress(snapshot: Snapshot): HTMLProgressElement {
  const { roots_done, roots_total } = snapshot.scan_progress;
  return h('progress', {
    class: 'scan-progress',
    'aria-label': 'Scanning',
    max: String(Math.max(roots_total, 1)),
    value: String(Math.min(roots_done, Math.max(roots_total, 1))),
    'data-testid': 'scan-progress',
  });
}

/** Renders the header into `el`. */
export function renderHeader(el: HTMLElement, snapshot: Snapshot, actions: HeaderActions): void {
  const paused = snapshot.state === 'paused';
  const free = minFreeBytes(snapshot);
  const scanning = snapshot.state === 'scanning';
  replaceChildren(
    el,
    h(
      'div',
      { class: 'head-row' },
      h('h1', {}, 'CacheWatch'),
      h(
        'span',
        { class: `state state-${snapshot.state}`, role: 'status', 'data-testid': 'state' },
        stateLabel(snapshot),
      ),
      h(
        'div',
        { class: 'head-buttons' },
        h(
          'button',
          {
            type: 'button',
            class: 'icon-button',
            'data-key': 'pause',
            'aria-pressed': String(paused),
            title: paused ? 'Resume watching' : 'Pause watching',
            'aria-label': paused ? 'Resume watching' : 'Pause watching',
            onclick: () => actions.togglePause(!paused),
          },
          icon(paused ? 'play' : 'pause'),
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'icon-button',
            'data-key': 'rescan',
            title: 'Rescan now',
            'aria-label': 'Rescan now',
            onclick: () => actions.rescan(),
          },
          icon('rescan'),
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'icon-button',
            'data-key': 'settings',
            title: 'Settings',
            'aria-label': 'Settings',
            onclick: () => actions.openSettings(),
          },
          icon('settings'),
        ),
      ),
    ),
    h(
      'div',
      { class: 'totals' },
      h(
        'div',
        { class: 'figure' },
        h('span', { class: 'figure-value', 'data-testid': 'total' }, formatBytes(snapshot.total_allocated_bytes)),
        h('span', { class: 'figure-label' }, 'watched'),
      ),
      h(
        'div',
        { class: 'figure' },
        h('span', { class: 'figure-value', 'data-testid': 'free' }, free === null ? '—' : formatBytes(free)),
        h('span', { class: 'figure-label', 'data-testid': 'free-label' }, freeLabel(snapshot)),
      ),
      h(
        'div',
        { class: `figure${snapshot.disk_full_eta_secs !== null && snapshot.disk_full_eta_secs < 86400 ? ' warn' : ''}` },
        h(
          'span',
          { class: 'figure-value', 'data-testid': 'eta' },
          // While scanning there is no total to extrapolate: no "not filling" either.
          scanning ? '—' : formatEta(snapshot.disk_full_eta_secs, snapshot.total_growth ?? null),
        ),
        h(
          'span',
          { class: 'figure-label', title: formatEtaBasis(snapshot.disk_full_eta_span_secs) },
          snapshot.disk_full_eta_span_secs ? `disk, ${formatEtaBasis(snapshot.disk_full_eta_span_secs)}` : 'disk',
        ),
      ),
    ),
    scanning
      ? h(
          'div',
          { class: 'scan-row' },
          // Determinate (roots finished of all): an indeterminate bar animates, and keeps a web
          // process drawing, for as long as a scan waits. It moves only when the data does.
          scanProgress(snapshot),
          h('span', { class: 'scan-text', 'data-testid': 'scan-text' }, scanText(snapshot)),
        )
      : null,
  );
}
