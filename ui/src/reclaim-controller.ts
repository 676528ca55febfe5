// Drives the reclaim reducer (`reclaim-state.ts`): debounced estimates while the threshold moves,
// the real plan when Reclaim is clicked, execute by the id of the plan the user confirmed.
import {
  isEstimatePhase,
  reduce,
  toIpcError,
  type PreviewRequest,
  type ReclaimEvent,
  type ReclaimState,
} from './reclaim-state';
import type { ReclaimEstimate, ReclaimJob, ReclaimPreview, ReclaimResult } from './types';

/** The IPC calls the controller needs (a subset of `ipc.ts`, injected for tests). */
export interface ReclaimIpc {
  estimateReclaim(producers: string[], thresholdSecs: number): Promise<ReclaimEstimate>;
  planReclaim(producers: string[], thresholdSecs: number): Promise<ReclaimPreview>;
  executeReclaim(planId: string): Promise<ReclaimResult>;
  /** The result was closed (the shell then forgets it); optional for tests. */
  dismissReclaim?(): Promise<void>;
}

/** Timer functions (injected so tests use fake timers). */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const browserTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Drives the reducer. `request()` debounces estimates by `debounceMs` (only the last request in a
 * burst calls `estimate_reclaim`); `reclaim()` makes the real plan (`plan_reclaim`) at the latest
 * request; `confirm()` executes the plan the confirmation shows, by its id. Answers to older or
 * cancelled requests are ignored. No estimate runs while a reclaim is planned, confirmed, run or
 * shown: one asked for meanwhile runs when the panel is back. `onChange` gets every new state.
 */
export class ReclaimController {
  private current: ReclaimState = { phase: 'idle' };
  private seq = 0;
  private pending: unknown = null;
  private last: PreviewRequest | null = null;

  constructor(
    private readonly ipc: ReclaimIpc,
    private readonly onChange: (state: ReclaimState) => void,
    private readonly debounceMs = 250,
    private readonly timers: Timers = browserTimers,
  ) {}

  /** The current state. */
  get state(): ReclaimState {
    return this.current;
  }

  /** The last request (threshold and producers), if any. */
  get lastRequest(): PreviewRequest | null {
    return this.last;
  }

  /** Asks for an estimate of `req` after the debounce delay, replacing a pending one. */
  request(req: PreviewRequest): void {
    this.last = { producers: [...req.producers], thresholdSecs: req.thresholdSecs };
    this.clearPending();
    this.pending = this.timers.set(() => {
      this.pending = null;
      void this.runEstimate();
    }, this.debounceMs);
  }

  /**
   * Reclaim was clicked: makes the real plan at the latest request (a pending estimate is
   * dropped), then the confirmation shows it. Resolves when the plan (or its error) is in.
   */
  async reclaim(): Promise<void> {
    const req = this.last;
    if (!req) return;
    const seq = this.next();
    this.dispatch({ type: 'reclaim-clicked', seq, request: req });
    if (this.current.phase !== 'planning' || this.current.seq !== seq) return;
    this.clearPending();
    await this.runPlan(seq, req);
  }

  /** Makes the plan again after it failed. */
  async retry(): Promise<void> {
    if (this.current.phase !== 'plan-failed') return;
    const req = this.current.request;
    const seq = this.next();
    this.dispatch({ type: 'retried', seq });
    await this.runPlan(seq, req);
  }

  /**
   * Leaves the planning (its answer is then ignored), its error, an empty plan or the
   * confirmation, deleting nothing; the estimate is asked for again (items may have changed).
   */
  cancel(): void {
    const before = this.current;
    this.dispatch({ type: 'cancelled' });
    if (this.current !== before && this.last) this.request(this.last);
  }

  /** Confirms: executes the confirmed plan by its id. Resolves when the report (or error) is in. */
  async confirm(): Promise<void> {
    if (this.current.phase !== 'confirming') return;
    const planId = this.current.plan.id;
    this.dispatch({ type: 'confirmed' });
    try {
      const report = await this.ipc.executeReclaim(planId);
      this.dispatch({ type: 'executed', report });
    } catch (error) {
      this.dispatch({ type: 'execute-failed', error: toIpcError(error) });
    }
  }

  /** Closes the result and estimates again with the last request (sizes changed). */
  dismiss(): void {
    if (this.current.phase !== 'done' && this.current.phase !== 'failed') return;
    this.dispatch({ type: 'dismissed' });
    this.ipc.dismissReclaim?.().catch(() => {
      // the shell forgets nothing then: the next window shows the result once more
    });
    if (this.last) this.request(this.last);
  }

  /**
   * The shell's record of the window's reclaim (at load, and as it moves on): a reclaim started
   * in an earlier window shows here, running or with its result.
   */
  adopt(job: ReclaimJob): void {
    this.dispatch({ type: 'job', job });
  }

  private async runEstimate(): Promise<void> {
    const req = this.last;
    if (!req || !isEstimatePhase(this.current)) return; // asked again when the panel is back
    const seq = this.next();
    this.dispatch({ type: 'estimate-requested', seq });
    try {
      const estimate = await this.ipc.estimateReclaim(req.producers, req.thresholdSecs);
      this.dispatch({ type: 'estimate-resolved', seq, request: req, estimate });
    } catch (error) {
      this.dispatch({ type: 'estimate-failed', seq, error: toIpcError(error) });
    }
  }

  private async runPlan(seq: number, req: PreviewRequest): Promise<void> {
    try {
      const plan = await this.ipc.planReclaim(req.producers, req.thresholdSecs);
      this.dispatch({ type: 'planned', seq, plan });
    } catch (error) {
      this.dispatch({ type: 'plan-failed', seq, error: toIpcError(error) });
    }
  }

  private next(): number {
    this.seq += 1;
    return this.seq;
  }

  private clearPending(): void {
    if (this.pending !== null) this.timers.clear(this.pending);
    this.pending = null;
  }

  private dispatch(event: ReclaimEvent): void {
    const next = reduce(this.current, event);
    if (next === this.current) return;
    this.current = next;
    this.onChange(next);
  }
}
