// The IPC layer: the shell's commands and events. Command names, argument names and types come
// from `./bindings/commands` (generated from `src-tauri/src/command_list.rs` and the Rust DTOs).
// Tauri maps the camelCase arg names (`thresholdSecs`, `planId`) to the Rust snake_case ones.
import { invoke, type InvokeArgs } from '@tauri-apps/api/core';
import { listen, type UnlistenFn } from '@tauri-apps/api/event';
import { toIpcError } from './reclaim-state';
import type {
  AlertDto,
  Command,
  CommandArgs,
  CommandResult,
  GroupHistory,
  GroupRuleAdded,
  GroupRulePreview,
  ProducerHistory,
  ReclaimEstimate,
  ReclaimHistory,
  ReclaimJob,
  ReclaimPreview,
  ReclaimResult,
  ReportDraft,
  Settings,
  Snapshot,
  UiState,
  UiView,
} from './types';

export { toIpcError };

/** The arguments to pass for command `C`: none when it takes none. */
type ArgsOf<C extends Command> =
  CommandArgs<C> extends Record<string, never> ? [] : [args: CommandArgs<C>];

/** Calls a command; a rejection is rethrown as `{code, message}` (see `toIpcError`). */
async function call<C extends Command>(cmd: C, ...args: ArgsOf<C>): Promise<CommandResult<C>> {
  try {
    return await invoke<CommandResult<C>>(cmd, args[0] as InvokeArgs | undefined);
  } catch (error) {
    throw toIpcError(error);
  }
}

/** `get_snapshot() -> Snapshot`. */
export function getSnapshot(): Promise<Snapshot> {
  return call('get_snapshot');
}

/**
 * `plan_reclaim({producers, thresholdSecs}) -> ReclaimPreview`; empty `producers` = every auto one.
 * The preview is bounded (sums, kept counts, the largest items); the engine keeps the plan by id.
 */
export function planReclaim(producers: string[], thresholdSecs: number): Promise<ReclaimPreview> {
  return call('plan_reclaim', { producers, thresholdSecs });
}

/**
 * `estimate_reclaim({producers, thresholdSecs}) -> ReclaimEstimate`: what a reclaim at that
 * threshold would take now, from the engine's age histograms (no plan made; exact to a minute
 * for items under a day old, an hour under 30 days, a day beyond).
 */
export function estimateReclaim(producers: string[], thresholdSecs: number): Promise<ReclaimEstimate> {
  return call('estimate_reclaim', { producers, thresholdSecs });
}

/** `execute_reclaim({planId}) -> ReclaimResult`: the engine re-checks the plan's items; counts and the first few. */
export function executeReclaim(planId: string): Promise<ReclaimResult> {
  return call('execute_reclaim', { planId });
}

/** `set_paused({paused})`. */
export async function setPaused(paused: boolean): Promise<void> {
  await call('set_paused', { paused });
}

/** `set_threshold({thresholdSecs})`: the threshold the snapshot's reclaimable figures use. */
export async function setThreshold(thresholdSecs: number): Promise<void> {
  await call('set_threshold', { thresholdSecs });
}

/**
 * `read_threshold({text}) -> secs`: a threshold as typed (`90m`, `2d 6h`), read by the engine as
 * the CLI and the config read one; a bad one rejects with `bad-threshold` and the engine's reason.
 */
export function readThreshold(text: string): Promise<number> {
  return call('read_threshold', { text });
}

/**
 * `report_draft({root, label}) -> ReportDraft`: the engine's Markdown draft of a report on a group
 * for the tracker of the program that leaves it (nothing is sent); `group` when it is gone.
 */
export function reportDraft(root: string, label: string): Promise<ReportDraft> {
  return call('report_draft', { root, label });
}

/** `rescan()`. */
export async function rescan(): Promise<void> {
  await call('rescan');
}

/** `get_settings() -> Settings`. */
export function getSettings(): Promise<Settings> {
  return call('get_settings');
}

/** `set_settings({settings})`. */
export async function setSettings(settings: Settings): Promise<void> {
  await call('set_settings', { settings });
}

/** `open_evidence({url})`: the shell opens it in the browser (only catalogue URLs). */
export async function openEvidence(url: string): Promise<void> {
  await call('open_evidence', { url });
}

/** `group_history({key, spanSecs}) -> GroupHistory`: a group's samples (`key`: its `history_key`). */
export function groupHistory(key: string, spanSecs: number): Promise<GroupHistory> {
  return call('group_history', { key, spanSecs });
}

/** `producer_history({producer, spanSecs}) -> ProducerHistory`: its samples and reclaims. */
export function producerHistory(producer: string, spanSecs: number): Promise<ProducerHistory> {
  return call('producer_history', { producer, spanSecs });
}

/** `reclaim_history({spanSecs}) -> ReclaimHistory`: the past reclaims, newest first. */
export function reclaimHistory(spanSecs: number): Promise<ReclaimHistory> {
  return call('reclaim_history', { spanSecs });
}

/**
 * `get_ui_state() -> UiState`: what the window was showing (selected producer, expanded rows, the
 * threshold being edited) and the reclaim it started, kept by the shell across windows.
 */
export function getUiState(): Promise<UiState> {
  return call('get_ui_state');
}

/** `set_ui_view({view})`: keeps the view for the next window. */
export async function setUiView(view: UiView): Promise<void> {
  await call('set_ui_view', { view });
}

/** `dismiss_reclaim()`: the result was closed; the next window does not show it. */
export async function dismissReclaim(): Promise<void> {
  await call('dismiss_reclaim');
}

/**
 * `window_shown({pageMs, navigationStartMs})`: the first content is on screen, `pageMs` after the
 * page's navigation started at `navigationStartMs` (Unix ms, `performance.timeOrigin`); the shell
 * logs how long the open took, and how much of it went before the navigation.
 */
export async function windowShown(pageMs: number, navigationStartMs: number): Promise<void> {
  await call('window_shown', { pageMs, navigationStartMs });
}

/**
 * `preview_group_rule({root, label}) -> GroupRulePreview`: the rule the group would make and
 * what it would claim now (the engine's own check against the config file as it is).
 */
export function previewGroupRule(root: string, label: string): Promise<GroupRulePreview> {
  return call('preview_group_rule', { root, label });
}

/**
 * `add_group_rule({root, label, ruleId, regex}) -> GroupRuleAdded`: writes the previewed rule
 * into the config (comments kept); the group then shows as that producer.
 */
export function addGroupRule(root: string, label: string, ruleId: string, regex: string): Promise<GroupRuleAdded> {
  return call('add_group_rule', { root, label, ruleId, regex });
}

/** `ignore_shape({label, ignored}) -> string[]`: hides (or shows again) a shape; the labels ignored now. */
export function ignoreShape(label: string, ignored: boolean): Promise<string[]> {
  return call('ignore_shape', { label, ignored });
}

/** Listens to `reclaim-job` (payload `ReclaimJob`): the reclaim the window started moved on. */
export function onReclaimJob(handler: (job: ReclaimJob) => void): Promise<UnlistenFn> {
  return listen<ReclaimJob>('reclaim-job', (event) => handler(event.payload));
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
