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

export function plan(id: string, sizes: number[], kept: KeptItem[] = []): ReclaimPlan {
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
    policy: { older_than: { secs: 3600, nanos: 0 }, producers: [], protected: [] },
    items,
    kept,
    roots: ['/tmp'],
    planned_bytes: planned,
    planned_freeable_bytes: planned,
  };
}

export function report(freedBytes: number, deleted: number): ReclaimReport {
  return {
    deleted: Array.from({ length: deleted }, (_, i) => ({
      path: `/tmp/d${i}`,
      producer: 'p',
      allocated_bytes: 0,
    })),
    kept: [],
    already_gone: [],
    freed_bytes: freedBytes,
    errors: [],
  };
}
