import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ReclaimController, type ReclaimIpc } from '../../src/reclaim-controller';
import {
  canReclaim,
  reduce,
  toIpcError,
  type Estimated,
  type PreviewRequest,
  type ReclaimState,
} from '../../src/reclaim-state';
import type { ReclaimEstimate, ReclaimPreview, ReclaimResult } from '../../src/types';
import { plan, report } from './fixture';

/** An estimate of items of `sizes` (one producer), as the histograms would sum them. */
function estimate(sizes: number[], thresholdSecs = 3600): ReclaimEstimate {
  const bytes = sizes.reduce((a, b) => a + b, 0);
  return {
    threshold_secs: thresholdSecs,
    items: sizes.length,
    allocated_bytes: bytes,
    freeable_bytes: bytes,
    producers: sizes.length === 0 ? [] : [{ producer: 'p', items: sizes.length, allocated_bytes: bytes, freeable_bytes: bytes, oldest_age_secs: 0 }],
    as_of_unix_secs: 1_700_000_000,
  };
}

const ALL: PreviewRequest = { producers: [], thresholdSecs: 3600 };

describe('reduce', () => {
  const e1: Estimated = { request: ALL, estimate: estimate([100, 200]) };
  const p1 = plan('p1', [100, 200]);

  it('ignores answers to older estimate requests', () => {
    let s: ReclaimState = { phase: 'idle' };
    s = reduce(s, { type: 'estimate-requested', seq: 1 });
    s = reduce(s, { type: 'estimate-requested', seq: 2 });
    const stale = reduce(s, { type: 'estimate-resolved', seq: 1, request: ALL, estimate: e1.estimate });
    expect(stale).toBe(s);
    s = reduce(s, { type: 'estimate-resolved', seq: 2, request: ALL, estimate: e1.estimate });
    expect(s).toEqual({ phase: 'ready', shown: e1 });
  });

  it('keeps showing the old estimate while a new one loads, and Reclaim still plans', () => {
    const s = reduce({ phase: 'ready', shown: e1 }, { type: 'estimate-requested', seq: 5 });
    expect(s).toEqual({ phase: 'estimating', seq: 5, shown: e1 });
    expect(canReclaim(s)).toBe(true);
    const planning = reduce(s, { type: 'reclaim-clicked', seq: 6, request: ALL });
    expect(planning).toEqual({ phase: 'planning', seq: 6, request: ALL, shown: e1 });
    // the estimate overtaken by the click is not shown over the planning
    expect(reduce(planning, { type: 'estimate-resolved', seq: 5, request: ALL, estimate: estimate([1]) })).toBe(planning);
  });

  it('goes ready → planning → confirming (the real plan) → executing → done → idle', () => {
    let s: ReclaimState = { phase: 'ready', shown: e1 };
    s = reduce(s, { type: 'reclaim-clicked', seq: 1, request: ALL });
    expect(s.phase).toBe('planning');
    expect(reduce(s, { type: 'estimate-requested', seq: 2 })).toBe(s); // no estimate while planning
    expect(reduce(s, { type: 'confirmed' })).toBe(s); // nothing to confirm yet
    s = reduce(s, { type: 'planned', seq: 1, plan: p1 });
    expect(s).toEqual({ phase: 'confirming', request: ALL, shown: e1, plan: p1 });
    s = reduce(s, { type: 'confirmed' });
    expect(s).toEqual({ phase: 'executing', plan: p1 });
    expect(reduce(s, { type: 'confirmed' })).toBe(s); // a second confirm does nothing
    expect(reduce(s, { type: 'estimate-requested', seq: 9 })).toBe(s); // no estimate mid-reclaim
    expect(reduce(s, { type: 'cancelled' })).toBe(s); // a running reclaim is not interrupted
    const r = report(300, 2);
    s = reduce(s, { type: 'executed', report: r });
    expect(s).toEqual({ phase: 'done', plan: p1, report: r });
    s = reduce(s, { type: 'dismissed' });
    expect(s).toEqual({ phase: 'idle' });
  });

  it('ignores the plan of a cancelled planning', () => {
    let s: ReclaimState = reduce({ phase: 'ready', shown: e1 }, { type: 'reclaim-clicked', seq: 3, request: ALL });
    s = reduce(s, { type: 'cancelled' });
    expect(s).toEqual({ phase: 'ready', shown: e1 });
    expect(reduce(s, { type: 'planned', seq: 3, plan: p1 })).toBe(s);
    // clicked again: only the new planning's answer counts
    s = reduce(s, { type: 'reclaim-clicked', seq: 4, request: ALL });
    expect(reduce(s, { type: 'planned', seq: 3, plan: p1 })).toBe(s);
    expect(reduce(s, { type: 'planned', seq: 4, plan: p1 }).phase).toBe('confirming');
  });

  it('says an empty plan instead of confirming it, and goes back to the estimate', () => {
    const empty = plan('e', []);
    let s: ReclaimState = reduce({ phase: 'ready', shown: e1 }, { type: 'reclaim-clicked', seq: 1, request: ALL });
    s = reduce(s, { type: 'planned', seq: 1, plan: empty });
    expect(s).toEqual({ phase: 'plan-empty', request: ALL, shown: e1, plan: empty });
    expect(reduce(s, { type: 'confirmed' })).toBe(s); // nothing to delete: no execute
    expect(reduce(s, { type: 'cancelled' })).toEqual({ phase: 'ready', shown: e1 });
  });

  it('shows a failed plan with a retry of the same request', () => {
    const other: PreviewRequest = { producers: ['katago-coreml'], thresholdSecs: 86400 };
    let s: ReclaimState = reduce({ phase: 'ready', shown: e1 }, { type: 'reclaim-clicked', seq: 1, request: other });
    const error = { code: 'job-failed' as const, message: 'the plan job panicked' };
    s = reduce(s, { type: 'plan-failed', seq: 1, error });
    expect(s).toEqual({ phase: 'plan-failed', request: other, shown: e1, error });
    s = reduce(s, { type: 'retried', seq: 2 });
    expect(s).toEqual({ phase: 'planning', seq: 2, request: other, shown: e1 });
  });

  it('does not plan from an empty estimate, a failed one or none', () => {
    const empty: ReclaimState = { phase: 'ready', shown: { request: ALL, estimate: estimate([]) } };
    expect(canReclaim(empty)).toBe(false);
    expect(reduce(empty, { type: 'reclaim-clicked', seq: 1, request: ALL })).toBe(empty);
    const failed: ReclaimState = { phase: 'estimate-failed', error: { code: 'stopped', message: 'm' } };
    expect(reduce(failed, { type: 'reclaim-clicked', seq: 1, request: ALL })).toBe(failed);
    const loading: ReclaimState = { phase: 'estimating', seq: 1, shown: null };
    expect(reduce(loading, { type: 'reclaim-clicked', seq: 2, request: ALL })).toBe(loading);
  });
});

