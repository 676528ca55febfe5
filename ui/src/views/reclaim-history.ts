// The past reclaims (`reclaim_history`): when, by whom (you, or an auto-reclaim rule), what each
// producer lost in items and bytes, what was kept and why, and errors. Folded until asked for;
// fetched again when opened and after every reclaim.
import { whenText } from '../chart-data';
import { h, replaceChildren } from '../dom';
import { describeKeepReason, formatBytes, formatCount } from '../format';
import type { KeepReasonKind, ReclaimHistory, ReclaimRun, UiError } from '../types';

/** How far back the panel looks, seconds (30 days). */
export const HISTORY_SPAN_SECS = 30 * 86400;

const KNOWN_REASONS: readonly string[] = [
  'too-young', 'owner-alive', 'in-use', 'app-running', 'never', 'manual', 'structure', 'changed',
  'unknown-producer', 'holds-root', 'holds-mount', 'holds-protected', 'newest-version',
];

/** `2 in use, 1 too young`, from the run's reason codes. */
export function keptText(kept: Record<string, number | undefined>): string {
  return Object.entries(kept)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([reason, n]) => `${n} ${KNOWN_REASONS.includes(reason) ? describeKeepReason(reason as KeepReasonKind) : reason}`)
    .join(', ');
}

/** One run's lines: head (when, who, freed), per producer, kept/gone, errors. */
export function runLines(run: ReclaimRun, nowUnixSecs: number, nameOf: (id: string) => string) {
  const who = run.rule ? `rule ${run.rule}` : 'asked for';
  const producers = Object.entries(run.by_producer).map(
    ([id, f]) => `${nameOf(id)}: ${formatCount(f?.items ?? 0, 'item')}, ${formatBytes(f?.bytes ?? 0)}`,
  );
  const kept = keptText(run.kept);
  const rest = [
    kept ? `kept ${kept}` : '',
    run.already_gone > 0 ? `${formatCount(run.already_gone, 'item')} already gone` : '',
  ].filter(Boolean);
  const errors =
    run.errors > 0 ? `${formatCount(run.errors, 'error')}${run.first_error ? `: ${run.first_error}` : ''}` : '';
  return {
    when: whenText(run.started_unix_secs, nowUnixSecs),
    who,
    freed: `${formatBytes(run.freed_bytes)} freed`,
    detail: [producers.length > 0 ? producers.join(' · ') : 'nothing deleted', ...rest].join(' · '),
    errors,
  };
}

/** The panel in `el`. */
export class ReclaimHistoryPanel {
  private open = false;
  private history: ReclaimHistory | null = null;
  private error: string | null = null;
  private now = 0;

  constructor(
    private readonly el: HTMLElement,
    private readonly load: (spanSecs: number) => Promise<ReclaimHistory>,
    private readonly nameOf: (id: string) => string,
  ) {}

  /** Draws the panel with times relative to `nowUnixSecs`. */
  render(nowUnixSecs: number): void {
    this.now = nowUnixSecs;
    const toggle = h(
      'button',
      {
        type: 'button',
        class: 'link-button',
        'data-key': 'history-toggle',
        'aria-expanded': String(this.open),
        onclick: () => {
          this.open = !this.open;
          if (this.open) this.refresh();
          else this.render(this.now);
        },
      },
      this.open ? 'Hide' : 'Show',
    );
    const head = h('div', { class: 'section-head' }, h('h2', { id: 'history-title' }, 'Past reclaims'), toggle);
    if (!this.open) {
      replaceChildren(this.el, head);
      return;
    }
    replaceChildren(this.el, head, this.body());
  }

  /** Fetches the runs again when the panel is open. */
  refresh(): void {
    if (!this.open) return;
    this.load(HISTORY_SPAN_SECS).then(
      (history) => {
        this.history = history;
        this.error = null;
        this.render(this.now || history.to_unix_secs);
      },
      (error: UiError) => {
        this.error = error.message;
        this.render(this.now);
      },
    );
    this.render(this.now);
  }

  private body(): HTMLElement {
    if (this.error !== null) return h('p', { class: 'error-text', role: 'alert' }, this.error);
    if (this.history === null) return h('p', { class: 'muted' }, 'Loading…');
    if (this.history.runs.length === 0) return h('p', { class: 'empty' }, 'No reclaims in the last 30 days.');
    const list = h('ul', { class: 'history-list', 'aria-label': 'Past reclaims', 'data-testid': 'history-list' });
    for (const run of this.history.runs) {
      const l = runLines(run, this.now, this.nameOf);
      list.appendChild(
        h(
          'li',
          { 'data-testid': 'history-run' },
          h('div', { class: 'run-head' }, h('time', {}, l.when), h('span', { class: 'tag' }, l.who), h('span', { class: 'run-freed' }, l.freed)),
          h('div', { class: 'run-sub' }, l.detail),
          l.errors ? h('div', { class: 'run-error' }, l.errors) : null,
        ),
      );
    }
    return list;
  }
}
