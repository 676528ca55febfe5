// Small per-producer charts (uPlot sparklines) of allocated bytes over the last 24 h or 7 d.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

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

interface TimeWindow {
  from: number;
  to: number;
}

const WIDTH_PX = 84;
const HEIGHT_PX = 26;

/** Sparklines kept per producer id, so a new snapshot updates data instead of rebuilding. */
export class Sparklines {
  private charts = new Map<string, { plot: uPlot; box: HTMLElement; win: TimeWindow }>();

  /**
   * The chart element for `id` showing `data` between `from` and `to` (Unix seconds). Returns the
   * same element for the same id (moved into the new row by the caller).
   */
  element(id: string, data: [number[], number[]], from: number, to: number): HTMLElement {
    const existing = this.charts.get(id);
    if (existing) {
      existing.win.from = from;
      existing.win.to = to;
      existing.plot.setData(data, true);
      return existing.box;
    }
    const win: TimeWindow = { from, to };
    const box = document.createElement('div');
    box.className = 'spark';
    box.setAttribute('aria-hidden', 'true');
    const stroke = cssVar('--accent', '#0a84ff');
    const fill = cssVar('--accent-soft', 'rgba(10,132,255,0.15)');
    const plot = new uPlot(
      {
        width: WIDTH_PX,
        height: HEIGHT_PX,
        pxAlign: false,
        cursor: { show: false },
        select: { show: false, left: 0, top: 0, width: 0, height: 0 },
        legend: { show: false },
        scales: {
          x: { time: false, range: () => [win.from, win.to] },
          y: { range: (_u, min, max) => [Math.min(0, min), Math.max(max * 1.05, 1)] },
        },
        axes: [{ show: false }, { show: false }],
        series: [{}, { stroke, fill, width: 1.5, points: { show: false } }],
      },
      data,
      box,
    );
    this.charts.set(id, { plot, box, win });
    return box;
  }

  /** Destroys the charts of ids not in `keep` (all when `keep` is empty). */
  prune(keep: ReadonlySet<string>): void {
    for (const [id, chart] of this.charts) {
      if (keep.has(id)) continue;
      chart.plot.destroy();
      this.charts.delete(id);
    }
  }
}

function cssVar(name: string, fallback: string): string {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}