/** A fake IPC whose answers the test releases by hand. */
function fakeIpc() {
  type Pending<T> = { producers: string[]; thresholdSecs: number; resolve: (v: T) => void; reject: (e: unknown) => void };
  const estimates: Pending<ReclaimEstimate>[] = [];
  const plans: Pending<ReclaimPreview>[] = [];
  const executes: { planId: string; resolve: (r: ReclaimResult) => void; reject: (e: unknown) => void }[] = [];
  const ipc: ReclaimIpc = {
    estimateReclaim: (producers, thresholdSecs) =>
      new Promise((resolve, reject) => estimates.push({ producers, thresholdSecs, resolve, reject })),
    planReclaim: (producers, thresholdSecs) =>
      new Promise((resolve, reject) => plans.push({ producers, thresholdSecs, resolve, reject })),
    executeReclaim: (planId) => new Promise((resolve, reject) => executes.push({ planId, resolve, reject })),
  };
  return { ipc, estimates, plans, executes };
}

/** A controller whose estimate of `sizes` at 1 h is on screen. */
async function readyController(sizes: number[]) {
  const fake = fakeIpc();
  const phases: string[] = [];
  const c = new ReclaimController(fake.ipc, (s) => phases.push(s.phase), 10);
  c.request(ALL);
  vi.advanceTimersByTime(10);
  const e = estimate(sizes);
  fake.estimates[0].resolve(e);
  await vi.runAllTimersAsync();
  expect(c.state).toEqual({ phase: 'ready', shown: { request: ALL, estimate: e } });
  return { ...fake, c, e, phases };
}

