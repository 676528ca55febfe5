// The snapshot the browser tests render, with sizes chosen so the expected texts are known:
// 3 GiB = 3221225472, 150 MiB = 157286400, 5.5 MiB = 5767168.
import type { Snapshot } from '../../src/types';
import { producer } from '../unit/fixture';

export const NOW = 1_760_000_000;
const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

function history(bytesNow: number, growthPerDay: number): [number, number][] {
  // One sample an hour for 7 days, growing linearly to `bytesNow`.
  const out: [number, number][] = [];
  for (let hour = 7 * 24; hour >= 0; hour -= 1) {
    out.push([NOW - hour * 3600, Math.max(0, Math.round(bytesNow - (growthPerDay * hour) / 24))]);
  }
  return out;
}

export function fixtureSnapshot(): Snapshot {
  return {
    taken_at_unix_secs: NOW,
    state: 'watching',
    scan_progress: { roots_done: 2, roots_total: 2, entries_done: 0 },
    threshold_secs: 86400,
    total_allocated_bytes: 4 * GIB,
    total_apparent_bytes: 4 * GIB - 10 * MIB,
    disk_full_eta_secs: 3 * 86400 + 4 * 3600,
    disk_full_eta_span_secs: 86400,
    total_growth: { bytes: 1288490189 + 50 * MIB, items: 4001, span_secs: 86400 },
    unexplained_growth: [],
    unattributed_groups: [],
    hidden_groups: 0,
    ignored_shapes: [],
    live_at_unix_secs: NOW,
    stopped: null,
    roots: [
      { kind: 'temp', path: '/tmp', canonical: '/tmp', state: 'ok', allocated_bytes: 3 * GIB, apparent_bytes: 3 * GIB, items: 12010, files: 12000, dirs: 11, vanished: 0, free_bytes: 50 * GIB, purgeable_bytes: 0, volume_bytes: 500 * GIB, mount: '/', watch_mode: 'events', watch_error: null, unreadable: 0, unreadable_paths: [], unwatched_paths: [], rescans: 0 },
      { kind: 'cache', path: '/home/u/.cache', canonical: '/home/u/.cache', state: 'ok', allocated_bytes: GIB, apparent_bytes: GIB, items: 40, files: 400, dirs: 41, vanished: 0, free_bytes: 100 * GIB, purgeable_bytes: 0, volume_bytes: 1000 * GIB, mount: '/home', watch_mode: 'polling', watch_error: 'inotify watch limit reached', unreadable: 2, unreadable_paths: [], unwatched_paths: [], rescans: 3 },
    ],
    // Deliberately not in size order: the window sorts.
    producers: [
      producer({
        id: 'katago-coreml', name: 'KataGo CoreML bundles', allocated_bytes: 150 * MIB, apparent_bytes: 149 * MIB,
        items: 3, files: 30, growth_bytes_per_day: 50 * MIB, growth: { bytes: 50 * MIB, items: 1, span_secs: 86400 }, reclaimable_bytes: 100 * MIB, reclaimable_items: 2,
        notes: 'KataGo writes a compiled CoreML model per run and never deletes it.',
        evidence: ['https://github.com/lightvector/KataGo/issues/1234'],
        top_items: [
          { path: '/tmp/katago-coreml-111.mlmodelc', allocated_bytes: 50 * MIB, age_secs: 2 * 86400 },
          { path: '/tmp/katago-coreml-222.mlmodelc', allocated_bytes: 50 * MIB, age_secs: 3 * 3600 },
        ],
        history: history(150 * MIB, 50 * MIB),
      }),
      producer({
        id: 'onnxruntime', name: 'ONNX Runtime', kind: 'cache', reclaim: 'manual', allocated_bytes: 5767168, apparent_bytes: 5767168,
        items: 1, files: 4, growth_bytes_per_day: 0, growth: { bytes: 0, items: 0, span_secs: 86400 }, history: history(5767168, 0),
      }),
      producer({
        id: 'metal-gpuarchiver', name: 'Metal gpuarchiver', allocated_bytes: 3 * GIB, apparent_bytes: 3 * GIB,
        items: 12000, files: 36000, growth_bytes_per_day: 1288490189, growth: { bytes: 1288490189, items: 4000, span_secs: 86400 }, reclaimable_bytes: 2 * GIB, reclaimable_items: 8000,
        orphan_bytes: GIB, notes: 'Metal leaves a gpuarchiver-* dir per process.',
        evidence: ['https://developer.apple.com/forums/thread/12345'],
        top_items: [{ path: '/tmp/com.apple.gpuarchiver/gpuarchiver-4242', allocated_bytes: 4 * MIB, age_secs: 5 * 86400 }],
        history: history(3 * GIB, 1288490189),
      }),
    ],
    unattributed: [
      { path: '/tmp/mystery-dir', root_kind: 'temp', allocated_bytes: 200 * MIB, apparent_bytes: 200 * MIB },
      { path: '/home/u/.cache/pip', root_kind: 'cache', allocated_bytes: 300 * MIB, apparent_bytes: 300 * MIB },
    ],
    alerts: [
      { id: 7, time_unix_secs: NOW - 600, rule: 'producer-growth', producer: 'metal-gpuarchiver', title: 'Metal gpuarchiver is growing', message: 'Metal gpuarchiver grew 1.2 GiB and 4000 items in 1 d. Reclaim: cachewatch reclaim --producer metal-gpuarchiver --older-than 1d. Upstream: https://developer.apple.com/forums/thread/12345',
        // What the engine derives from the message (alerts::for_app, alerts::suggestion_in).
        app_message: 'Metal gpuarchiver grew 1.2 GiB and 4000 items in 1 d. Upstream: https://developer.apple.com/forums/thread/12345',
        suggested_reclaim: { producer: 'metal-gpuarchiver', older_than_secs: 86400 } },
    ],
    // A CoreAI crash loop (12 reports, highlighted) and a process that crashed twice (not).
    crash_groups: [
      {
        process: 'ModelWorker', signature: 'coreai-ndarray-allocation-cap',
        title: 'CoreAI runtime allocation cap: the process is killed after 16384 outputs',
        count: 12, first_unix_secs: NOW - 3600, last_unix_secs: NOW - 300, report_bytes: 12 * 98304,
      },
      {
        process: 'Preview', signature: 'crash', title: 'A process keeps crashing',
        count: 2, first_unix_secs: NOW - 2 * 86400, last_unix_secs: NOW - 86400, report_bytes: 40960,
      },
    ],
    errors: [],
    auto_reclaim: { enabled: false, progress: null, rules: [], reclaimed: [] },
  };
}

