// Orders of the lists the window shows.
import type { AlertDto, KeepReasonKind, ProducerDto, UnattributedDto } from './types';

/**
 * Producers largest first: allocated bytes descending, then reclaimable bytes descending, then
 * name and id ascending, so equal sizes keep a stable order between snapshots. Returns a new array.
 */
export function sortProducers(producers: readonly ProducerDto[]): ProducerDto[] {
  return [...producers].sort(
    (a, b) =>
      b.allocated_bytes - a.allocated_bytes ||
      b.reclaimable_bytes - a.reclaimable_bytes ||
      a.name.localeCompare(b.name) ||
      a.id.localeCompare(b.id),
  );
}

/** Unattributed entries largest first (allocated bytes), then path; at most `limit`. */
export function topUnattributed(
  entries: readonly UnattributedDto[],
  limit: number,
): UnattributedDto[] {
  return [...entries]
    .sort((a, b) => b.allocated_bytes - a.allocated_bytes || a.path.localeCompare(b.path))
    .slice(0, limit);
}

/**
 * The alerts to list: the snapshot's plus those received as `alert` events since, newest first,
 * each once (same id, or for id 0 same rule, producer and time), at most `limit`.
 */
export function mergeAlerts(
  fromSnapshot: readonly AlertDto[],
  received: readonly AlertDto[],
  limit: number,
): AlertDto[] {
  const seen = new Set<string>();
  const out: AlertDto[] = [];
  for (const alert of [...received, ...fromSnapshot]) {
    const key =
      alert.id !== 0
        ? `id:${alert.id}`
        : `t:${alert.time_unix_secs}:${alert.rule}:${alert.producer ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(alert);
  }
  return out
    .sort((a, b) => b.time_unix_secs - a.time_unix_secs || b.id - a.id)
    .slice(0, limit);
}

/** Counts kept items per reason (in first-seen order), for the preview's "kept because" line. */
export function countByReason(kept: readonly { reason: KeepReasonKind }[]): Map<KeepReasonKind, number> {
  const counts = new Map<KeepReasonKind, number>();
  for (const item of kept) counts.set(item.reason, (counts.get(item.reason) ?? 0) + 1);
  return counts;
}
