// The window: wires the IPC layer to the views. Live by events (`snapshot`, `alert`), no polling.
// The shell builds it when the user opens it and destroys it a while after it closes: at load it
// fetches the snapshot and what the previous window was doing (`get_ui_state`), and it keeps its
// view there as it changes (`set_ui_view`).
import './locale-guard'; // first: no module may format with a bad platform locale (LANG=C)
import './style.css';
import { h, keepFocus, replaceChildren } from './dom';
import * as ipc from './ipc';
import { ReclaimController } from './reclaim-controller';
import { mergeAlerts } from './sort';
import type { AlertDto, Snapshot, UiError, UiState, UiView } from './types';
import type { ChartRange } from './views/chart';
import { Sparklines } from './views/chart';
import { renderHeader } from './views/header';
import { renderCrashGroups } from './views/crashes';
import { renderAlerts, renderRoots, renderUnattributed } from './views/lists';
import { RuleDialog, groupKey, renderGroups } from './views/groups';
import { ReportDialog } from './views/report-dialog';
import { ProducerCharts } from './views/producer-chart';
import { renderOutsideGrowth } from './views/outside-growth';
import { renderProducers } from './views/producers';
import { RANGE_SECS } from './views/chart';
import { ReclaimPanel } from './views/reclaim';
import { ReclaimHistoryPanel } from './views/reclaim-history';
import { SettingsDialog } from './views/settings';

const ALERTS_SHOWN = 20;
const THRESHOLD_DEBOUNCE_MS = 300;

function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html lacks #${id}`);
  return el as T;
}

const els = {
  header: byId('header'),
  banner: byId('banner'),
  producers: byId('producers'),
  crashes: byId('crashes'),
  unattributed: byId('unattributed'),
  alerts: byId('alerts'),
  roots: byId('roots'),
  history: byId('history'),
  reclaim: byId('reclaim'),
  reclaimDialog: byId<HTMLDialogElement>('reclaim-dialog'),
  settingsDialog: byId<HTMLDialogElement>('settings-dialog'),
  ruleDialog: byId<HTMLDialogElement>('rule-dialog'),
  reportDialog: byId<HTMLDialogElement>('report-dialog'),
};

const ui = {
  snapshot: null as Snapshot | null,
  received: [] as AlertDto[],
  expanded: new Set<string>(),
  /** The open group rows, by `groupKey`. */
  groupsOpen: new Set<string>(),
  range: '24h' as ChartRange,
  thresholdSecs: null as number | null,
  /** A set_threshold not yet answered: snapshots may still carry the old value. */
  thresholdPending: 0,
  thresholdTimer: null as ReturnType<typeof setTimeout> | null,
  /** `null` = every auto producer; else the one producer the estimate and plan are of. */
  scope: null as string | null,
  reclaimableKey: '',
  /** What auto-reclaim rules deleted so far (`producer:items`): a change is a new run to list. */
  autoReclaimedKey: null as string | null,
  error: null as UiError | null,
  /** `performance.now()` when the snapshot came. */
  receivedAt: 0,
  /** `shownKey` of the snapshot drawn last. */
  shownKey: '',
};

/** How often "… ago" texts are brought up to date between snapshots. */
const AGO_TICK_MS = 30_000;

const charts = new Sparklines();
const detailCharts = new ProducerCharts(ipc.producerHistory);
// A group's growth, charted as a producer's (a group has no reclaims of its own).
const groupCharts = new ProducerCharts((key, spanSecs) =>
  ipc.groupHistory(key, spanSecs).then((g) => ({ producer: key, from_unix_secs: g.from_unix_secs, to_unix_secs: g.to_unix_secs, samples: g.samples, reclaims: [] })),
);
const controller = new ReclaimController(ipc, (state) => {
  panel.render(state);
  if (state.phase === 'done') {
    history.refresh();
    detailCharts.invalidate();
  }
});
const panel = new ReclaimPanel(
  els.reclaim,
  els.reclaimDialog,
  controller,
  {
    thresholdChanged: (secs) => {
      ui.thresholdSecs = secs;
      requestEstimate();
      sendThreshold(secs);
      saveView();
    },
    scopeCleared: () => setScope(null),
  },
  { nowUnixSecs: () => nowSecs(), producerName, readThreshold: ipc.readThreshold },
);
const history = new ReclaimHistoryPanel(els.history, ipc.reclaimHistory, producerName);

