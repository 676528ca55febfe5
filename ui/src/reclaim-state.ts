// The preview/reclaim state machine: a pure reducer, and a controller that debounces preview
// requests, drops stale answers and runs the reclaim by plan id (never by paths).
import type { ErrorCode, ReclaimPreview, ReclaimResult, UiError } from './types';

/** What the reclaim panel shows. */
export type ReclaimState =
  | { phase: 'idle' }
  | { phase: 'previewing'; seq: number; plan: ReclaimPreview | null }
  | { phase: 'ready'; plan: ReclaimPreview }
  | { phase: 'preview-failed'; error: UiError }
  | { phase: 'confirming'; plan: ReclaimPreview }
  | { phase: 'executing'; plan: ReclaimPreview }
  | { phase: 'done'; plan: ReclaimPreview; report: ReclaimResult }
  | { phase: 'failed'; plan: ReclaimPreview; error: UiError };

/** What happens to it. */
export type ReclaimEvent =
  | { type: 'preview-requested'; seq: number }
  | { type: 'preview-resolved'; seq: number; plan: ReclaimPreview }
  | { type: 'preview-failed'; seq: number; error: UiError }
  | { type: 'reclaim-clicked' }
  | { type: 'cancelled' }
  | { type: 'confirmed' }
  | { type: 'executed'; report: ReclaimResult }
  | { type: 'execute-failed'; error: UiError }
  | { type: 'dismissed' };

/** The plan the state holds, if any (shown while a newer preview loads). */
export function planOf(state: ReclaimState): ReclaimPreview | null {
  return 'plan' in state ? state.plan : null;
}

/** Whether the Reclaim button acts: a ready plan with something to delete. */
export function canReclaim(state: ReclaimState): boolean {
  return state.phase === 'ready' && state.plan.planned_items > 0;
}

/**
 * The next state. Events that do not apply to the current phase leave it unchanged (the same
 * object), e.g. a preview answer whose `seq` is not the latest request, or a second confirm.
 * While a reclaim is confirming, running or showing its result, previews are not started.
 */
export function reduce(state: ReclaimState, event: ReclaimEvent): ReclaimState {
  switch (event.type) {
    case 'preview-requested':
      if (!isPreviewPhase(state)) return state;
      return { phase: 'previewing', seq: event.seq, plan: planOf(state) };
    case 'preview-resolved':
      if (state.phase !== 'previewing' || state.seq !== event.seq) return state;
      return { phase: 'ready', plan: event.plan };
    case 'preview-failed':
      if (state.phase !== 'previewing' || state.seq !== event.seq) return state;
      return { phase: 'preview-failed', error: event.error };
    case 'reclaim-clicked':
      if (!canReclaim(state) || state.phase !== 'ready') return state;
      return { phase: 'confirming', plan: state.plan };
    case 'cancelled':
      if (state.phase !== 'confirming') return state;
      return { phase: 'ready', plan: state.plan };
    case 'confirmed':
      if (state.phase !== 'confirming') return state;
      return { phase: 'executing', plan: state.plan };
    case 'executed':
      if (state.phase !== 'executing') return state;
      return { phase: 'done', plan: state.plan, report: event.report };
    case 'execute-failed':
      if (state.phase !== 'executing') return state;
      return { phase: 'failed', plan: state.plan, error: event.error };
    case 'dismissed':
      if (state.phase !== 'done' && state.phase !== 'failed') return state;
      return { phase: 'idle' };
  }
}

function isPreviewPhase(state: ReclaimState): boolean {
  return (
    state.phase === 'idle' ||
    state.phase === 'previewing' ||
    state.phase === 'ready' ||
    state.phase === 'preview-failed'
  );
}

/** The IPC calls the controller needs (a subset of `ipc.ts`, injected for tests). */
export interface ReclaimIpc {
  planReclaim(producers: string[], thresholdSecs: number): Promise<ReclaimPreview>;
  executeReclaim(planId: string): Promise<ReclaimResult>;
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

/** What the preview is of: producer ids (empty = every auto producer) and the threshold. */
export interface PreviewRequest {
  producers: string[];
  thresholdSecs: number;
}

/**
 * Drives the reducer: `request()` debounces previews by `debounceMs` (only the last request in a
 * burst calls `plan_reclaim`), answers to older requests are ignored, `confirm()` sends the plan
 * id of the plan the user saw. `onChange` gets every new state.
 */
export class ReclaimController {
  private current: ReclaimState = { phase: 'idle' };
  private seq = 0;
  private pending: unknown = null;
  private last: PreviewRequest | null = null;
  /** A preview was refused while a reclaim was under way: run it when that ends. */
  private stale = false;

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

  /** The last preview request, if any. */
  get lastRequest(): PreviewRequest | null {
    return this.last;
  }

  /** Asks for a preview of `req` after the debounce delay, replacing a pending one. */
  request(req: PreviewRequest): void {
    this.last = { producers: [...req.producers], thresholdSecs: req.thresholdSecs };
    if (this.pending !== null) this.timers.clear(this.pending);
    this.pending = this.timers.set(() => {
      this.pending = null;
      void this.runPreview();
    }, this.debounceMs);
  }

  /** Opens the confirmation (when a non-empty plan is ready). */
  reclaim(): void {
    this.dispatch({ type: 'reclaim-clicked' });
  }

  /** Closes the confirmation without deleting. */
  cancel(): void {
    this.dispatch({ type: 'cancelled' });
    if (this.current.phase === 'ready' && this.stale && this.last) {
      this.stale = false;
      this.request(this.last);
    }
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

  /** Closes the result and previews again with the last request (sizes changed). */
  dismiss(): void {
    if (this.current.phase !== 'done' && this.current.phase !== 'failed') return;
    this.dispatch({ type: 'dismissed' });
    this.stale = false;
    if (this.last) this.request(this.last);
  }

  private async runPreview(): Promise<void> {
    const req = this.last;
    if (!req) return;
    this.seq += 1;
    const seq = this.seq;
    const before = this.current;
    this.dispatch({ type: 'preview-requested', seq });
    if (this.current === before && before.phase !== 'previewing') {
      this.stale = true; // a reclaim is under way: preview when it ends
      return;
    }
    try {
      const plan = await this.ipc.planReclaim(req.producers, req.thresholdSecs);
      this.dispatch({ type: 'preview-resolved', seq, plan });
    } catch (error) {
      this.dispatch({ type: 'preview-failed', seq, error: toIpcError(error) });
    }
  }

  private dispatch(event: ReclaimEvent): void {
    const next = reduce(this.current, event);
    if (next === this.current) return;
    this.current = next;
    this.onChange(next);
  }
}

/**
 * Any thrown value as `{code, message}`: the shell's `IpcError` as is, an `Error` or a string as
 * code `ui`.
 */
export function toIpcError(error: unknown): UiError {
  if (typeof error === 'object' && error !== null) {
    const record = error as Record<string, unknown>;
    if (typeof record.message === 'string') {
      return {
        // the shell sends only `ErrorCode` words (bindings/ErrorCode.ts)
        code: typeof record.code === 'string' ? (record.code as ErrorCode) : 'ui',
        message: record.message,
      };
    }
  }
  if (typeof error === 'string') return { code: 'ui', message: error };
  return { code: 'ui', message: String(error) };
}
