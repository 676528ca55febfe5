// Builders of DTOs for unit tests.
import type { KeptItem, PlannedItem, ProducerDto, ReclaimPlan, ReclaimReport } from '../../src/types';

export function producer(over: Partial<ProducerDto>): ProducerDto {
  return {
    id: 'p',
    name: 'P',
    kind: 'leak',
    reclaim: 'auto',
    allocated_bytes: 0,
    apparent_bytes: 0,
    items: 0,
    files: 0,
    growth_bytes_per_hour: null,
    growth_bytes_per_day: null,
    growth_items_per_day: null,
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

export function plan(id: string, sizes: number[], kept: KeptItem[] = []): ReclaimPlan {
  const items: PlannedItem[] = sizes.map((bytes, i) => ({
    path: `/tmp/item-${id}-${i}`,
    producer: 'p',
    allocated_bytes: bytes,
    age_secs: 7200,
  }));
  return { id, items, kept, planned_bytes: sizes.reduce((a, b) => a + b, 0) };
}

export function report(freedBytes: number, deleted: number): ReclaimReport {
  return {
    deleted: Array.from({ length: deleted }, (_, i) => ({
      path: `/tmp/d${i}`,
      producer: 'p',
      allocated_bytes: 0,
    })),
    kept: [],
    freed_bytes: freedBytes,
    errors: [],
  };
}