describe('ReclaimController', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('debounces a burst of threshold changes into one estimate_reclaim call and makes no plan', async () => {
    const { ipc, estimates, plans } = fakeIpc();
    const states: string[] = [];
    const c = new ReclaimController(ipc, (s) => states.push(s.phase), 250);
    c.request({ producers: [], thresholdSecs: 300 });
    vi.advanceTimersByTime(100);
    c.request({ producers: [], thresholdSecs: 3600 });
    vi.advanceTimersByTime(100);
    c.request({ producers: ['katago-coreml'], thresholdSecs: 86400 });
    vi.advanceTimersByTime(249);
    expect(estimates).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(estimates.map((e) => [e.producers, e.thresholdSecs])).toEqual([[['katago-coreml'], 86400]]);
    const e = estimate([4096, 8192], 86400);
    estimates[0].resolve(e);
    await vi.runAllTimersAsync();
    expect(c.state).toEqual({
      phase: 'ready',
      shown: { request: { producers: ['katago-coreml'], thresholdSecs: 86400 }, estimate: e },
    });
    expect(states).toEqual(['estimating', 'ready']);
    expect(plans).toHaveLength(0); // the threshold control never makes a plan
  });

  it('drops a slow estimate that a newer one overtook', async () => {
    const { ipc, estimates } = fakeIpc();
    const c = new ReclaimController(ipc, () => {}, 10);
    c.request({ producers: [], thresholdSecs: 300 });
    vi.advanceTimersByTime(10);
    c.request({ producers: [], thresholdSecs: 604800 });
    vi.advanceTimersByTime(10);
    expect(estimates).toHaveLength(2);
    const newer = estimate([1], 604800);
    estimates[1].resolve(newer);
    await vi.runAllTimersAsync();
    estimates[0].resolve(estimate([1, 2, 3], 300));
    await vi.runAllTimersAsync();
    expect(c.state).toEqual({ phase: 'ready', shown: { request: { producers: [], thresholdSecs: 604800 }, estimate: newer } });
  });

  it('plans on Reclaim, confirms the real plan, executes it by id, then estimates again', async () => {
    const { c, e, estimates, plans, executes, phases } = await readyController([1048576, 2097152]);
    const planned = c.reclaim();
    expect(c.state.phase).toBe('planning');
    expect(plans.map((p) => [p.producers, p.thresholdSecs])).toEqual([[[], 3600]]);
    // Items changed since the histograms: the plan finds three, and the confirmation shows them.
    const p = plan('plan-42', [1048576, 2097152, 4194304]);
    plans[0].resolve(p);
    await planned;
    expect(c.state).toEqual({ phase: 'confirming', request: ALL, shown: { request: ALL, estimate: e }, plan: p });
    // A snapshot arriving during the confirmation asks for an estimate: it waits.
    c.request(ALL);
    vi.advanceTimersByTime(10);
    expect(estimates).toHaveLength(1);
    const done = c.confirm();
    expect(c.state.phase).toBe('executing');
    expect(executes.map((x) => x.planId)).toEqual(['plan-42']);
    const r = report(1048576 + 2097152 + 4194304, 3);
    executes[0].resolve(r);
    await done;
    expect(c.state).toEqual({ phase: 'done', plan: p, report: r });
    c.dismiss();
    expect(c.state.phase).toBe('idle');
    vi.advanceTimersByTime(10);
    expect(estimates).toHaveLength(2);
    expect(phases).toEqual(['estimating', 'ready', 'planning', 'confirming', 'executing', 'done', 'idle', 'estimating']);
  });

  it('plans at the threshold last asked for, even before its estimate came', async () => {
    const { c, estimates, plans } = await readyController([5, 6]);
    c.request({ producers: ['metal-gpuarchiver'], thresholdSecs: 300 });
    void c.reclaim(); // within the debounce: the estimate of 300 s is never asked for
    expect(plans.map((p) => [p.producers, p.thresholdSecs])).toEqual([[['metal-gpuarchiver'], 300]]);
    vi.advanceTimersByTime(50);
    expect(estimates).toHaveLength(1);
  });

  it('ignores the plan of a cancelled planning and confirms only the next one', async () => {
    const { c, estimates, plans, executes } = await readyController([7]);
    void c.reclaim();
    c.cancel();
    expect(c.state.phase).toBe('ready');
    plans[0].resolve(plan('cancelled', [7]));
    await vi.runAllTimersAsync();
    expect(c.state.phase).not.toBe('confirming');
    expect(estimates).toHaveLength(2); // the estimate is asked for again on the way back
    estimates[1].resolve(estimate([7]));
    await vi.runAllTimersAsync();
    const second = c.reclaim();
    const p = plan('second', [7]);
    plans[1].resolve(p);
    await second;
    expect(c.state.phase).toBe('confirming');
    void c.confirm();
    expect(executes.map((x) => x.planId)).toEqual(['second']);
  });

  it('says an empty plan, goes back and estimates again; nothing is executed', async () => {
    const { c, estimates, plans, executes } = await readyController([3, 4]);
    const planned = c.reclaim();
    plans[0].resolve(plan('empty', []));
    await planned;
    expect(c.state.phase).toBe('plan-empty');
    await c.confirm();
    expect(executes).toHaveLength(0);
    c.cancel();
    expect(c.state.phase).toBe('ready');
    vi.advanceTimersByTime(10);
    expect(estimates).toHaveLength(2);
  });

  it('shows a failed plan and plans the same request again on retry', async () => {
    const { c, plans } = await readyController([9]);
    const planned = c.reclaim();
    plans[0].reject({ code: 'job-failed', message: 'reclaim plan panicked' });
    await planned;
    expect(c.state).toMatchObject({ phase: 'plan-failed', error: { code: 'job-failed', message: 'reclaim plan panicked' } });
    const again = c.retry();
    expect(c.state.phase).toBe('planning');
    expect(plans.map((p) => [p.producers, p.thresholdSecs])).toEqual([[[], 3600], [[], 3600]]);
    const p = plan('retried', [9]);
    plans[1].resolve(p);
    await again;
    expect(c.state).toMatchObject({ phase: 'confirming', plan: p });
  });

  it('shows the error message of a failed reclaim', async () => {
    const { c, plans, executes } = await readyController([1]);
    const planned = c.reclaim();
    const p = plan('p', [1]);
    plans[0].resolve(p);
    await planned;
    const done = c.confirm();
    executes[0].reject({ code: 'unknown-plan', message: 'plan "p" is unknown or expired: preview again' });
    await done;
    expect(c.state).toEqual({
      phase: 'failed',
      plan: p,
      error: { code: 'unknown-plan', message: 'plan "p" is unknown or expired: preview again' },
    });
  });

  it('reports a failed estimate, and Reclaim does nothing then', async () => {
    const { ipc, estimates, plans } = fakeIpc();
    const c = new ReclaimController(ipc, () => {}, 10);
    c.request(ALL);
    vi.advanceTimersByTime(10);
    estimates[0].reject({ code: 'stopped', message: 'the monitor is not running' });
    await vi.runAllTimersAsync();
    expect(c.state).toEqual({ phase: 'estimate-failed', error: { code: 'stopped', message: 'the monitor is not running' } });
    await c.reclaim();
    expect(plans).toHaveLength(0);
  });
});

