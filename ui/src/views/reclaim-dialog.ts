// The reclaim dialog's content for each phase after Reclaim is clicked: the plan being made (with
// Cancel), its error (with Retry), an empty plan, the confirmation of the real plan, the
// progress and the result.
import { h } from '../dom';
import { formatBytes, formatCount, formatDuration, formatFreeable } from '../format';
import { planDiffers, sameRequest, type Estimated, type PreviewRequest, type ReclaimState } from '../reclaim-state';
import type { ReclaimPreview, ReclaimResult } from '../types';
import { confirmBody, keptLines } from './confirm-list';

/** What the dialog's buttons do. */
export interface DialogActions {
  cancel(): void;
  retry(): void;
  confirm(): void;
  dismiss(): void;
}

/** The dialog's children and the element to focus, or `null` when the dialog is closed. */
export interface DialogContent {
  title: string;
  body: HTMLElement[];
  focus: HTMLElement | null;
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

/** The real plan in one sentence: `Deletes 340 items older than 1 d, freeing 1.2 GiB.` */
export function confirmSummary(plan: ReclaimPreview): string {
  const frees = formatFreeable(plan.planned_freeable_bytes, plan.planned_bytes);
  return `Deletes ${formatCount(plan.planned_items, 'item')} older than ${formatDuration(plan.threshold_secs)}, freeing ${frees}.`;
}

/** The estimate's figures in short: `about 3 items, 2.5 GiB`. */
export function aboutText(shown: Estimated): string {
  return `about ${formatCount(shown.estimate.items, 'item')}, ${formatBytes(shown.estimate.freeable_bytes)}`;
}

/** What the confirmation says when the real plan differs from the estimate shown. */
export function changedText(shown: Estimated): string {
  return `The estimate said ${aboutText(shown)}; items changed since. These are the figures now.`;
}

/** What the dialog shows for `state`; `null` when it is closed. */
export function dialogContent(state: ReclaimState, actions: DialogActions): DialogContent | null {
  const button = (key: string, label: string, onclick: () => void, cls?: string) =>
    h('button', { type: 'button', class: cls, 'data-key': key, onclick }, label);
  switch (state.phase) {
    case 'planning': {
      const cancel = button('dialog-cancel', 'Cancel', actions.cancel);
      return {
        title: 'Planning…',
        body: [
          h(
            'p',
            { class: 'muted', 'data-testid': 'planning' },
            `Listing what is older than ${formatDuration(state.request.thresholdSecs)} and checking each item's owner. Nothing is deleted before you confirm.`,
          ),
          h('div', { class: 'dialog-buttons' }, cancel),
        ],
        focus: cancel,
      };
    }
    case 'plan-failed': {
      const retry = button('dialog-retry', 'Retry', actions.retry, 'primary');
      return {
        title: 'Planning failed',
        body: [
          h('p', { class: 'error-text', 'data-testid': 'plan-error' }, state.error.message),
          h('div', { class: 'dialog-buttons' }, button('dialog-cancel', 'Cancel', actions.cancel), retry),
        ],
        focus: retry,
      };
    }
    case 'plan-empty': {
      const back = button('dialog-back', 'Back', actions.cancel, 'primary');
      const kept = keptLines(state.plan.kept);
      const keptList = h('ul', { class: 'confirm-kept', 'aria-label': 'Items kept', 'data-testid': 'confirm-kept' });
      for (const line of kept) keptList.appendChild(h('li', {}, line));
      const body: HTMLElement[] = [h('p', { 'data-testid': 'plan-empty' }, emptyText(state.plan, state.request, state.shown))];
      if (kept.length > 0) body.push(h('h3', {}, `Kept: ${formatCount(state.plan.kept_items, 'item')}`), keptList);
      body.push(h('div', { class: 'dialog-buttons' }, back));
      return { title: 'Nothing to reclaim', body, focus: back };
    }
    case 'confirming': {
      const { plan } = state;
      const cancel = button('dialog-cancel', 'Cancel', actions.cancel);
      const confirm = button('dialog-confirm', `Delete ${formatCount(plan.planned_items, 'item')}`, actions.confirm, 'danger');
      const differs = planDiffers(state.shown, state.request, plan);
      return {
        title: 'Reclaim space?',
        body: [
          h('p', { 'data-testid': 'confirm-summary' }, confirmSummary(plan)),
          ...(differs ? [h('p', { class: 'notice', 'data-testid': 'confirm-changed' }, changedText(state.shown))] : []),
          ...confirmBody(plan),
          h('p', { class: 'muted' }, 'Each item is checked again just before deletion: anything that changed, is in use or whose owner runs is kept.'),
          h('div', { class: 'dialog-buttons' }, cancel, confirm),
        ],
        focus: cancel,
      };
    }
    case 'executing':
      return {
        title: 'Reclaiming…',
        body: [
          // No bar: the engine reports no progress of a run, and an indeterminate one would
          // animate (and keep the web process drawing) until it ends.
          h('p', { class: 'muted', 'data-testid': 'executing' }, `${formatCount(state.plan.planned_items, 'item')}, ${formatFreeable(state.plan.planned_freeable_bytes, state.plan.planned_bytes)} to free`),
        ],
        focus: null,
      };
    case 'done':
    case 'failed': {
      const done = button('dialog-done', 'Done', actions.dismiss, 'primary');
      const body =
        state.phase === 'done'
          ? [h('p', { class: 'result', 'data-testid': 'result' }, reportText(state.report)), ...(state.report.error_count > 0 ? [errorList(state.report)] : [])]
          : [h('p', { class: 'error-text', 'data-testid': 'result' }, state.error.message)];
      return {
        title: state.phase === 'done' ? 'Reclaimed' : 'Reclaim failed',
        body: [...body, h('div', { class: 'dialog-buttons' }, done)],
        focus: done,
      };
    }
    default:
      return null;
  }
}

/**
 * Why the plan made now deletes nothing: `The plan made now finds nothing older than 1 d to
 * delete: 2 items must stay.`, and what the estimate for the same request said.
 */
export function emptyText(plan: ReclaimPreview, request: PreviewRequest, shown: Estimated): string {
  const kept = plan.kept_items > 0 ? `: ${formatCount(plan.kept_items, 'item')} must stay` : '';
  const found = `The plan made now finds nothing older than ${formatDuration(plan.threshold_secs)} to delete${kept}.`;
  return sameRequest(shown.request, request) ? `${found} The estimate said ${aboutText(shown)}; items changed since.` : found;
}

function errorList(report: ReclaimResult): HTMLElement {
  const list = h('ul', { class: 'errors' });
  for (const error of report.errors.slice(0, 10)) {
    list.appendChild(h('li', { title: error.path }, `${error.path}: ${error.message}`));
  }
  return list;
}
