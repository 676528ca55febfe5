import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  canReclaim,
  ReclaimController,
  reduce,
  toIpcError,
  type ReclaimIpc,
  type ReclaimState,
} from '../../src/reclaim-state';
import type { ReclaimPreview, ReclaimResult } from '../../src/types';
import { plan, report } from './fixture';

describe('reduce', () => {
  const p1 = plan('p1', [100, 200]);
  it('ignores answers to older preview requests', () => {
    let s: ReclaimState = { phase: 'idle' };
    s = reduce(s, { type: 'preview-requested', seq: 1 });
    s = reduce(s, { type: 'preview-requested', seq: 2 });
    const stale = reduce(s, { type: 'preview-resolved', seq: 1, plan: p1 });
    expect(stale).toBe(s);
    s = reduce(s, { type: 'preview-resolved', seq: 2, plan: p1 });
    expect(s).toEqual({ phase: 'ready', plan: p1 });
  });
  it('keeps showing the old plan while a new preview loads', () => {
    const s = reduce({ phase: 'ready', plan: p1 }, { type: 'preview-requested', seq: 5 });
    expect(s).toEqual({ phase: 'previewing', seq: 5, plan: p1 });
    expect(canReclaim(s)).toBe(false);
  });
  it('goes ready → confirming → executing → done → idle', () => {
    let s: ReclaimState = { phase: 'ready', plan: p1 };
    s = reduce(s, { type: 'reclaim-clicked' });
    expect(s.phase).toBe('confirming');
    s = reduce(s, { type: 'confirmed' });
    expect(s.phase).toBe('executing');
    expect(reduce(s, { type: 'confirmed' })).toBe(s); // a second confirm does nothing
    expect(reduce(s, { type: 'preview-requested', seq: 9 })).toBe(s); // no preview mid-reclaim
    const r = report(300, 2);
    s = reduce(s, { type: 'executed', report: r });
    expect(s).toEqual({ phase: 'done', plan: p1, report: r });
    s = reduce(s, { type: 'dismissed' });
    expect(s).toEqual({ phase: 'idle' });
  });
  it('does not confirm an empty plan', () => {
    const empty = plan('e', []);
    const s: ReclaimState = { phase: 'ready', plan: empty };
    expect(canReclaim(s)).toBe(false);
    expect(reduce(s, { type: 'reclaim-clicked' })).toBe(s);
  });
  it('returns to the same plan on cancel', () => {
    const s = reduce({ phase: 'confirming', plan: p1 }, { type: 'cancelled' });
    expect(s).toEqual({ phase: 'ready', plan: p1 });
  });
});

/** A fake IPC whose answers the test releases by hand. */
function fakeIpc() {
  const plans: { producers: string[]; thresholdSecs: number; resolve: (p: ReclaimPreview) => void; reject: (e: unknown) => void }[] = [];
  const executes: { planId: string; resolve: (r: ReclaimResult) => void; reject: (e: unknown) => void }[] = [];
  const ipc: ReclaimIpc = {
    planReclaim: (producers, thresholdSecs) =>
      new Promise((resolve, reject) => plans.push({ producers, thresholdSecs, resolve, reject })),
    executeReclaim: (planId) => new Promise((resolve, reject) => executes.push({ planId, resolve, reject })),
  };
  return { ipc, plans, executes };
}