/** A producer's name by id (the id when the snapshot does not list it). */
function producerName(id: string): string {
  return ui.snapshot?.producers.find((p) => p.id === id)?.name ?? id;
}
const ruleDialog = new RuleDialog(els.ruleDialog, ipc, ipc.toIpcError);
// The clipboard is the web view's own (it rejects when refused; the dialog then selects the text).
const reportDialog = new ReportDialog(
  els.reportDialog,
  { reportDraft: ipc.reportDraft, writeClipboard: (text) => navigator.clipboard.writeText(text) },
  ipc.toIpcError,
);

/** Hides (or shows again) a shape; the snapshot that follows shows the change. */
function setIgnored(label: string, ignored: boolean): void {
  ipc.ignoreShape(label, ignored).catch(showError);
}
const settings = new SettingsDialog(els.settingsDialog, ipc.getSettings, ipc.setSettings, ipc.readThreshold);

function showError(error: unknown): void {
  ui.error = ipc.toIpcError(error);
  renderBanner();
}

function renderBanner(): void {
  const messages = [...(ui.snapshot?.errors ?? [])];
  const children = messages.map((message) => h('p', {}, message));
  children.push(...renderOutsideGrowth(ui.snapshot?.unexplained_growth));
  if (ui.error) {
    children.unshift(
      h(
        'p',
        { class: 'ipc-error' },
        ui.error.message,
        ' ',
        h(
          'button',
          {
            type: 'button',
            class: 'link-button',
            'aria-label': 'Dismiss error',
            onclick: () => {
              ui.error = null;
              renderBanner();
            },
          },
          'Dismiss',
        ),
      ),
    );
  }
  els.banner.hidden = children.length === 0;
  replaceChildren(els.banner, ...children);
}

/** Asks for the estimate at the current threshold and scope (the plan is made on Reclaim). */
function requestEstimate(): void {
  if (ui.thresholdSecs === null) return;
  controller.request({
    producers: ui.scope === null ? [] : [ui.scope],
    thresholdSecs: ui.thresholdSecs,
  });
}

function sendThreshold(secs: number): void {
  if (ui.thresholdTimer !== null) clearTimeout(ui.thresholdTimer);
  ui.thresholdTimer = setTimeout(() => {
    ui.thresholdTimer = null;
    ui.thresholdPending += 1;
    ipc
      .setThreshold(secs)
      .catch(showError)
      .finally(() => {
        ui.thresholdPending -= 1;
      });
  }, THRESHOLD_DEBOUNCE_MS);
}

function setScope(id: string | null): void {
  ui.scope = id;
  const name = id === null ? null : producerName(id);
  panel.showScope(name);
  requestEstimate();
  saveView();
}

/** Keeps the view in the shell for the next window (this one may be destroyed any time). */
function saveView(): void {
  const view: UiView = {
    scope: ui.scope,
    expanded: [...ui.expanded],
    threshold_secs: ui.thresholdSecs,
    focus: null,
  };
  ipc.setUiView(view).catch((e: unknown) => console.warn('cannot keep the view', e));
}

/** Takes over the view of the previous window (before the first snapshot is shown). */
function restoreView(view: UiView): void {
  ui.scope = view.scope;
  ui.expanded = new Set(view.expanded);
  if (view.threshold_secs !== null) {
    ui.thresholdSecs = view.threshold_secs;
    panel.showThreshold(view.threshold_secs);
  }
}

/** The parts with "… ago" times: the crash groups and the alerts. */
function renderTimes(snapshot: Snapshot): void {
  renderCrashGroups(els.crashes, snapshot.crash_groups, nowSecs());
  renderAlerts(els.alerts, mergeAlerts(snapshot.alerts, ui.received, ALERTS_SHOWN), nowSecs(), {
    canReclaim,
    previewReclaim: (id) => {
      setScope(id);
      els.reclaim.scrollIntoView({ block: 'nearest' });
    },
  });
}

