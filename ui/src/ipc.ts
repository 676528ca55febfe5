// The IPC layer: the shell's commands and events (names and args agreed with `src-tauri/`).
// Tauri maps the camelCase arg names (`thresholdSecs`, `planId`) to the Rust snake_case ones.
import { invoke } from '@tauri-apps/api/core';
import { listen, type UnlistenFn } from '@tauri-apps/api/event';
import { toIpcError } from './reclaim-state';
import type { AlertDto, ReclaimPlan, ReclaimReport, Settings, Snapshot } from './types';

export { toIpcError };

/** Calls a command; a rejection is rethrown as `{code, message}` (see `toIpcError`). */
async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (error) {
    throw toIpcError(error);
  }
}

/** `get_snapshot() -> Snapshot`. */
export function getSnapshot(): Promise<Snapshot> {
  return call<Snapshot>('get_snapshot');
}

/** `plan_reclaim({producers, thresholdSecs}) -> ReclaimPlan`; empty `producers` = every auto one. */
export function planReclaim(producers: string[], thresholdSecs: number): Promise<ReclaimPlan> {
  return call<ReclaimPlan>('plan_reclaim', { producers, thresholdSecs });
}

/** `execute_reclaim({planId}) -> ReclaimReport`: the engine re-derives and re-checks the items. */
export function executeReclaim(planId: string): Promise<ReclaimReport> {
  return call<ReclaimReport>('execute_reclaim', { planId });
}

/** `set_paused({paused})`. */
export function setPaused(paused: boolean): Promise<void> {
  return call<void>('set_paused', { paused });
}

/** `set_threshold({thresholdSecs})`: the threshold the snapshot's reclaimable figures use. */
export function setThreshold(thresholdSecs: number): Promise<void> {
  return call<void>('set_threshold', { thresholdSecs });
}

/** `rescan()`. */
export function rescan(): Promise<void> {
  return call<void>('rescan');
}

/** `get_settings() -> Settings`. */
export function getSettings(): Promise<Settings> {
  return call<Settings>('get_settings');
}

/** `set_settings({settings})`. */
export function setSettings(settings: Settings): Promise<void> {
  return call<void>('set_settings', { settings });
}

/** `open_evidence({url})`: the shell opens it in the browser (only catalogue URLs). */
export function openEvidence(url: string): Promise<void> {
  return call<void>('open_evidence', { url });
}

/** Listens to the `snapshot` event (payload `Snapshot`). */
export function onSnapshot(handler: (snapshot: Snapshot) => void): Promise<UnlistenFn> {
  return listen<Snapshot>('snapshot', (event) => handler(event.payload));
}

/** Listens to the `alert` event (payload `AlertDto`). */
export function onAlert(handler: (alert: AlertDto) => void): Promise<UnlistenFn> {
  return listen<AlertDto>('alert', (event) => handler(event.payload));
}

/** Listens to `focus-producer` (payload: a producer id), sent when a notification is clicked. */
export function onFocusProducer(handler: (producerId: string) => void): Promise<UnlistenFn> {
  return listen<string>('focus-producer', (event) => handler(event.payload));
}
