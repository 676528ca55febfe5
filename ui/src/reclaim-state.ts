// The reclaim panel's state machine as a pure reducer: the threshold control shows an estimate
// (from the engine's age histograms), Reclaim makes the real plan, the confirmation shows that
// plan and execute runs it by its id (never by paths). The controller that drives it, with the
// debounce and the IPC calls, is in `reclaim-controller.ts`.
import type { ErrorCode, ReclaimEstimate, ReclaimJob, ReclaimPreview, ReclaimResult, UiError } from './types';

/** What an estimate or a plan is of: producer ids (empty = every auto producer), the threshold. */
export interface PreviewRequest {
  producers: string[];
  thresholdSecs: number;
}

/** An estimate with the request it answers. */
export interface Estimated {
  request: PreviewRequest;
  estimate: ReclaimEstimate;
}

/**
 * What the reclaim panel shows. `seq` is the request an answer must carry to count (an answer
 * to an older or cancelled request is ignored); `shown` is the estimate on screen.
 */
export type ReclaimState =
  | { phase: 'idle' }
  | { phase: 'estimating'; seq: number; shown: Estimated | null }
  | { phase: 'ready'; shown: Estimated }
  | { phase: 'estimate-failed'; error: UiError }
  | { phase: 'planning'; seq: number; request: PreviewRequest; shown: Estimated }
  | { phase: 'plan-failed'; request: PreviewRequest; shown: Estimated; error: UiError }
  | { phase: 'plan-empty'; request: PreviewRequest; shown: Estimated; plan: ReclaimPreview }
  | { phase: 'confirming'; request: PreviewRequest; shown: Estimated; plan: ReclaimPreview }
  | { phase: 'executing'; plan: ReclaimPreview }
  | { phase: 'done'; plan: ReclaimPreview; report: ReclaimResult }
  | { phase: 'failed'; plan: ReclaimPreview; error: UiError };

/** The phases of the reclaim panel. */
export type ReclaimPhase = ReclaimState['phase'];

/** What happens to it. */
export type ReclaimEvent =
  | { type: 'estimate-requested'; seq: number }
  | { type: 'estimate-resolved'; seq: number; request: PreviewRequest; estimate: ReclaimEstimate }
  | { type: 'estimate-failed'; seq: number; error: UiError }
  | { type: 'reclaim-clicked'; seq: number; request: PreviewRequest }
  | { type: 'retried'; seq: number }
  | { type: 'planned'; seq: number; plan: ReclaimPreview }
  | { type: 'plan-failed'; seq: number; error: UiError }
  | { type: 'cancelled' }
  | { type: 'confirmed' }
  | { type: 'executed'; report: ReclaimResult }
  | { type: 'execute-failed'; error: UiError }
  | { type: 'dismissed' }
  | { type: 'job'; job: ReclaimJob };

/** The estimate on screen, if any (kept while a newer one loads and while a plan is made). */
export function shownOf(state: ReclaimState): Estimated | null {
  return 'shown' in state ? state.shown : null;
}

/**
 * Whether the Reclaim button acts: an estimate with something to take is on screen and no reclaim
 * is under way (a newer estimate may be loading: the plan is made at the latest request anyway).
 */
export function canReclaim(state: ReclaimState): boolean {
  return (state.phase === 'ready' || state.phase === 'estimating') && (state.shown?.estimate.items ?? 0) > 0;
}

/** Whether two requests are of the same producers at the same threshold. */
export function sameRequest(a: PreviewRequest, b: PreviewRequest): boolean {
  return (
    a.thresholdSecs === b.thresholdSecs &&
    a.producers.length === b.producers.length &&
    a.producers.every((p, i) => p === b.producers[i])
  );
}

/**
 * Whether the real plan says other figures than the estimate on screen for the same request
 * (items changed since the estimate's histograms, or a bucket's width): the confirmation says so.
 */