describe('toIpcError', () => {
  it('keeps {code, message} and wraps anything else', () => {
    expect(toIpcError({ code: 'job-failed', message: 'm' })).toEqual({ code: 'job-failed', message: 'm' });
    expect(toIpcError(new Error('boom'))).toEqual({ code: 'ui', message: 'boom' });
    expect(toIpcError('plain')).toEqual({ code: 'ui', message: 'plain' });
  });
});

// The window is destroyed a while after it closes; the shell keeps the reclaim it started.
describe('a reclaim that outlives its window', () => {
  it('a new window shows the run still going, then its result', () => {
    const p = plan('plan-7', [4096, 8192]);
    const r = report(12288, 2);
    const fresh: ReclaimState = { phase: 'idle' };
    const running = reduce(fresh, { type: 'job', job: { phase: 'executing', plan: p } });
    expect(running).toEqual({ phase: 'executing', plan: p });
    expect(reduce(running, { type: 'job', job: { phase: 'done', plan: p, report: r } })).toEqual({
      phase: 'done',
      plan: p,
      report: r,
    });
  });

  it('a new window shows a result that came while no window was open; nothing else moves it', () => {
    const p = plan('plan-8', [4096]);
    const r = report(12288, 2);
    const estimating: ReclaimState = { phase: 'estimating', seq: 1, shown: null };
    expect(reduce(estimating, { type: 'job', job: { phase: 'done', plan: p, report: r } })).toEqual({
      phase: 'done',
      plan: p,
      report: r,
    });
    const error = { code: 'job-failed' as const, message: 'the job failed' };
    expect(reduce({ phase: 'idle' }, { type: 'job', job: { phase: 'failed', plan: p, error } })).toEqual({
      phase: 'failed',
      plan: p,
      error,
    });
    // idle says nothing; another plan's run does not take over a confirmation under way
    const idle: ReclaimState = { phase: 'idle' };
    expect(reduce(idle, { type: 'job', job: { phase: 'idle' } })).toBe(idle);
    const other = plan('plan-9', [1]);
    const running: ReclaimState = { phase: 'executing', plan: other };
    expect(reduce(running, { type: 'job', job: { phase: 'done', plan: p, report: r } })).toBe(running);
  });

  it('the controller adopts the job and tells the shell when its result is closed', async () => {
    const fake = fakeIpc();
    let dismissed = 0;
    fake.ipc.dismissReclaim = async () => {
      dismissed += 1;
    };
    const c = new ReclaimController(fake.ipc, () => {}, 10);
    const p = plan('plan-10', [4096]);
    c.adopt({ phase: 'done', plan: p, report: report(4096, 1) });
    expect(c.state.phase).toBe('done');
    c.dismiss();
    expect(c.state.phase).toBe('idle');
    expect(dismissed).toBe(1);
  });
});
