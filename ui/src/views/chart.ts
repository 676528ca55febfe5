// Small per-producer charts (uPlot sparklines) of allocated bytes over the last 24 h or 7 d.
// uPlot is loaded on first use (after the locale guard of main.ts ran): a uPlot that fails to
// load or draw costs the charts, never the window. Every formatter uPlot has is given here, so it
// never formats with the platform locale (see `../locale.ts`).
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatBytes } from '../format';

/** The chart's time window. */
export type ChartRange = '24h' | '7d';

/** Seconds in each window. */
export const RANGE_SECS: Record<ChartRange, number> = { '24h': 86400, '7d': 7 * 86400 };

/**
 * The samples of `history` (`[unix_secs, bytes]`, oldest first) inside the window ending at
 * `nowUnixSecs`, as uPlot's aligned columns `[xs, ys]`.
 */
export function windowed(
  history: readonly [number, number][],
  range: ChartRange,
  nowUnixSecs: number,
): [number[], number[]] {
  const from = nowUnixSecs - RANGE_SECS[range];
  const xs: number[] = [];
  const ys: number[] = [];
  for (const [t, bytes] of history) {
    if (t < from || t > nowUnixSecs) continue;
    xs.push(t);
    ys.push(bytes);
  }
  return [xs, ys];
}

export interface TimeWindow {
  from: number;
  to: number;
}

const WIDTH_PX = 84;
const HEIGHT_PX = 26;

/** x values (Unix seconds) as plain digits: no locale involved. */
export function formatSecs(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '' : String(Math.round(value));
}

/** y values (bytes) in binary units: no locale involved. */
export function formatSampleBytes(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '' : formatBytes(value);
}

/** The uPlot options of one sparkline: every formatter explicit, so uPlot never calls Intl. */
export function sparkOptions(win: TimeWindow, stroke: string, fill: string): uPlot.Options {
  return {
    width: WIDTH_PX,
    height: HEIGHT_PX,
    pxAlign: false,
    cursor: { show: false },
    select: { show: false, left: 0, top: 0, width: 0, height: 0 },
    legend: { show: false },
    // Dates: x is Unix seconds shown as numbers, but uPlot's defaults would still reach Intl.
    fmtDate: () => (date: Date) => formatSecs(date.getTime() / 1000),
    tzDate: (ts: number) => new Date(ts * 1000),
    scales: {
      x: { time: false, range: () => [win.from, win.to] },
      y: { range: (_u, min, max) => [Math.min(0, min), Math.max(max * 1.05, 1)] },
    },
    axes: [
      { show: false, values: (_u, splits) => splits.map(formatSecs) },
      { show: false, values: (_u, splits) => splits.map(formatSampleBytes) },
    ],
    series: [
      { value: (_u, v) => formatSecs(v) },
      { stroke, fill, width: 1.5, points: { show: false }, value: (_u, v) => formatSampleBytes(v) },
    ],
  };
}

type UPlotClass = typeof uPlot;
let uplotLoad: Promise<UPlotClass | null> | null = null;

/** uPlot, loaded once; `null` when it cannot load. */
function loadUPlot(): Promise<UPlotClass | null> {
  uplotLoad ??= import('uplot').then(
    (module) => module.default,
    () => null,
  );
  return uplotLoad;
}

interface Chart {
  plot: uPlot | null;
  box: HTMLElement;
  win: TimeWindow;
  data: [number[], number[]];
}

/** Sparklines kept per producer id, so a new snapshot updates data instead of rebuilding. */
export class Sparklines {
  private charts = new Map<string, Chart>();

  /**
   * The chart element for `id` showing `data` between `from` and `to` (Unix seconds). Returns the
   * same element for the same id (moved into the new row by the caller). The chart is drawn into
   * it once uPlot has loaded; without uPlot the element stays empty.
   */
  element(id: string, data: [number[], number[]], from: number, to: number): HTMLElement {
    const existing = this.charts.get(id);
    if (existing) {
      existing.win.from = from;
      existing.win.to = to;
      existing.data = data;
      existing.plot?.setData(data, true);
      return existing.box;
    }
    const box = document.createElement('div');
    box.className = 'spark';
    box.setAttribute('aria-hidden', 'true');
    const chart: Chart = { plot: null, box, win: { from, to }, data };
    this.charts.set(id, chart);
    void loadUPlot().then((UPlot) => {
      if (UPlot === null || this.charts.get(id) !== chart || chart.plot !== null) return;
      const stroke = cssVar('--accent', '#0a84ff');
      const fill = cssVar('--accent-soft', 'rgba(10,132,255,0.15)');
      try {
        chart.plot = new UPlot(sparkOptions(chart.win, stroke, fill), chart.data, box);
      } catch {
        box.replaceChildren(); // no chart rather than no window
      }
    });
    return box;
  }

  /** Destroys the charts of ids not in `keep` (all when `keep` is empty). */
  prune(keep: ReadonlySet<string>): void {
    for (const [id, chart] of this.charts) {
      if (keep.has(id)) continue;
      chart.plot?.destroy();
      this.charts.delete(id);
    }
  }
}

function cssVar(name: string, fallback: string): string {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}
