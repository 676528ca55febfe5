// The reclaim panel: threshold control, live preview, Reclaim button, and the dialog that
// confirms, shows progress and then the result.
import { h, replaceChildren } from '../dom';
import { describeKeepReason, formatBytes, formatCount, formatDuration, formatFreeable } from '../format';
import { canReclaim, planOf, type ReclaimController, type ReclaimState } from '../reclaim-state';
import { confirmBody } from './confirm-list';
import { parseThreshold, presetFor, THRESHOLD_PRESETS } from '../threshold';
import type { ReclaimPreview, ReclaimResult } from '../types';

/** What the panel tells the app. */
export interface ReclaimPanelActions {
  /** The user picked a threshold (seconds). */
  thresholdChanged(secs: number): void;
  /** The user cleared the "only this producer" scope. */
  scopeCleared(): void;
}

/**
 * The preview in one line: `Frees 1.2 GiB · 340 items`, and the kept items by reason (in the
 * engine's order: most first).
 */
export function previewText(plan: ReclaimPreview): { frees: string; keeps: string } {
  const frees =
    plan.planned_items === 0
      ? 'Nothing to reclaim at this threshold'
      : `Frees ${formatFreeable(plan.planned_freeable_bytes, plan.planned_bytes)} · ${formatCount(plan.planned_items, 'item')}`;
  if (plan.kept_items === 0) return { frees, keeps: 'Keeps nothing' };
  const reasons = plan.kept
    .map((group) => `${group.items.toLocaleString('en-US')} ${describeKeepReason(group.reason)}`)
    .join(', ');
  return { frees, keeps: `Keeps ${formatCount(plan.kept_items, 'item')}: ${reasons}` };
}

/**
 * The result in one line: `Freed 1.2 GiB · 340 deleted · 2 kept · 1 error`, with
 * `· 3 already gone` before the errors when some were.
 */
export function reportText(report: ReclaimResult): string {
  const gone = report.already_gone_items;
  return [
    `Freed ${formatBytes(report.freed_bytes)}`,
    `${report.deleted_items.toLocaleString('en-US')} deleted`,
    `${report.kept_items.toLocaleString('en-US')} kept`,
    gone > 0 ? `${gone.toLocaleString('en-US')} already gone` : null,
    formatCount(report.error_count, 'error'),
  ]
    .filter((part) => part !== null)
    .join(' · ');
}

/** The panel; `render(state)` after each controller change. */
export class ReclaimPanel {
  private readonly preview: HTMLElement;
  private readonly scope: HTMLElement;
  private readonly button: HTMLButtonElement;
  private readonly custom: HTMLInputElement;
  private readonly hint: HTMLElement;
  private thresholdSecs = 0;
  private readonly inputs: HTMLInputElement[] = [];

  constructor(
    el: HTMLElement,
    private readonly dialog: HTMLDialogElement,
    private readonly controller: ReclaimController,
    private readonly actions: ReclaimPanelActions,
  ) {
    const group = h('fieldset', { class: 'segmented threshold' }, h('legend', {}, 'Reclaim items older than'));
    for (const preset of THRESHOLD_PRESETS) {
      group.appendChild(this.radio(preset.label, String(preset.secs)));
    }
    group.appendChild(this.radio('Custom', 'custom'));
    this.custom = h('input', {
      type: 'text',
      id: 'custom-threshold',
      class: 'custom-input',
      placeholder: 'e.g. 12h, 2d 6h',
      'aria-label': 'Custom threshold',
      'aria-describedby': 'custom-hint',
      autocomplete: 'off',
      spellcheck: 'false',
      hidden: true,
    });
    this.hint = h('span', { id: 'custom-hint', class: 'hint', 'aria-live': 'polite' });
    this.custom.addEventListener('input', () => this.customChanged());
    this.scope = h('div', { class: 'scope' });
    this.preview = h('div', { class: 'preview', 'aria-live': 'polite', 'data-testid': 'preview' });
    this.button = h(
      'button',
      {
        type: 'button',
        class: 'primary',
        'data-key': 'reclaim',
        onclick: () => this.controller.reclaim(),
      },
      'Reclaim…',
    );
    replaceChildren(
      el,
      group,
      h('div', { class: 'custom-row' }, this.custom, this.hint),
      this.scope,
      h('div', { class: 'reclaim-row' }, this.preview, this.button),
    );
    dialog.addEventListener('cancel', (event) => {
      // Escape: close the confirmation or the result; never interrupt a running reclaim.
      event.preventDefault();
      const phase = this.controller.state.phase;
      if (phase === 'confirming') this.controller.cancel();
      if (phase === 'done' || phase === 'failed') this.controller.dismiss();
    });
  }

  /** Shows `secs` as the selected threshold (a preset, or Custom with the text). */
  showThreshold(secs: number): void {
    this.thresholdSecs = secs;
    const preset = presetFor(secs);
    for (const input of this.radios()) {
      input.checked = preset ? input.value === String(secs) : input.value === 'custom';
    }
    this.custom.hidden = preset !== undefined;
    if (!preset && document.activeElement !== this.custom) {
      this.custom.value = formatDuration(secs).replace(/ /g, '');
    }
  }

  /** Shows the scope: every auto producer, or only `name` with a button to clear it. */
  showScope(name: string | null): void {
    if (name === null) {
      replaceChildren(this.scope, h('span', { class: 'muted' }, 'All producers marked auto'));
      return;
    }
    replaceChildren(
      this.scope,
      h('span', {}, 'Only ', h('strong', {}, name)),
      h(
        'button',
        {
          type: 'button',
          class: 'link-button',
          'data-key': 'scope-clear',
          onclick: () => this.actions.scopeCleared(),
        },
        'All auto producers',
      ),
    );
  }