function renderAll(): void {
  const snapshot = ui.snapshot;
  if (!snapshot) return;
  keepFocus(() => {
    renderHeader(els.header, snapshot, {
      togglePause: (paused) => void ipc.setPaused(paused).catch(showError),
      rescan: () => void ipc.rescan().catch(showError),
      openSettings: () => void settings.open(),
    });
    detailCharts.prune(ui.expanded);
    groupCharts.prune(new Set(snapshot.unattributed_groups.filter((g) => ui.groupsOpen.has(groupKey(g))).map((g) => g.history_key)));
    renderProducers(
      els.producers,
      snapshot.producers,
      {
        expanded: ui.expanded,
        range: ui.range,
        nowUnixSecs: snapshot.taken_at_unix_secs,
        scanning: snapshot.state === 'scanning',
        detailChart: (id) => detailCharts.element(id, RANGE_SECS[ui.range], snapshot.taken_at_unix_secs),
      },
      charts,
      {
        toggle: (id) => {
          if (!ui.expanded.delete(id)) ui.expanded.add(id);
          renderAll();
          saveView();
        },
        openEvidence: (url) => void ipc.openEvidence(url).catch(showError),
        reclaimOnly: (id) => setScope(id),
        setRange: (range) => {
          ui.range = range;
          renderAll();
        },
      },
    );
    renderTimes(snapshot);
    renderUnattributed(
      els.unattributed,
      snapshot.unattributed,
      renderGroups(snapshot.unattributed_groups, snapshot.ignored_shapes ?? [], ui.groupsOpen, snapshot.taken_at_unix_secs, {
        toggle: (key) => {
          if (!ui.groupsOpen.delete(key)) ui.groupsOpen.add(key);
          renderAll();
        },
        chart: (group) => groupCharts.element(group.history_key, RANGE_SECS[ui.range], snapshot.taken_at_unix_secs),
        makeRule: (group) => void ruleDialog.open(group),
        report: (group) => void reportDialog.open(group),
        ignore: (label) => setIgnored(label, true),
        unignore: (label) => setIgnored(label, false),
      }),
    );
    history.render(snapshot.taken_at_unix_secs);
    renderRoots(els.roots, snapshot.roots, snapshot.state === 'scanning');
  });
  renderBanner();
}

/**
 * Now, Unix seconds, on the engine's clock: the snapshot's time plus what passed here since it
 * came, so "… ago" texts move on between snapshots.
 */
function nowSecs(): number {
  if (!ui.snapshot) return Math.floor(Date.now() / 1000);
  return ui.snapshot.taken_at_unix_secs + Math.max(0, Math.floor((performance.now() - ui.receivedAt) / 1000));
}

/**
 * What a snapshot shows: all of it but `live_at_unix_secs`, which the engine's heartbeat moves
 * every minute and the window does not show. A snapshot with the same key is not drawn again.
 */
function shownKey(snapshot: Snapshot): string {
  return JSON.stringify({ ...snapshot, live_at_unix_secs: 0 });
}

function applySnapshot(snapshot: Snapshot): void {
  const first = ui.snapshot === null;
  const key = shownKey(snapshot);
  if (!first && key === ui.shownKey) {
    ui.snapshot = snapshot;
    return;
  }
  ui.shownKey = key;
  ui.snapshot = snapshot;
  ui.receivedAt = performance.now();
  // Alerts the snapshot already lists need not be kept twice.
  ui.received = ui.received.filter((a) => a.time_unix_secs > snapshot.taken_at_unix_secs);
  let estimateStale = false;
  const adopt =
    ui.thresholdSecs === null ||
    (ui.thresholdPending === 0 && ui.thresholdTimer === null && snapshot.threshold_secs !== ui.thresholdSecs);
  if (adopt) {
    ui.thresholdSecs = snapshot.threshold_secs;
    panel.showThreshold(snapshot.threshold_secs);
    estimateStale = true;
  }
  // The engine's own reclaimable figures or the item counts changed: its age histograms changed
  // with them, so the estimate says the same as the rows.
  const reclaimable = snapshot.producers
    .map((p) => `${p.id}:${p.items}:${p.reclaimable_items}:${p.reclaimable_bytes}`)
    .join(',');
  if (reclaimable !== ui.reclaimableKey) {
    ui.reclaimableKey = reclaimable;
    estimateStale = true;
  }
  const autoKey = (snapshot.auto_reclaim?.reclaimed ?? []).map((r) => `${r.producer}:${r.items}`).join(',');
  if (ui.autoReclaimedKey !== null && autoKey !== ui.autoReclaimedKey) {
    history.refresh();
    detailCharts.invalidate();
  }
  ui.autoReclaimedKey = autoKey;
  if (first) panel.showScope(ui.scope === null ? null : producerName(ui.scope));
  renderAll();
  if (estimateStale) requestEstimate();
}

