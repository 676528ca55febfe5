// Human text for bytes, durations and rates. Binary units (KiB = 1024 B), as the README says.
import type { KeepReasonKind, ObservedGrowth } from './types';

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

/**
 * Bytes in binary units: `0 B`, `1023 B`, `1.5 KiB`, `150 MiB`, `10.3 GiB`.
 * One decimal below 100 of a unit, none from 100 up; a value that rounds to 1024 moves up a unit.
 * The engine's `units::format_bytes`, tested against its vectors (`tests/generated/human.ts`).
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return '—';
  const sign = bytes < 0 ? '−' : '';
  let value = Math.abs(bytes);
  if (value < 1024) return `${sign}${Math.round(value)} B`;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  let text = Math.round(value * 10) / 10 < 100 ? value.toFixed(1) : Math.round(value).toString();
  if (Number(text) >= 1024 && unit < UNITS.length - 1) {
    unit += 1;
    text = (Number(text) / 1024).toFixed(1);
  }
  return `${sign}${text} ${UNITS[unit]}`;
}

/** A signed change in bytes: `+1.5 GiB`, `−200 MiB`, `0 B`. */
export function formatSignedBytes(bytes: number): string {
  if (bytes > 0) return `+${formatBytes(bytes)}`;
  return formatBytes(bytes);
}

const DURATION_STEPS: [number, string][] = [
  [86400, 'd'],
  [3600, 'h'],
  [60, 'min'],
  [1, 's'],
];

/**
 * A duration in seconds as at most two units, largest first, rounded down:
 * `45 s`, `5 min`, `1 h 30 min`, `3 d`, `2 d 4 h`, `30 d`.
 */
export function formatDuration(secs: number): string {
  if (!Number.isFinite(secs) || secs < 0) return '—';
  let rest = Math.floor(secs);
  if (rest === 0) return '0 s';
  const parts: string[] = [];
  for (const [size, name] of DURATION_STEPS) {
    if (rest >= size) {
      const count = Math.floor(rest / size);
      parts.push(`${count} ${name}`);
      rest -= count * size;
      if (parts.length === 2) break;
    } else if (parts.length === 1) {
      // Two units must be adjacent: "1 d 5 min" reads as noise, say "1 d".
      break;
    }
  }
  return parts.join(' ');
}

/**
 * The disk-full ETA: `full in 3 d 4 h`, `full in < 1 min`. With no ETA (`null`): `no steady
 * trend yet` while the total grows (the engine gives an ETA only for a trend steady over an
 * hour), else `not filling`.
 */
export function formatEta(etaSecs: number | null, totalGrowth: ObservedGrowth | null = null): string {
  if (etaSecs === null || !Number.isFinite(etaSecs)) {
    return totalGrowth !== null && totalGrowth.bytes > 0 ? 'no steady trend yet' : 'not filling';
  }
  if (etaSecs < 60) return 'full in < 1 min';
  return `full in ${formatDuration(etaSecs)}`;
}

/** What the ETA's rate rests on: `steady over 2 h`; empty without a span. */
export function formatEtaBasis(spanSecs: number | null | undefined): string {
  return spanSecs ? `steady over ${formatDuration(spanSecs)}` : '';
}

/**
 * Growth over the span actually observed, never extrapolated: `+105 MiB in the last 3 min`,
 * `no change in the last 2 h`, `growth not measured yet` when `null` (fewer than two samples in
 * the last day: the chart beside it may still show older ones, or the one sample so far).
 */
export function formatObservedGrowth(g: ObservedGrowth | null | undefined): string {
  if (!g) return 'growth not measured yet';
  const span = formatDuration(g.span_secs);
  if (g.bytes === 0) return `no change in the last ${span}`;
  return `${formatSignedBytes(g.bytes)} in the last ${span}`;
}

/** A count with thousands separators (`12,345`) and its noun, singular for 1. */
export function formatCount(count: number, noun: string, plural = `${noun}s`): string {
  const text = Math.round(count).toLocaleString('en-US');
  return `${text} ${count === 1 ? noun : plural}`;
}

/** How long ago, from two Unix-second instants: `just now`, `5 min ago`, `2 d 3 h ago`. */
export function formatAgo(thenUnixSecs: number, nowUnixSecs: number): string {
  const secs = nowUnixSecs - thenUnixSecs;
  if (secs < 60) return 'just now';
  // Whole minutes: an "ago" that ticks every 30 s would otherwise show stale seconds.
  return `${formatDuration(Math.floor(secs / 60) * 60)} ago`;
}

/** The last path component (`/tmp/a/b/` → `b`), for narrow rows; the full path goes in a title. */
export function baseName(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, '');
  const index = Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\'));
  return index >= 0 ? trimmed.slice(index + 1) : trimmed;
}

/**
 * Why an item was kept, in words: one text per `KeepReason` of the engine (the `switch` is
 * exhaustive, so a reason added in Rust fails the type check until it has a text here).
 */
export function describeKeepReason(reason: KeepReasonKind): string {
  switch (reason) {
    case 'too-young':
      return 'too young';
    case 'owner-alive':
      return 'owner running';
    case 'in-use':
      return 'in use';
    case 'app-running':
      return 'app running';
    case 'never':
      return 'never reclaimed';
    case 'manual':
      return 'manual only';
    case 'structure':
      return 'dir the producer needs';
    case 'changed':
      return 'changed since plan';
    case 'unknown-producer':
      return 'unknown producer';
    case 'holds-root':
      return 'is or holds a root';
    case 'holds-mount':
      return 'a filesystem is mounted in it';
    case 'holds-protected':
      return 'is or holds a protected dir';
    case 'newest-clone-of-running-app':
      return 'newest clone of a running app';
    case 'newest-version':
      return 'newest version';
    case 'staged-update':
      return 'staged update not older than the app';
    case 'unreadable':
      return 'partly unreadable';
    case 'not-deletable':
      return 'not deletable by you';
    case 'not-checked':
      return 'could not be checked';
  }
}

/** A short label for an evidence URL: `github.com/owner/repo#123` style. */
export function evidenceLabel(url: string): string {
  try {
    const parsed = new URL(url);
    const parts = parsed.pathname.split('/').filter(Boolean);
    const issue = parts.length >= 4 && /^(issues|pull|discussions)$/.test(parts[2]);
    if (parsed.hostname === 'github.com' && issue) {
      return `${parts[0]}/${parts[1]}#${parts[3]}`;
    }
    return parsed.hostname + (parts.length > 0 ? `/${parts[parts.length - 1]}` : '');
  } catch {
    return url;
  }
}

/**
 * What deleting frees, with the allocated size beside it where they differ (APFS clones share
 * blocks, so deleting a clone frees less than it allocates): `2.0 GiB`, `1.2 GiB (2.0 GiB
 * allocated)`.
 */
export function formatFreeable(freeableBytes: number, allocatedBytes: number): string {
  const frees = formatBytes(freeableBytes);
  const allocated = formatBytes(allocatedBytes);
  return frees === allocated ? frees : `${frees} (${allocated} allocated)`;
}
