// Builders of DTOs for unit tests.
import type { KeptGroupDto, KeptItem, PlannedItem, ProducerDto, ReclaimPreview, ReclaimResult } from '../../src/types';

export function producer(over: Partial<ProducerDto>): ProducerDto {
  return {
    id: 'p',
    name: 'P',
    kind: 'leak',
    reclaim: 'auto',
    reclaimable: true,
    allocated_bytes: 0,
    apparent_bytes: 0,
    items: 0,
    files: 0,
    growth_bytes_per_hour: null,
    growth_bytes_per_day: null,
    growth_items_per_day: null,
    growth: null,
    orphan_bytes: 0,
    reclaimable_bytes: 0,
    reclaimable_items: 0,
    evidence: [],
    notes: '',
    top_items: [],
    history: [],
    ...over,
  };
}

/** Kept items grouped by reason as the engine sends them (most first), naming the first three. */
export function keptGroups(kept: readonly KeptItem[]): KeptGroupDto[] {
  const groups = new Map<KeptItem['reason'], KeptItem[]>();
  for (const k of kept) groups.set(k.reason, [...(groups.get(k.reason) ?? []), k]);
  return [...groups.entries()]
    .map(([reason, items]) => ({ reason, items: items.length, examples: items.slice(0, 3) }))
    .sort((a, b) => b.items - a.items);
}

/** A preview of `sizes.length` items of those sizes (all listed as the largest). */
export function plan(id: string, sizes: number[], kept: KeptItem[] = []): ReclaimPreview {
  const items: PlannedItem[] = sizes.map((bytes, i) => ({
    path: `/tmp/item-${id}-${i}`,
    root: '/tmp',
    producer: 'p',
    allocated_bytes: bytes,
    apparent_bytes: bytes,
    freeable_bytes: bytes,
    age_secs: 7200,
    dev: 1,
    ino: 100 + i,
    is_symlink: false,
    newest_mtime_unix_secs: 1_700_000_000,
  }));
  const planned = sizes.reduce((a, b) => a + b, 0);
  return {
    id,
    created_unix_secs: 1_700_007_200,
    threshold_secs: 3600,
    planned_items: items.length,
    planned_bytes: planned,
    planned_freeable_bytes: planned,
    producers: items.length === 0 ? [] : [{ producer: 'p', items: items.length, allocated_bytes: planned, freeable_bytes: planned, oldest_age_secs: 7200 }],
    kept_items: kept.length,
    kept: keptGroups(kept),
    largest: [...items].sort((a, b) => b.freeable_bytes - a.freeable_bytes),
  };
}

export function report(freedBytes: number, deleted: number): ReclaimResult {
  return {
    deleted_items: deleted,
    freed_bytes: freedBytes,
    kept_items: 0,
    already_gone_items: 0,
    error_count: 0,
    deleted: Array.from({ length: deleted }, (_, i) => ({
      path: `/tmp/d${i}`,
      producer: 'p',
      allocated_bytes: 0,
    })),
    kept: [],
    errors: [],
  };
}
