// The "Copy report" dialog: the engine's Markdown draft of a report on a group, for the tracker
// of the program that leaves it. Nothing is sent anywhere: the user reads it, copies it, pastes it.
import { h } from '../dom';
import type { ReportDraft, UiError, UnattributedGroupDto } from '../types';

/** What the report dialog shows. */
export type ReportDialogState =
  | { phase: 'drafting'; group: UnattributedGroupDto }
  | { phase: 'ready'; group: UnattributedGroupDto; draft: ReportDraft; copied: 'no' | 'yes' | 'failed' }
  | { phase: 'failed'; group: UnattributedGroupDto; error: UiError };

/** What the report dialog's buttons do. */
export interface ReportDialogActions {
  close(): void;
  copy(): void;
}

/** The report dialog's title, body and element to focus for `state`. */
export function reportDialogContent(state: ReportDialogState, actions: ReportDialogActions): { body: HTMLElement[]; focus: HTMLElement } {
  const close = h('button', { type: 'button', 'data-key': 'report-close', onclick: actions.close }, 'Close');
  const shape = h('p', { class: 'muted' }, `Shape ${state.group.shape} (${state.group.root_kind})`);
  switch (state.phase) {
    case 'drafting':
      return {
        body: [shape, h('p', { class: 'muted', 'data-testid': 'report-drafting' }, 'Drafting the report…'), h('div', { class: 'dialog-buttons' }, close)],
        focus: close,
      };
    case 'failed':
      return {
        body: [shape, h('p', { class: 'error-text', role: 'alert', 'data-testid': 'report-error' }, state.error.message), h('div', { class: 'dialog-buttons' }, close)],
        focus: close,
      };
    case 'ready': {
      const text = h('textarea', {
        class: 'report-text',
        readonly: true,
        rows: 12,
        spellcheck: 'false',
        'aria-label': 'Report draft (Markdown)',
        'data-testid': 'report-text',
      });
      text.value = state.draft.markdown;
      const note =
        state.copied === 'yes'
          ? 'Copied. Paste it into the tracker of the program that leaves these.'
          : state.copied === 'failed'
            ? 'The clipboard refused: the text is selected, copy it with ⌘C (Ctrl+C).'
            : 'Nothing is sent anywhere: read it, copy it, paste it into the tracker of the program that leaves these.';
      const copy = h('button', { type: 'button', class: 'primary', 'data-key': 'report-copy', onclick: actions.copy }, state.copied === 'yes' ? 'Copied' : 'Copy');
      if (state.copied === 'failed') queueMicrotask(() => text.select());
      return {
        body: [shape, text, h('p', { class: 'muted', 'data-testid': 'report-note' }, note), h('div', { class: 'dialog-buttons' }, close, copy)],
        focus: copy,
      };
    }
  }
}

/** The engine call the report dialog needs, and the clipboard. */
export interface ReportIpc {
  reportDraft(root: string, label: string): Promise<ReportDraft>;
  writeClipboard(text: string): Promise<void>;
}

/** The "Copy report" dialog. */
export class ReportDialog {
  private state: ReportDialogState | null = null;

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly ipc: ReportIpc,
    private readonly toError: (e: unknown) => UiError,
  ) {
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault();
      this.close();
    });
  }

  /** Opens the dialog for `group` and asks the engine for the draft. */
  async open(group: UnattributedGroupDto): Promise<void> {
    this.show({ phase: 'drafting', group });
    try {
      const draft = await this.ipc.reportDraft(group.root, group.label);
      if (this.state?.group === group) this.show({ phase: 'ready', group, draft, copied: 'no' });
    } catch (e) {
      if (this.state?.group === group) this.show({ phase: 'failed', group, error: this.toError(e) });
    }
  }

  private async copy(): Promise<void> {
    const s = this.state;
    if (s?.phase !== 'ready') return;
    let copied: 'yes' | 'failed' = 'yes';
    try {
      await this.ipc.writeClipboard(s.draft.markdown);
    } catch {
      copied = 'failed';
    }
    if (this.state === s) this.show({ ...s, copied });
  }

  close(): void {
    this.state = null;
    if (this.dialog.open) this.dialog.close();
  }

  private show(state: ReportDialogState): void {
    this.state = state;
    const content = reportDialogContent(state, { close: () => this.close(), copy: () => void this.copy() });
    this.dialog.replaceChildren(h('h2', { id: 'report-title' }, 'Report for upstream'), ...content.body);
    this.dialog.setAttribute('aria-labelledby', 'report-title');
    if (!this.dialog.open) this.dialog.showModal();
    content.focus.focus();
  }
}
