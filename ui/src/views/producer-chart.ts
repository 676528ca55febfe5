// The chart of an expanded producer row: allocated bytes over the chosen span from the history
// database (`producer_history`), the window's width, the time axis fitted to the data, the value
// under the pointer, and every reclaim that deleted its items marked (a dashed line, and listed
// below in words). uPlot as for the sparklines: loaded on first use, every formatter given here.
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { chartModel, hoverText, reclaimText, tickText, type ChartModel } from '../chart-data';
import { h, replaceChildren } from '../dom';
import { formatBytes } from '../format';
import type { ProducerHistory, UiError } from '../types';
import { formatSampleBytes, formatSecs } from './chart';

const HEIGHT_PX = 150;
/** A chart's data is fetched again when the window's clock moved on this far, seconds. */
export const REFRESH_SECS = 60;

type UPlotClass = typeof uPlot;
let uplotLoad: Promise<UPlotClass | null> | null = null;
function loadUPlot(): Promise<UPlotClass | null> {
  uplotLoad ??= import('uplot').then(
    (module) => module.default,
    () => null,
  );
  return uplotLoad;
}

interface Entry {
  box: HTMLElement;
  plotBox: HTMLElement;
  readout: HTMLElement;
  marks: HTMLElement;
  plot: uPlot | null;
  spanSecs: number;
  fetchedAt: number;
  resize: ResizeObserver | null;
}

/** The expanded rows' charts, kept per producer id across renders. */
export class ProducerCharts {
  private entries = new Map<string, Entry>();

  constructor(private readonly load: (producer: string, spanSecs: number) => Promise<ProducerHistory>) {}

  /**
   * The chart element of producer `id` over the last `spanSecs`; the same element on every call
   * (moved into the new row by the caller). Fetches the data when the span changed or the clock
   * (`nowUnixSecs`, the snapshot's) moved on by `REFRESH_SECS`.
   */
  element(id: string, spanSecs: number, nowUnixSecs: number): HTMLElement {
    let entry = this.entries.get(id);
    if (!entry) {
      const readout = h('p', { class: 'chart-readout', 'data-testid': 'chart-readout', 'aria-live': 'polite' });
      const plotBox = h('div', { class: 'chart-plot', 'aria-hidden': 'true' });
      const marks = h('ul', { class: 'chart-marks', 'data-testid': 'chart-reclaims' });
      const box = h('div', { class: 'producer-chart', 'data-testid': `chart-${id}` }, plotBox, readout, marks);
      entry = { box, plotBox, readout, marks, plot: null, spanSecs: -1, fetchedAt: -Infinity, resize: null };
      this.entries.set(id, entry);
    }
    if (entry.spanSecs !== spanSecs || nowUnixSecs - entry.fetchedAt >= REFRESH_SECS) {
      entry.spanSecs = spanSecs;
      entry.fetchedAt = nowUnixSecs;
      const e = entry;
      this.load(id, spanSecs).then(
        (history) => {
          if (this.entries.get(id) === e && e.spanSecs === spanSecs) void draw(e, chartModel(history), nowUnixSecs);
        },
        (error: UiError) => {
          e.fetchedAt = -Infinity; // try again with the next render
          replaceChildren(e.readout, `The history cannot be read: ${error.message}`);
        },
      );
    }
    return entry.box;
  }

  /** Destroys the charts of ids not in `keep`. */
  prune(keep: ReadonlySet<string>): void {
    for (const [id, entry] of this.entries) {
      if (keep.has(id)) continue;
      entry.plot?.destroy();
      entry.resize?.disconnect();
      this.entries.delete(id);
    }
  }

  /** Fetches every chart again with the next render (after a reclaim). */
  invalidate(): void {
    for (const entry of this.entries.values()) entry.fetchedAt = -Infinity;
  }
}

async function draw(e: Entry, model: ChartModel, nowUnixSecs: number): Promise<void> {
  const [xs] = model.columns;
  const idle = xs.length === 0 ? 'No samples in this span yet: the monitor records one every few minutes.' : '';
  const last = xs.length - 1;
  const resting = () => idle || `Now: ${hoverText(model.columns, last, nowUnixSecs)}`;
  replaceChildren(e.readout, resting());
  replaceChildren(
    e.marks,
    ...model.reclaims.map((r) => h('li', {}, h('span', { class: 'mark-key', 'aria-hidden': 'true' }), reclaimText(r, nowUnixSecs))),
  );
  e.plot?.destroy();
  e.plot = null;
  replaceChildren(e.plotBox);
  if (xs.length === 0) return;
  const UPlot = await loadUPlot();
  if (UPlot === null) return;
  const opts = options(model, e.plotBox.clientWidth || 320, (index) => {
    e.readout.textContent = index === null ? resting() : hoverText(model.columns, index, nowUnixSecs);
  });
  try {
    e.plot = new UPlot(opts, [model.columns[0], model.columns[1]], e.plotBox);
  } catch {
    replaceChildren(e.plotBox); // no chart rather than no window
    return;
  }
  e.resize ??= new ResizeObserver(() => {
    const width = e.plotBox.clientWidth;
    if (width > 0 && e.plot && Math.abs(e.plot.width - width) > 1) e.plot.setSize({ width, height: HEIGHT_PX });
  });
  e.resize.observe(e.plotBox);
}

function options(model: ChartModel, width: number, hover: (index: number | null) => void): uPlot.Options {
  const muted = cssVar('--muted', '#6e6e73');
  const line = cssVar('--line', 'rgba(0,0,0,0.1)');
  const danger = cssVar('--danger', '#c9302c');
  const axis = { stroke: muted, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
  return {
    width,
    height: HEIGHT_PX,
    legend: { show: false },
    select: { show: false, left: 0, top: 0, width: 0, height: 0 },
    cursor: { drag: { x: false, y: false }, points: { size: 7 } },
    fmtDate: () => (date: Date) => formatSecs(date.getTime() / 1000),
    tzDate: (ts: number) => new Date(ts * 1000),
    scales: {
      x: { time: true, range: () => model.axis },
      y: { range: (_u, _min, max) => [0, Math.max(max * 1.1, 1)] },
    },
    axes: [
      { ...axis, space: 70, values: (_u, splits) => splits.map(tickText) },
      { ...axis, size: 66, values: (_u, splits) => splits.map((v) => formatBytes(v)) },
    ],
    series: [
      { value: (_u, v) => formatSecs(v) },
      {
        stroke: cssVar('--accent', '#0a84ff'),
        fill: cssVar('--accent-soft', 'rgba(10,132,255,0.15)'),
        width: 1.5,
        points: { show: model.columns[0].length < 3 },
        value: (_u, v) => formatSampleBytes(v),
      },
    ],
    hooks: {
      setCursor: [(u) => hover(u.cursor.idx ?? null)],
      draw: [
        (u) => {
          const ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = danger;
          ctx.lineWidth = 1.5 * devicePixelRatio;
          ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
          for (const r of model.reclaims) {
            const x = u.valToPos(r.time_unix_secs, 'x', true);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
          }
          ctx.restore();
        },
      ],
    },
  };
}

function cssVar(name: string, fallback: string): string {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}