export function planDiffers(shown: Estimated, request: PreviewRequest, plan: ReclaimPreview): boolean {
  return (
    sameRequest(shown.request, request) &&
    (shown.estimate.items !== plan.planned_items || shown.estimate.freeable_bytes !== plan.planned_freeable_bytes)
  );
}

/**
 * The next state. Events that do not apply to the current phase leave it unchanged (the same
 * object): an answer whose `seq` is not the one awaited (older, or cancelled), a second confirm,
 * an estimate while a reclaim is being planned, confirmed, run or shown.
 */
export function reduce(state: ReclaimState, event: ReclaimEvent): ReclaimState {
  switch (event.type) {
    case 'estimate-requested':
      if (!isEstimatePhase(state)) return state;
      return { phase: 'estimating', seq: event.seq, shown: shownOf(state) };
    case 'estimate-resolved':
      if (state.phase !== 'estimating' || state.seq !== event.seq) return state;
      return { phase: 'ready', shown: { request: event.request, estimate: event.estimate } };
    case 'estimate-failed':
      if (state.phase !== 'estimating' || state.seq !== event.seq) return state;
      return { phase: 'estimate-failed', error: event.error };
    case 'reclaim-clicked':
      if (!canReclaim(state) || (state.phase !== 'ready' && state.phase !== 'estimating') || !state.shown) return state;
      return { phase: 'planning', seq: event.seq, request: event.request, shown: state.shown };
    case 'retried':
      if (state.phase !== 'plan-failed') return state;
      return { phase: 'planning', seq: event.seq, request: state.request, shown: state.shown };
    case 'planned': {
      if (state.phase !== 'planning' || state.seq !== event.seq) return state;
      const { request, shown } = state;
      const phase = event.plan.planned_items > 0 ? 'confirming' : 'plan-empty';
      return { phase, request, shown, plan: event.plan };
    }
    case 'plan-failed':
      if (state.phase !== 'planning' || state.seq !== event.seq) return state;
      return { phase: 'plan-failed', request: state.request, shown: state.shown, error: event.error };
    case 'cancelled':
      if (!isPlanPhase(state)) return state;
      return { phase: 'ready', shown: state.shown };
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
    case 'job':
      return adoptJob(state, event.job);
  }
}

/**
 * The shell's record of the reclaim the window started (`UiState.reclaim`, the `reclaim-job`
 * event): a new window takes it over while it has nothing of its own under way (it runs, or it
 * ended while no window was open); a window executing that plan learns how it ended.
 */
function adoptJob(state: ReclaimState, job: ReclaimJob): ReclaimState {
  if (job.phase === 'idle') return state;
  const mine = state.phase === 'executing' && state.plan.id === job.plan.id;
  if (!mine && !isEstimatePhase(state)) return state;
  switch (job.phase) {
    case 'executing':
      return mine ? state : { phase: 'executing', plan: job.plan };
    case 'done':
      return { phase: 'done', plan: job.plan, report: job.report };
    case 'failed':
      return { phase: 'failed', plan: job.plan, error: job.error };
  }
}

/** Phases where an estimate may start (no reclaim planned, confirmed, running or shown). */
export function isEstimatePhase(state: ReclaimState): boolean {
  return (
    state.phase === 'idle' ||
    state.phase === 'estimating' ||
    state.phase === 'ready' ||
    state.phase === 'estimate-failed'
  );
}

/** Phases the user leaves with Cancel (or Back) to the estimate, nothing deleted. */
function isPlanPhase(
  state: ReclaimState,
): state is Extract<ReclaimState, { phase: 'planning' | 'plan-failed' | 'plan-empty' | 'confirming' }> {
  return (
    state.phase === 'planning' ||
    state.phase === 'plan-failed' ||
    state.phase === 'plan-empty' ||
    state.phase === 'confirming'
  );
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
        ...(typeof record.field === 'string' ? { field: record.field } : {}),
      };
    }
  }
  if (typeof error === 'string') return { code: 'ui', message: error };
  return { code: 'ui', message: String(error) };
}