/**
 * The fixture with two unknown producers in /tmp: `swc-<uuid>/` (24 members, 96 KiB, a writer
 * named by pid-in-name evidence) and `odd\xff-<uuid>/`, whose names are not UTF-8 (no rule).
 */
export function groupSnapshot(): Snapshot {
  const snap = fixtureSnapshot();
  const base = {
    root_kind: 'temp' as const,
    root: '/tmp',
    oldest_mtime: NOW - 3 * 86400,
    newest_mtime: NOW - 600,
    writers: [],
    confirmed_leak: false,
    history_key: '2f746d7000647377632d00750024',
  };
  snap.unattributed_groups = [
    {
      ...base,
      shape: 'swc-<uuid>/',
      label: 'swc-<uuid>/',
      history_key: '2f746d700064737763',
      items: 24,
      allocated_bytes: 96 * 1024,
      apparent_bytes: 61_000,
      examples: ['swc-00000000-1a2b-4c3d-8e9f-000000000000', 'swc-00000001-1a2b-4c3d-8e9f-000000001eef'],
      evidence: [
        { kind: 'pid-in-name', name: 'swc', exe: '/usr/local/bin/swc', app: null, agree: 22, total: 24, orphans: 20, alive: false, last_seen_unix_secs: NOW - 7200 },
      ],
    },
    {
      ...base,
      shape: 'odd\\xff-<uuid>/',
      label: 'odd\\xff-<uuid>/',
      items: 21,
      allocated_bytes: 84 * 1024,
      apparent_bytes: 50_000,
      examples: ['odd\ufffd-00000000-1a2b-4c3d-8e9f-000000000000'],
      evidence: [],
    },
  ];
  return snap;
}