/** Whether the snapshot lists producer `id` and the engine says it can be reclaimed. */
function canReclaim(id: string): boolean {
  return ui.snapshot?.producers.find((q) => q.id === id)?.reclaimable === true;
}

/**
 * A notification was clicked (`focus-producer`): the producer's row opens (with its chart) and the
 * reclaim estimate is of that producer alone, when it can be reclaimed.
 */
function focusProducer(id: string): void {
  ui.expanded.add(id);
  if (canReclaim(id)) setScope(id);
  else saveView();
  renderAll();
  const row = document.querySelector<HTMLElement>(`[data-key="producer-${CSS.escape(id)}"]`);
  row?.scrollIntoView({ block: 'nearest' });
  row?.focus();
}

window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  charts.prune(new Set()); // colours come from CSS variables: draw the charts again
  detailCharts.prune(new Set());
  groupCharts.prune(new Set());
  renderAll();
});

/**
 * What the shell put in the page before it loaded (`window.__CACHEWATCH_INITIAL__`, see
 * `src-tauri/src/window.rs`): the snapshot and the view as they were when the window was built,
 * so the first paint has its content with no round trip. Absent in a browser test.
 */
const initial = (window as { __CACHEWATCH_INITIAL__?: { snapshot: Snapshot; ui: UiState } })
  .__CACHEWATCH_INITIAL__;

/** Takes over what the previous window was doing (`saved`), then shows `snapshot`. */
function showFirst(snapshot: Snapshot, saved: UiState | null): void {
  if (saved) {
    restoreView(saved.view);
    // An edit the previous window had not sent yet (closed within the debounce).
    if (saved.view.threshold_secs !== null && saved.view.threshold_secs !== snapshot.threshold_secs) {
      sendThreshold(saved.view.threshold_secs);
    }
  }
  applySnapshot(snapshot);
  if (saved) {
    controller.adopt(saved.reclaim);
    if (saved.view.focus !== null) focusProducer(saved.view.focus);
  }
  // After the paint that follows this frame: the shell logs how long the open took.
  requestAnimationFrame(() =>
    setTimeout(() => void ipc.windowShown(performance.now(), performance.timeOrigin).catch(() => {}), 0),
  );
}

async function start(): Promise<void> {
  panel.render(controller.state);
  if (initial) showFirst(initial.snapshot, initial.ui);
  // Listen first, so no snapshot is missed between the first one and the listener.
  await Promise.all([
    ipc.onSnapshot(applySnapshot),
    ipc.onAlert((alert) => {
      ui.received.unshift(alert);
      renderAll();
    }),
    ipc.onFocusProducer(focusProducer),
    ipc.onReclaimJob((job) => controller.adopt(job)),
  ]);
  if (initial) {
    // What changed between the page's build and its listeners (drawn only when anything did).
    const [snapshot, saved] = await Promise.all([ipc.getSnapshot(), ipc.getUiState().catch(() => null)]);
    applySnapshot(snapshot);
    if (saved && JSON.stringify(saved.reclaim) !== JSON.stringify(initial.ui.reclaim)) controller.adopt(saved.reclaim);
    return;
  }
  const [snapshot, saved] = await Promise.all([
    ipc.getSnapshot(),
    ipc.getUiState().catch((e: unknown) => {
      console.warn('no view to restore', e);
      return null;
    }),
  ]);
  showFirst(snapshot, saved);
}

start().catch(showError);
// "… ago" moves on with the clock, not only with snapshots: the alerts and crash groups again.
// Nothing is drawn when no such time is on screen.
setInterval(() => {
  const snapshot = ui.snapshot;
  if (!snapshot || document.hidden) return;
  if (snapshot.crash_groups.length > 0 || snapshot.alerts.length > 0 || ui.received.length > 0) {
    keepFocus(() => renderTimes(snapshot));
  }
  panel.refreshTimes();
}, AGO_TICK_MS);
