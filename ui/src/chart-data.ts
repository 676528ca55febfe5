// What a producer's chart shows, as plain data: the axis fitted to the samples, uPlot's columns,
// tick and hover texts. No DOM, no uPlot, no Intl (times are read with the Date getters, which do
// not format with the platform locale).
import { formatBytes, formatCount } from './format';
import type { ChartReclaim, ProducerHistory } from './types';

/** The narrowest x axis, seconds: one sample alone still gets a readable axis. */
export const MIN_AXIS_SECS = 600;

/**
 * The x range `[min, max]` (Unix seconds): from the first sample or reclaim (never before
 * `from`) to `to` (now). No data: the whole span. Never narrower than `MIN_AXIS_SECS`.
 */
export function fitAxis(times: readonly number[], from: number, to: number): [number, number] {
  const first = times.length === 0 ? from : Math.max(from, Math.min(...times));
  const min = Math.min(first, to - MIN_AXIS_SECS);
  return [min, to];
}

/** uPlot's aligned columns `[times, allocated bytes, items]`, oldest first. */
export type Columns = [number[], number[], number[]];

/** The chart of `history`: columns, the fitted axis, and the reclaims inside it. */
export interface ChartModel {
  columns: Columns;
  axis: [number, number];
  reclaims: ChartReclaim[];
}

/** Shapes `history` for the chart. */
export function chartModel(history: ProducerHistory): ChartModel {
  const samples = [...history.samples].sort((a, b) => a.time_unix_secs - b.time_unix_secs);
  const columns: Columns = [
    samples.map((s) => s.time_unix_secs),
    samples.map((s) => s.allocated_bytes),
    samples.map((s) => s.items),
  ];
  const times = [...columns[0], ...history.reclaims.map((r) => r.time_unix_secs)];
  const axis = fitAxis(times, history.from_unix_secs, history.to_unix_secs);
  const reclaims = history.reclaims.filter((r) => r.time_unix_secs >= axis[0] && r.time_unix_secs <= axis[1]);
  return { columns, axis, reclaims };
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

function two(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** `14:05` in local time. */
export function clockText(unixSecs: number): string {
  const d = new Date(unixSecs * 1000);
  return `${two(d.getHours())}:${two(d.getMinutes())}`;
}

/** An x tick: `14:00`, or at midnight the day (`Tue 14`). */
export function tickText(unixSecs: number): string {
  const d = new Date(unixSecs * 1000);
  if (d.getHours() === 0 && d.getMinutes() === 0) return `${WEEKDAYS[d.getDay()]} ${d.getDate()}`;
  return clockText(unixSecs);
}

/** A time relative to `nowUnixSecs`: `14:05` today, else `Tue 14 14:05`. */
export function whenText(unixSecs: number, nowUnixSecs: number): string {
  const d = new Date(unixSecs * 1000);
  const now = new Date(nowUnixSecs * 1000);
  const sameDay =
    d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate();
  return sameDay ? clockText(unixSecs) : `${WEEKDAYS[d.getDay()]} ${d.getDate()} ${clockText(unixSecs)}`;
}

/** The hover text of sample `index`: `14:05 · 3.0 GiB · 12,000 items`; '' outside the data. */
export function hoverText(columns: Columns, index: number | null | undefined, nowUnixSecs: number): string {
  if (index === null || index === undefined || index < 0 || index >= columns[0].length) return '';
  return `${whenText(columns[0][index], nowUnixSecs)} · ${formatBytes(columns[1][index])} · ${formatCount(columns[2][index], 'item')}`;
}

/** A reclaim mark's text: `Reclaimed 260 items, 260.0 MiB at 14:05 (rule metal-daily)`. */
export function reclaimText(r: ChartReclaim, nowUnixSecs: number): string {
  const by = r.rule ? ` (rule ${r.rule})` : '';
  return `Reclaimed ${formatCount(r.items, 'item')}, ${formatBytes(r.bytes)} at ${whenText(r.time_unix_secs, nowUnixSecs)}${by}`;
}