describe('ReclaimController', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('debounces a burst of threshold changes into one plan_reclaim call', async () => {
    const { ipc, plans } = fakeIpc();
    const states: string[] = [];
    const c = new ReclaimController(ipc, (s) => states.push(s.phase), 250);
    c.request({ producers: [], thresholdSecs: 300 });
    vi.advanceTimersByTime(100);
    c.request({ producers: [], thresholdSecs: 3600 });
    vi.advanceTimersByTime(100);
    c.request({ producers: ['katago-coreml'], thresholdSecs: 86400 });
    vi.advanceTimersByTime(249);
    expect(plans).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(plans).toHaveLength(1);
    expect(plans[0].producers).toEqual(['katago-coreml']);
    expect(plans[0].thresholdSecs).toBe(86400);
    const p = plan('x', [4096, 8192]);
    plans[0].resolve(p);
    await vi.runAllTimersAsync();
    expect(c.state).toEqual({ phase: 'ready', plan: p });
    expect(states).toEqual(['previewing', 'ready']);
  });

  it('drops a slow answer that a newer preview overtook', async () => {
    const { ipc, plans } = fakeIpc();
    const c = new ReclaimController(ipc, () => {}, 10);
    c.request({ producers: [], thresholdSecs: 300 });
    vi.advanceTimersByTime(10);
    c.request({ producers: [], thresholdSecs: 604800 });
    vi.advanceTimersByTime(10);
    expect(plans).toHaveLength(2);
    const newer = plan('new', [1]);
    plans[1].resolve(newer);
    await vi.runAllTimersAsync();
    plans[0].resolve(plan('old', [1, 2, 3]));
    await vi.runAllTimersAsync();
    expect(c.state).toEqual({ phase: 'ready', plan: newer });
  });

  it('executes the confirmed plan by id and shows the report, then previews again', async () => {
    const { ipc, plans, executes } = fakeIpc();
    const c = new ReclaimController(ipc, () => {}, 10);
    c.request({ producers: [], thresholdSecs: 3600 });
    vi.advanceTimersByTime(10);
    const p = plan('plan-42', [1048576, 2097152]);
    plans[0].resolve(p);
    await vi.runAllTimersAsync();
    c.reclaim();
    expect(c.state.phase).toBe('confirming');
    // A snapshot arriving during the confirmation asks for a preview: it waits.
    c.request({ producers: [], thresholdSecs: 3600 });
    vi.advanceTimersByTime(10);
    expect(plans).toHaveLength(1);
    const done = c.confirm();
    expect(c.state.phase).toBe('executing');
    expect(executes.map((e) => e.planId)).toEqual(['plan-42']);
    const r = report(3145728, 2);
    executes[0].resolve(r);
    await done;
    expect(c.state).toEqual({ phase: 'done', plan: p, report: r });
    c.dismiss();
    expect(c.state.phase).toBe('idle');
    vi.advanceTimersByTime(10);
    expect(plans).toHaveLength(2);
  });

  it('shows the error message of a failed reclaim', async () => {
    const { ipc, plans, executes } = fakeIpc();
    const c = new ReclaimController(ipc, () => {}, 10);
    c.request({ producers: [], thresholdSecs: 3600 });
    vi.advanceTimersByTime(10);
    const p = plan('p', [1]);
    plans[0].resolve(p);
    await vi.runAllTimersAsync();
    c.reclaim();
    const done = c.confirm();
    executes[0].reject({ code: 'unknown-plan', message: 'plan "p" is unknown or expired: preview again' });
    await done;
    expect(c.state).toEqual({
      phase: 'failed',
      plan: p,
      error: { code: 'unknown-plan', message: 'plan "p" is unknown or expired: preview again' },
    });
  });

  it('previews again after a cancel when a request came during the confirmation', async () => {
    const { ipc, plans } = fakeIpc();
    const c = new ReclaimController(ipc, () => {}, 10);
    c.request({ producers: [], thresholdSecs: 3600 });
    vi.advanceTimersByTime(10);
    plans[0].resolve(plan('a', [1]));
    await vi.runAllTimersAsync();
    c.reclaim();
    c.request({ producers: [], thresholdSecs: 86400 });
    vi.advanceTimersByTime(10);
    expect(plans).toHaveLength(1);
    c.cancel();
    vi.advanceTimersByTime(10);
    expect(plans).toHaveLength(2);
    expect(plans[1].thresholdSecs).toBe(86400);
  });

  it('reports a failed preview', async () => {
    const { ipc, plans } = fakeIpc();
    const c = new ReclaimController(ipc, () => {}, 10);
    c.request({ producers: [], thresholdSecs: 3600 });
    vi.advanceTimersByTime(10);
    plans[0].reject({ code: 'stopped', message: 'the monitor is not running' });
    await vi.runAllTimersAsync();
    expect(c.state).toEqual({ phase: 'preview-failed', error: { code: 'stopped', message: 'the monitor is not running' } });
  });
});

describe('toIpcError', () => {
  it('keeps {code, message} and wraps anything else', () => {
    expect(toIpcError({ code: 'job-failed', message: 'm' })).toEqual({ code: 'job-failed', message: 'm' });
    expect(toIpcError(new Error('boom'))).toEqual({ code: 'ui', message: 'boom' });
    expect(toIpcError('plain')).toEqual({ code: 'ui', message: 'plain' });
  });
});
