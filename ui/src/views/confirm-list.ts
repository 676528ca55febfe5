// What the confirm dialog lists: the items that will go (largest first, with sizes and ages), what
// is kept and why, and that deletion is permanent.
import { h } from '../dom';
import { baseName, describeKeepReason, formatCount, formatDuration, formatFreeable } from '../format';
import type { KeptGroupDto, KeptItem, PreviewProducer, ReclaimPreview } from '../types';

/** How many items to delete the dialog names; the rest are summed in one line. */
export const ITEMS_LISTED = 12;
/** How many kept items each reason names. */
export const KEPT_NAMED = 3;

/**
 * One line per item to delete: `gpuarchiver-4242 · 4.0 MiB · 5 d old`, what it frees first
 * (with its allocated size where a clone shares blocks), largest first. The preview carries the
 * largest items only: the rest of the plan (its count and sums less the lines') is one line.
 */
export function goingLines(
  plan: Pick<ReclaimPreview, 'largest' | 'planned_items' | 'planned_bytes' | 'planned_freeable_bytes'>,
  limit = ITEMS_LISTED,
): { lines: string[]; rest: string | null } {
  const sorted = [...plan.largest].sort(
    (a, b) => b.freeable_bytes - a.freeable_bytes || b.allocated_bytes - a.allocated_bytes || a.path.localeCompare(b.path),
  );
  const shown = sorted.slice(0, limit);
  const lines = shown.map(
    (i) => `${baseName(i.path)} · ${formatFreeable(i.freeable_bytes, i.allocated_bytes)} · ${formatDuration(i.age_secs)} old`,
  );
  const more = plan.planned_items - shown.length;
  const rest =
    more <= 0
      ? null
      : `and ${formatCount(more, 'more item')} (${formatFreeable(
          plan.planned_freeable_bytes - shown.reduce((s, i) => s + i.freeable_bytes, 0),
          plan.planned_bytes - shown.reduce((s, i) => s + i.allocated_bytes, 0),
        )})`;
  return { lines, rest };
}

/** One line per keep reason, most items first: `3 owner running: model_1_0 (pid 77), …`. */
export function keptLines(kept: readonly KeptGroupDto[], named = KEPT_NAMED): string[] {
  return [...kept]
    .sort((a, b) => b.items - a.items || a.reason.localeCompare(b.reason))
    .map((group) => {
      const shown = group.examples.slice(0, named);
      const names = shown.map(keptName).join(', ');
      const left = group.items - shown.length;
      const more = left > 0 ? `, ${left.toLocaleString('en-US')} more` : '';
      return `${group.items.toLocaleString('en-US')} ${describeKeepReason(group.reason)}: ${names}${more}`;
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
    case 'staged-update':
      return k.staged && k.installed ? `${name} (${k.staged}, installed ${k.installed})` : `${name} (version unknown)`;
    default:
      return name;
  }
}

/**
 * One line per planned producer whose tool manages its cache, by producer id: `homebrew-cache is
 * managed by its tool: run `brew cleanup` first; deleting from here stays possible.`
 */
export function managedLines(producers: readonly PreviewProducer[]): string[] {
  return [...producers]
    .filter((p) => p.items > 0 && p.managed_by)
    .sort((a, b) => a.producer.localeCompare(b.producer))
    .map((p) => `${p.producer} is managed by its tool: run \`${p.managed_by}\` first; deleting from here stays possible.`);
}

/** The dialog's body: what goes, the native commands to prefer, what is kept and why, the warning. */
export function confirmBody(plan: ReclaimPreview): HTMLElement[] {
  const going = goingLines(plan);
  const list = h('ol', { class: 'confirm-items', 'aria-label': 'Items to delete', 'data-testid': 'confirm-items' });
  for (const line of going.lines) list.appendChild(h('li', {}, line));
  if (going.rest) list.appendChild(h('li', { class: 'muted' }, going.rest));
  const out: HTMLElement[] = [h('h3', {}, 'Deleted, largest first'), list];
  const managed = managedLines(plan.producers);
  if (managed.length > 0) {
    const managedList = h('ul', { class: 'confirm-managed', 'aria-label': 'Managed by their tool', 'data-testid': 'confirm-managed' });
    for (const line of managed) managedList.appendChild(h('li', {}, line));
    out.push(h('h3', {}, 'Better run by their tool'), managedList);
  }
  const kept = keptLines(plan.kept);
  if (kept.length > 0) {
    const keptList = h('ul', { class: 'confirm-kept', 'aria-label': 'Items kept', 'data-testid': 'confirm-kept' });
    for (const line of kept) keptList.appendChild(h('li', {}, line));
    out.push(h('h3', {}, `Kept: ${formatCount(plan.kept_items, 'item')}`), keptList);
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
