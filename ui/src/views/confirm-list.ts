// What the confirm dialog lists: the items that will go (largest first, with sizes and ages), what
// is kept and why, and that deletion is permanent.
import { h } from '../dom';
import { baseName, describeKeepReason, formatCount, formatDuration, formatFreeable } from '../format';
import type { KeepReasonKind, KeptItem, PlannedItem, ReclaimPlan } from '../types';

/** How many items to delete the dialog names; the rest are summed in one line. */
export const ITEMS_LISTED = 12;
/** How many kept items each reason names. */
export const KEPT_NAMED = 3;

/**
 * One line per item to delete: `gpuarchiver-4242 · 4.0 MiB · 5 d old`, what it frees first
 * (with its allocated size where a clone shares blocks), largest first.
 */
export function goingLines(items: readonly PlannedItem[], limit = ITEMS_LISTED): { lines: string[]; rest: string | null } {
  const sorted = [...items].sort(
    (a, b) => b.freeable_bytes - a.freeable_bytes || b.allocated_bytes - a.allocated_bytes || a.path.localeCompare(b.path),
  );
  const lines = sorted
    .slice(0, limit)
    .map((i) => `${baseName(i.path)} · ${formatFreeable(i.freeable_bytes, i.allocated_bytes)} · ${formatDuration(i.age_secs)} old`);
  const more = sorted.slice(limit);
  const rest =
    more.length === 0
      ? null
      : `and ${formatCount(more.length, 'more item')} (${formatFreeable(
          more.reduce((s, i) => s + i.freeable_bytes, 0),
          more.reduce((s, i) => s + i.allocated_bytes, 0),
        )})`;
  return { lines, rest };
}

/** One line per keep reason, most items first: `3 owner running: model_1_0 (pid 77), …`. */
export function keptLines(kept: readonly KeptItem[], named = KEPT_NAMED): string[] {
  const groups = new Map<KeepReasonKind, KeptItem[]>();
  for (const k of kept) groups.set(k.reason, [...(groups.get(k.reason) ?? []), k]);
  return [...groups.entries()]
    .sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
    .map(([reason, items]) => {
      const names = items.slice(0, named).map(keptName).join(', ');
      const more = items.length > named ? `, ${(items.length - named).toLocaleString('en-US')} more` : '';
      return `${items.length.toLocaleString('en-US')} ${describeKeepReason(reason)}: ${names}${more}`;
    });
}

function keptName(k: KeptItem): string {
  const name = baseName(k.path);
  switch (k.reason) {
    case 'too-young':
      return `${name} (${formatDuration(k.age_secs)} old, needs ${formatDuration(k.needed_secs)})`;
    case 'owner-alive':
    case 'in-use':
      return `${name} (pid ${k.pid})`;
    case 'app-running':
      return `${name} (${k.name} runs)`;
    default:
      return name;
  }
}

/** The dialog's body: the list of what goes, what is kept and why, and the warning. */
export function confirmBody(plan: ReclaimPlan): HTMLElement[] {
  const going = goingLines(plan.items);
  const list = h('ol', { class: 'confirm-items', 'aria-label': 'Items to delete', 'data-testid': 'confirm-items' });
  for (const line of going.lines) list.appendChild(h('li', {}, line));
  if (going.rest) list.appendChild(h('li', { class: 'muted' }, going.rest));
  const out: HTMLElement[] = [h('h3', {}, 'Deleted, largest first'), list];
  const kept = keptLines(plan.kept);
  if (kept.length > 0) {
    const keptList = h('ul', { class: 'confirm-kept', 'aria-label': 'Items kept', 'data-testid': 'confirm-kept' });
    for (const line of kept) keptList.appendChild(h('li', {}, line));
    out.push(h('h3', {}, `Kept: ${formatCount(plan.kept.length, 'item')}`), keptList);
  }
  out.push(
    h(
      'p',
      { class: 'warn-text', 'data-testid': 'confirm-permanent' },
      'Deletion is permanent: the items do not go to the Trash and cannot be restored.',
    ),
  );
  return out;
}
