// The reclaim panel: threshold control, the live estimate, the Reclaim button, and the dialog
// that plans, confirms, shows progress and then the result (its content: `reclaim-dialog.ts`).
import { h, replaceChildren } from '../dom';
import { formatDuration } from '../format';
import type { ReclaimController } from '../reclaim-controller';
import { canReclaim, shownOf, type ReclaimState } from '../reclaim-state';
import { presetFor, THRESHOLD_PRESETS } from '../threshold';
import { estimateElements, estimateText } from './estimate';
import { dialogContent } from './reclaim-dialog';

export { reportText } from './reclaim-dialog';

/** What the panel tells the app. */
export interface ReclaimPanelActions {
  /** The user picked a threshold (seconds). */
  thresholdChanged(secs: number): void;
  /** The user cleared the "only this producer" scope. */
  scopeCleared(): void;
}

/** What the panel reads from the app. */
export interface ReclaimPanelContext {
  /** Now, Unix seconds, on the engine's clock (for "as of … ago"). */
  nowUnixSecs(): number;
  /** A producer's name by id. */
  producerName(id: string): string;
  /** Reads a threshold as typed (the engine's reader); rejects with the engine's reason. */
  readThreshold(text: string): Promise<number>;
}

/** The panel; `render(state)` after each controller change. */
export class ReclaimPanel {
  private readonly preview: HTMLElement;
  private readonly scope: HTMLElement;
  private readonly button: HTMLButtonElement;
  private readonly custom: HTMLInputElement;
  private readonly hint: HTMLElement;
  private thresholdSecs = 0;
  /** The number of the latest custom text sent to be read. */
  private customAsked = 0;
  private state: ReclaimState = { phase: 'idle' };
  private readonly inputs: HTMLInputElement[] = [];

  constructor(
    el: HTMLElement,
    private readonly dialog: HTMLDialogElement,
    private readonly controller: ReclaimController,
    private readonly actions: ReclaimPanelActions,
    private readonly context: ReclaimPanelContext,
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
        onclick: () => void this.controller.reclaim(),
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
      // Escape: leave the planning, the confirmation or the result; never interrupt a running
      // reclaim.
      event.preventDefault();
      const phase = this.controller.state.phase;
      if (phase === 'done' || phase === 'failed') this.controller.dismiss();
      else if (phase !== 'executing') this.controller.cancel();
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

  /** Renders the estimate, the button and the dialog for `state`. */
  render(state: ReclaimState): void {
    this.state = state;
    this.renderPreview();
    // aria-disabled, not disabled: the button keeps the focus (e.g. after the result closes).
    this.button.setAttribute('aria-disabled', String(!canReclaim(state)));
    this.renderDialog(state);
  }

  /**
   * Brings "as of … ago" up to date in place (the estimate is not announced again; the dialog is
   * left alone).
   */
  refreshTimes(): void {
    const shown = shownOf(this.state);
    const asOf = this.preview.querySelector<HTMLElement>('[data-testid="preview-asof"]');
    if (!shown || !asOf) return;
    const text = estimateText(shown.estimate, this.context.nowUnixSecs(), this.context.producerName).asOf;
    if (asOf.textContent !== text) asOf.textContent = text;
  }

  private renderPreview(): void {
    const state = this.state;
    // After a reclaim the estimate is spent: show none until the next one.
    const shown = shownOf(state);
    this.preview.classList.toggle('loading', state.phase === 'estimating');
    if (state.phase === 'estimate-failed') {
      replaceChildren(this.preview, h('span', { class: 'error-text' }, state.error.message));
    } else if (shown) {
      replaceChildren(this.preview, ...estimateElements(shown.estimate, this.context.nowUnixSecs(), this.context.producerName));
    } else {
      const text = state.phase === 'estimating' ? 'Estimating…' : '';
      replaceChildren(this.preview, h('span', { class: 'muted' }, text));
    }
  }

  private renderDialog(state: ReclaimState): void {
    const content = dialogContent(state, {
      cancel: () => this.controller.cancel(),
      retry: () => void this.controller.retry(),
      confirm: () => void this.controller.confirm(),
      dismiss: () => this.controller.dismiss(),
    });
    if (!content) {
      if (this.dialog.open) {
        this.dialog.close();
        this.button.focus();
      }
      return;
    }
    replaceChildren(this.dialog, h('h2', { id: 'dialog-title' }, content.title), ...content.body);
    this.dialog.setAttribute('aria-labelledby', 'dialog-title');
    if (!this.dialog.open) this.dialog.showModal();
    content.focus?.focus();
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
    const text = this.custom.value;
    // Answers may come back out of order: only the one for the text still typed counts.
    const asked = ++this.customAsked;
    this.context.readThreshold(text).then(
      (secs) => {
        if (asked === this.customAsked) this.customRead(secs);
      },
      (e: unknown) => {
        if (asked !== this.customAsked) return;
        this.custom.setAttribute('aria-invalid', 'true');
        this.hint.textContent = text.trim() === '' ? 'Type a duration: 90m, 12h, 2d 6h' : errorText(e);
      },
    );
  }

  private customRead(secs: number): void {
    this.custom.setAttribute('aria-invalid', 'false');
    this.hint.textContent = `= ${formatDuration(secs)}`;
    if (secs === this.thresholdSecs) return;
    this.thresholdSecs = secs;
    this.actions.thresholdChanged(secs);
  }
}

/** The engine's reason a threshold was refused (an IPC error's message). */
function errorText(e: unknown): string {
  if (typeof e === 'object' && e !== null && 'message' in e) return String((e as { message: unknown }).message);
  return String(e);
}