  /** Renders the preview, the button and the dialog for `state`. */
  render(state: ReclaimState): void {
    // After a reclaim the plan is spent: show none until the next preview.
    const plan = state.phase === 'done' || state.phase === 'failed' ? null : planOf(state);
    const loading = state.phase === 'previewing';
    this.preview.classList.toggle('loading', loading);
    if (state.phase === 'preview-failed') {
      replaceChildren(this.preview, h('span', { class: 'error-text' }, state.error.message));
    } else if (plan) {
      const text = previewText(plan);
      replaceChildren(
        this.preview,
        h('span', { class: 'frees', 'data-testid': 'preview-frees' }, text.frees),
        h('span', { class: 'keeps', 'data-testid': 'preview-keeps' }, text.keeps),
      );
    } else {
      replaceChildren(this.preview, h('span', { class: 'muted' }, loading ? 'Computing preview…' : ''));
    }
    // aria-disabled, not disabled: the button keeps the focus (e.g. after the result closes).
    this.button.setAttribute('aria-disabled', String(!canReclaim(state)));
    this.renderDialog(state);
  }

  private renderDialog(state: ReclaimState): void {
    const open = state.phase === 'confirming' || state.phase === 'executing' || state.phase === 'done' || state.phase === 'failed';
    if (!open) {
      if (this.dialog.open) {
        this.dialog.close();
        this.button.focus();
      }
      return;
    }
    let focus: HTMLElement | null = null;
    if (state.phase === 'confirming') {
      const { plan } = state;
      const cancel = h('button', { type: 'button', 'data-key': 'dialog-cancel', onclick: () => this.controller.cancel() }, 'Cancel');
      const confirm = h('button', { type: 'button', class: 'danger', 'data-key': 'dialog-confirm', onclick: () => void this.controller.confirm() }, `Delete ${formatCount(plan.planned_items, 'item')}`);
      replaceChildren(
        this.dialog,
        h('h2', { id: 'dialog-title' }, 'Reclaim space?'),
        h('p', {}, `Deletes ${formatCount(plan.planned_items, 'item')} older than ${formatDuration(this.thresholdSecs)}, freeing ${formatFreeable(plan.planned_freeable_bytes, plan.planned_bytes)}.`),
        ...confirmBody(plan),
        h('p', { class: 'muted' }, 'Each item is checked again just before deletion: anything that changed, is in use or whose owner runs is kept.'),
        h('div', { class: 'dialog-buttons' }, cancel, confirm),
      );
      focus = cancel;
    } else if (state.phase === 'executing') {
      replaceChildren(
        this.dialog,
        h('h2', { id: 'dialog-title' }, 'Reclaiming…'),
        h('progress', { 'aria-label': 'Reclaiming' }),
        h('p', { class: 'muted' }, `${formatCount(state.plan.planned_items, 'item')}, ${formatFreeable(state.plan.planned_freeable_bytes, state.plan.planned_bytes)} to free`),
      );
    } else if (state.phase === 'done' || state.phase === 'failed') {
      const done = h('button', { type: 'button', class: 'primary', 'data-key': 'dialog-done', onclick: () => this.controller.dismiss() }, 'Done');
      const body =
        state.phase === 'done'
          ? [
              h('p', { class: 'result', 'data-testid': 'result' }, reportText(state.report)),
              state.report.error_count > 0 ? errorList(state.report) : null,
            ]
          : [h('p', { class: 'error-text', 'data-testid': 'result' }, state.error.message)];
      replaceChildren(
        this.dialog,
        h('h2', { id: 'dialog-title' }, state.phase === 'done' ? 'Reclaimed' : 'Reclaim failed'),
        ...body,
        h('div', { class: 'dialog-buttons' }, done),
      );
      focus = done;
    }
    this.dialog.setAttribute('aria-labelledby', 'dialog-title');
    if (!this.dialog.open) this.dialog.showModal();
    focus?.focus();
  }

  private radio(label: string, value: string): HTMLLabelElement {
    const input = h('input', { type: 'radio', name: 'threshold', value, 'data-key': `threshold-${value}` });
    input.addEventListener('change', () => this.radioChanged(input));
    this.inputs.push(input);
    return h('label', {}, input, h('span', {}, label));
  }

  private radios(): HTMLInputElement[] {
    return this.inputs;
  }

  private radioChanged(input: HTMLInputElement): void {
    if (!input.checked) return;
    if (input.value === 'custom') {
      this.custom.hidden = false;
      if (!this.custom.value) this.custom.value = formatDuration(this.thresholdSecs).replace(/ /g, '');
      this.custom.focus();
      this.customChanged();
      return;
    }
    this.custom.hidden = true;
    this.hint.textContent = '';
    this.thresholdSecs = Number(input.value);
    this.actions.thresholdChanged(this.thresholdSecs);
  }

  private customChanged(): void {
    const secs = parseThreshold(this.custom.value);
    this.custom.setAttribute('aria-invalid', String(secs === null));
    if (secs === null) {
      this.hint.textContent = 'Type a duration: 90m, 12h, 2d 6h';
      return;
    }
    this.hint.textContent = `= ${formatDuration(secs)}`;
    if (secs === this.thresholdSecs) return;
    this.thresholdSecs = secs;
    this.actions.thresholdChanged(secs);
  }
}

function errorList(report: ReclaimResult): HTMLElement {
  const list = h('ul', { class: 'errors' });
  for (const error of report.errors.slice(0, 10)) {
    list.appendChild(h('li', { title: error.path }, `${error.path}: ${error.message}`));
  }
  return list;
}
