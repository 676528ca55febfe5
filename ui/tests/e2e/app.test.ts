// Browser tests: the built window (`dist/`, served by `vite preview` on 127.0.0.1 under a strict
// CSP) in Debian's headless Chromium, with the Tauri IPC replaced by `mock-ipc.js`.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { preview, type PreviewServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Command, CommandArgs, CommandResult, KeptItem, ReclaimPreview, Settings, Snapshot, UiState } from '../../src/types';
import { fixtureSnapshot, groupSnapshot, NOW } from './fixture';

/** The shell stand-in's handlers, typed by the generated command signatures. */
type Handlers = { [C in Command]: (args: CommandArgs<C>) => CommandResult<C> | Promise<CommandResult<C>> };

const UI_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MOCK_IPC = readFileSync(join(UI_DIR, 'tests', 'e2e', 'mock-ipc.js'), 'utf8');
const BAD_LOCALE = readFileSync(join(UI_DIR, 'tests', 'e2e', 'bad-locale.js'), 'utf8');
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'";
const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

let server: PreviewServer;
let browser: Browser;
let baseUrl: string;

beforeAll(async () => {
  server = await preview({
    root: UI_DIR,
    logLevel: 'warn',
    preview: { host: '127.0.0.1', port: 4173, strictPort: false, headers: { 'Content-Security-Policy': CSP } },
  });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview gave no URL');
  baseUrl = url;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => server?.httpServer.close(() => resolve()));
});

/**
 * The shell stand-in's command handlers, run in the page. Item ages 400000 s, 200000 s and
 * 7200 s with 1 GiB, 1 GiB and 512 MiB (`__items`, the tree the plan reads): a threshold keeps
 * the younger ones as too young, and one more item is always kept as in use. The estimate reads
 * `__estimateItems` when a test sets it (histograms older than the tree), else the same items.
 * `plan_reclaim` waits for `__releasePlans()` while `__holdPlans` is set and fails while
 * `__failPlans` counts down; `execute_reclaim` waits for `__releaseExecute()`.
 */
function installHandlers(args: { snapshot: unknown; gib: number; mib: number; now: number }): void {
  const w = window as unknown as Record<string, unknown>;
  const items = [
    { path: '/tmp/com.apple.gpuarchiver/gpuarchiver-1', age_secs: 400000, allocated_bytes: args.gib },
    { path: '/tmp/com.apple.gpuarchiver/gpuarchiver-2', age_secs: 200000, allocated_bytes: args.gib },
    { path: '/tmp/com.apple.gpuarchiver/gpuarchiver-3', age_secs: 7200, allocated_bytes: 512 * args.mib },
  ];
  const plans = new Map<string, ReclaimPreview>();
  const lastKept = new Map<string, KeptItem[]>();
  let release: () => void = () => {};
  let held: (() => void)[] = [];
  let planCount = 0;
  w.__items = items;
  w.__snapshot = args.snapshot;
  w.__releaseExecute = () => release();
  w.__holdPlans = false;
  w.__failPlans = 0;
  w.__releasePlans = () => {
    for (const go of held) go();
    held = [];
  };
  const settings: Settings = {
    default_threshold_secs: 86400,
    open_at_login: false,
    alerts: {
      producer_growth_bytes: 1073741824, producer_growth_items: 5000, producer_growth_window: '1h', total_limit_bytes: null,
      free_disk_min_bytes: 10737418240, disk_full_eta_min_hours: 24, cooldown: '6h',
      unexplained_growth_alert: false, unexplained_growth_min_bytes: 1073741824, unexplained_growth_min_ratio: 1,
      unexplained_growth_window: '6h',
      crash_loop: { crash_loop_reports: 5, crash_loop_window: '10m', crash_loop_cooldown: '6h' },
    },
    // The engine's exact text of each size (api::settings::size_texts).
    sizes: {
      'alerts.producer_growth_bytes': '1 GiB', 'alerts.total_limit_bytes': '',
      'alerts.free_disk_min_bytes': '10 GiB', 'alerts.unexplained_growth_min_bytes': '1 GiB',
    },
  };
  w.__settings = settings;
  function makePlan(producers: string[], thresholdSecs: number): ReclaimPreview {
    planCount += 1;
    const taken = items.filter((i) => i.age_secs >= thresholdSecs);
    const kept: KeptItem[] = items
      .filter((i) => i.age_secs < thresholdSecs)
      .map((i) => ({ path: i.path, producer: 'metal-gpuarchiver', reason: 'too-young', age_secs: i.age_secs, needed_secs: thresholdSecs }));
    kept.push({
      path: '/tmp/katago-coreml-222.mlmodelc', producer: 'katago-coreml', reason: 'in-use', pid: 77,
      open_path: '/tmp/katago-coreml-222.mlmodelc/model.mil',
    });
    const plannedBytes = taken.reduce((sum, i) => sum + i.allocated_bytes, 0);
    // Grouped by reason as the engine sends them: most first (stable: first seen on ties).
    const groups = new Map<KeptItem['reason'], KeptItem[]>();
    for (const k of kept) groups.set(k.reason, [...(groups.get(k.reason) ?? []), k]);
    const largest = taken.map((i, n) => ({
      ...i, root: '/tmp', producer: 'metal-gpuarchiver', apparent_bytes: i.allocated_bytes, freeable_bytes: i.allocated_bytes,
      dev: 1, ino: 100 + n, is_symlink: false, newest_mtime_unix_secs: 1_760_000_000 - i.age_secs,
    }));
    const plan: ReclaimPreview = {
      id: `plan-${planCount}-${thresholdSecs}-${producers.join('+')}`,
      created_unix_secs: 1_760_000_000,
      threshold_secs: thresholdSecs,
      planned_items: taken.length,
      planned_bytes: plannedBytes,
      planned_freeable_bytes: plannedBytes,
      producers: taken.length === 0 ? [] : [{
        producer: 'metal-gpuarchiver', items: taken.length, allocated_bytes: plannedBytes, freeable_bytes: plannedBytes,
        oldest_age_secs: Math.max(...taken.map((i) => i.age_secs)),
      }],
      kept_items: kept.length,
      kept: [...groups.entries()]
        .map(([reason, list]) => ({ reason, items: list.length, examples: list.slice(0, 3) }))
        .sort((a, b) => b.items - a.items),
      largest,
    };
    lastKept.set(plan.id, kept.slice(-1));
    plans.set(plan.id, plan);
    return plan;
  }
  const mock: Handlers = {
    // a test may feed a snapshot of an older engine (fields missing) on purpose
    get_snapshot: () => w.__snapshot as Snapshot,
    plan_reclaim: ({ producers, thresholdSecs }) => {
      if ((w.__failPlans as number) > 0) {
        w.__failPlans = (w.__failPlans as number) - 1;
        throw { code: 'job-failed', message: 'a blocking job failed: reclaim plan panicked' };
      }
      const plan = makePlan(producers, thresholdSecs);
      if (!w.__holdPlans) return plan;
      return new Promise<ReclaimPreview>((resolve) => held.push(() => resolve(plan)));
    },
    estimate_reclaim: ({ thresholdSecs }) => {
      const taken = ((w.__estimateItems ?? items) as typeof items).filter((i) => i.age_secs >= thresholdSecs);
      const bytes = taken.reduce((sum, i) => sum + i.allocated_bytes, 0);
      return {
        threshold_secs: thresholdSecs, items: taken.length, allocated_bytes: bytes, freeable_bytes: bytes,
        producers: taken.length === 0 ? [] : [{ producer: 'metal-gpuarchiver', items: taken.length, allocated_bytes: bytes, freeable_bytes: bytes, oldest_age_secs: 0 }],
        as_of_unix_secs: args.now,
      };
    },
    execute_reclaim: ({ planId }) =>
      new Promise((resolve, reject) => {
        const plan = plans.get(planId);
        if (!plan) {
          reject({ code: 'unknown-plan', message: `plan "${planId}" is unknown: preview again` });
          return;
        }
        release = () =>
          resolve({
            deleted_items: plan.planned_items,
            freed_bytes: plan.planned_bytes,
            kept_items: 1,
            already_gone_items: 0,
            error_count: 0,
            deleted: plan.largest.map((i) => ({ path: i.path, producer: i.producer, allocated_bytes: i.allocated_bytes })),
            kept: lastKept.get(planId) ?? [],
            errors: [],
          });
      }),
    set_threshold: () => null,
    // The engine reads a typed threshold (units::read_threshold); this fake knows d, h, min/m, s.
    read_threshold: ({ text }) => {
      const unit: Record<string, number> = { d: 86400, h: 3600, min: 60, m: 60, s: 1 };
      const parts = [...text.matchAll(/\s*(\d+)\s*([a-z]+)\s*/gy)];
      const secs = parts.reduce((sum, [, n, u]) => sum + Number(n) * (unit[u] ?? NaN), 0);
      if (parts.map(([p]) => p).join('') !== text || !(secs > 0)) {
        throw { code: 'bad-threshold', message: `bad duration "${text}": unknown time unit (write e.g. "90m", "12h" or "2d 6h")` };
      }
      return secs;
    },
    set_paused: () => null,
    rescan: () => null,
    open_evidence: () => null,
    // Four hours of samples every 10 min, growing 10 MiB each; 260 MiB reclaimed 2 h ago.
    // A group's stored samples (none in this fixture: the window charts producers only).
    // The swc group grew 4 KiB and one item every 10 min over the last hour; others have no samples.
    group_history: ({ key, spanSecs }) => ({
      key, from_unix_secs: args.now - spanSecs, to_unix_secs: args.now,
      samples: key === '2f746d700064737763'
        ? [6, 5, 4, 3, 2, 1, 0].map((k) => ({ time_unix_secs: args.now - k * 600, allocated_bytes: (96 - 4 * k) * 1024, items: 24 - k }))
        : [],
    }),
    producer_history: ({ producer, spanSecs }) => {
      const samples = [];
      for (let k = 24; k >= 0; k -= 1) {
        const t = args.now - k * 600;
        const bytes = 3 * args.gib - k * 10 * args.mib + (t < args.now - 7200 ? 260 * args.mib : 0);
        samples.push({ time_unix_secs: t, allocated_bytes: bytes, items: 12000 - k * 40 });
      }
      return {
        producer, from_unix_secs: args.now - spanSecs, to_unix_secs: args.now, samples,
        reclaims: [{ time_unix_secs: args.now - 7200, items: 260, bytes: 260 * args.mib, rule: 'metal-daily' }],
      };
    },
    reclaim_history: ({ spanSecs }) => ({
      from_unix_secs: args.now - spanSecs, to_unix_secs: args.now,
      runs: [
        {
          started_unix_secs: args.now - 600, finished_unix_secs: args.now - 590, deleted_items: 2, freed_bytes: 2 * args.gib,
          already_gone: 0, kept: { 'in-use': 1 } as Record<string, number>, errors: 1, first_error: 'permission denied',
          by_producer: { 'metal-gpuarchiver': { items: 2, bytes: 2 * args.gib } },
        },
        {
          started_unix_secs: args.now - 7200, finished_unix_secs: args.now - 7190, rule: 'metal-daily', deleted_items: 260,
          freed_bytes: 260 * args.mib, already_gone: 3, kept: { 'too-young': 40 } as Record<string, number>, errors: 0,
          by_producer: { 'metal-gpuarchiver': { items: 260, bytes: 260 * args.mib } },
        },
      ],
    }),
    get_ui_state: () =>
      (w.__uiState as UiState | undefined) ?? {
        view: { scope: null, expanded: [], threshold_secs: null, focus: null },
        reclaim: { phase: 'idle' },
      },
    set_ui_view: ({ view }) => {
      w.__uiState = { reclaim: { phase: 'idle' }, ...(w.__uiState as UiState | undefined), view };
      return null;
    },
    dismiss_reclaim: () => null,
    window_shown: () => null,
    // The engine's group actions on `__snapshot`: a preview with the members' figures (a group
    // whose label holds an escaped byte is refused, as names that are not UTF-8 are); a rule
    // written turns the group into a producer; an ignored shape leaves the groups.
    // The engine's draft (api::report::group_report) for a group the snapshot shows.
    report_draft: ({ root, label }) => {
      const snap = w.__snapshot as Snapshot;
      const g = snap.unattributed_groups.find((x) => x.root === root && x.label === label);
      if (!g) throw { code: 'group', message: `no group "${label}" in "${root}" now: look at the list again` };
      return {
        subject: 'group', template: g.shape, producer_id: null, producer_name: null, root_kind: g.root_kind, roots: [root],
        items: g.items, allocated_bytes: g.allocated_bytes, apparent_bytes: g.apparent_bytes, growth: null,
        oldest_unix_secs: g.oldest_mtime, newest_unix_secs: g.newest_mtime, examples: g.examples, writer: null, evidence: g.evidence,
        os: { name: 'macOS', version: '26.1', kernel: '25.1.0' },
        markdown: `## Leftover \`${g.shape}\` in the temp dir\n\n${g.items} items, left behind.\n`,
      };
    },
    preview_group_rule: ({ root, label }) => {
      const snap = w.__snapshot as Snapshot;
      const g = snap.unattributed_groups.find((x) => x.root === root && x.label === label);
      if (!g) throw { code: 'group', message: `no group "${label}" in "${root}" now: look at the list again` };
      const made = !label.includes('\\x');
      return {
        root, root_kind: g.root_kind, label, shape: g.shape, members: g.items,
        allocated_bytes: g.allocated_bytes, apparent_bytes: g.apparent_bytes,
        rule: made
          ? { id: 'local-swc', name: `Unknown producer of ${g.shape}`, glob: 'swc-*', regex: '^swc-[0-9a-f-]{36}$',
              toml: `[[producer]]\nid = "local-swc"\nname = "Unknown producer of ${g.shape}"\nroot = "temp"\nitem = "swc-*"\n` }
          : null,
        refused: made ? null : `the names of group "${g.shape}" are not UTF-8 text: no rule is made for it`,
        claimed: made ? g.items : 0, wrongly_claimed: [], missed: [],
      };
    },
    add_group_rule: ({ root, label, ruleId }) => {
      const snap = structuredClone(w.__snapshot as Snapshot);
      const g = snap.unattributed_groups.find((x) => x.root === root && x.label === label);
      if (!g) throw { code: 'group', message: `no group "${label}" in "${root}" now: look at the list again` };
      snap.unattributed_groups = snap.unattributed_groups.filter((x) => x !== g);
      snap.producers.push({
        ...snap.producers[1], id: ruleId, name: `Unknown producer of ${g.shape}`, kind: 'leak', reclaim: 'manual',
        items: g.items, files: g.items, allocated_bytes: g.allocated_bytes, apparent_bytes: g.apparent_bytes,
        reclaimable_bytes: 0, reclaimable_items: 0, top_items: [], evidence: [], notes: '',
      });
      w.__snapshot = snap;
      setTimeout(() => (w.__emit as (e: string, p: unknown) => void)('snapshot', snap), 0);
      return { id: ruleId, claimed: g.items, config: '/home/u/.config/cachewatch/config.toml' };
    },
    ignore_shape: ({ label, ignored }) => {
      const snap = structuredClone(w.__snapshot as Snapshot);
      const hidden = (w.__hiddenGroups ?? []) as Snapshot['unattributed_groups'];
      if (ignored) {
        hidden.push(...snap.unattributed_groups.filter((x) => x.label === label));
        snap.unattributed_groups = snap.unattributed_groups.filter((x) => x.label !== label);
        snap.ignored_shapes = [...snap.ignored_shapes, label];
      } else {
        if (!snap.ignored_shapes.includes(label)) throw { code: 'group', message: `shape "${label}" is not ignored` };
        snap.unattributed_groups = [...snap.unattributed_groups, ...hidden.filter((x) => x.label === label)];
        snap.ignored_shapes = snap.ignored_shapes.filter((x) => x !== label);
      }
      w.__hiddenGroups = hidden.filter((x) => snap.ignored_shapes.includes(x.label));
      snap.hidden_groups = (w.__hiddenGroups as unknown[]).length;
      w.__snapshot = snap;
      setTimeout(() => (w.__emit as (e: string, p: unknown) => void)('snapshot', snap), 0);
      return snap.ignored_shapes;
    },
    get_settings: () => w.__settings as Settings,
    set_settings: ({ settings }) => {
      // The engine reads each size as typed (api::settings::with_size_texts); a bad one names its field.
      for (const [field, text] of Object.entries(settings.sizes)) {
        if (text !== '' && !/^\s*\d+(?:\.\d+)?\s*(b|kib|mib|gib|tib)?\s*$/i.test(text ?? '')) {
          throw { code: 'bad-size', message: `bad size "${text}": unknown unit`, field };
        }
      }
      w.__settings = settings;
      return null;
    },
  };
  w.__mock = mock;
  w.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => (w.__csp as string[]).push(`${e.violatedDirective} ${e.blockedURI}`));
}

async function openApp(
  colorScheme: 'light' | 'dark' = 'light',
  options: { badLocale?: boolean; snapshot?: unknown; clock?: boolean; noProducers?: boolean; uiState?: unknown; noEstimate?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 380, height: 560 }, colorScheme });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  if (options.clock) await page.clock.install({ time: NOW * 1000 });
  if (options.badLocale) await page.addInitScript({ content: BAD_LOCALE });
  await page.addInitScript({ content: MOCK_IPC });
  await page.addInitScript(installHandlers, { snapshot: options.snapshot ?? fixtureSnapshot(), gib: GIB, mib: MIB, now: NOW });
  if (options.uiState) {
    await page.addInitScript((state) => ((window as unknown as { __uiState: unknown }).__uiState = state), options.uiState);
  }
  await page.goto(baseUrl);
  if (!options.noProducers) await page.locator('[data-testid="producer-bytes"]').first().waitFor();
  // A window restored onto a running reclaim shows the reclaim, not the estimate.
  if (!options.noEstimate) await page.locator('[data-testid="preview-frees"]').waitFor();
  return { context, page, errors };
}

const calls = (page: Page) => page.evaluate(() => (window as unknown as { __calls: [string, Record<string, unknown>][] }).__calls);

describe('the window', () => {
  it('renders the fixture snapshot: totals, producers largest first, unattributed, alerts', async () => {
    const { context, page, errors } = await openApp();
    expect(await page.getByTestId('total').textContent()).toBe('4.0 GiB');
    expect(await page.getByTestId('free').textContent()).toBe('50.0 GiB'); // the smaller of 50 and 100 GiB
    expect(await page.getByTestId('eta').textContent()).toBe('full in 3 d 4 h');
    expect(await page.getByTestId('state').textContent()).toBe('Watching');
    const names = await page.locator('.row-name').allTextContents();
    expect(names).toEqual(['Metal gpuarchiver', 'KataGo CoreML bundles', 'ONNX Runtime']);
    expect(await page.getByTestId('producer-bytes').allTextContents()).toEqual(['3.0 GiB', '150 MiB', '5.5 MiB']);
    expect(await page.getByTestId('producer-reclaimable').allTextContents()).toEqual([
      '2.0 GiB reclaimable (allocated)',
      '100 MiB reclaimable (allocated)',
      '0 B reclaimable (allocated, manual)',
    ]);
    const facts = await page.locator('.row-facts').allTextContents();
    expect(facts[0]).toBe('12,000 items · +1.2 GiB in the last 1 d');
    expect(facts[2]).toBe('1 item · no change in the last 1 d');
    await expect.poll(() => page.locator('.spark canvas').count()).toBe(3);
    const unattributed = await page.getByTestId('unattributed').allTextContents();
    expect(unattributed).toEqual(['pipcache300 MiB', 'mystery-dirtemp200 MiB']);
    expect(await page.getByTestId('alert').first().textContent()).toContain('Metal gpuarchiver is growing10 min ago');
    // The first call is the snapshot, then the estimate at the snapshot's threshold (1 d); no
    // plan is made before Reclaim is clicked.
    const sent = await calls(page);
    expect(sent[0]).toEqual(['get_snapshot', {}]);
    expect(sent).toContainEqual(['estimate_reclaim', { producers: [], thresholdSecs: 86400 }]);
    expect(sent.filter(([c]) => c === 'plan_reclaim')).toEqual([]);
    // The two items older than 1 d: 1 GiB each.
    expect(await page.getByTestId('preview-frees').textContent()).toBe('About 2.0 GiB freeable in 2 items');
    expect(await page.getByTestId('preview-producers').locator('li').allTextContents()).toEqual([
      'Metal gpuarchiver: 2 items, 2.0 GiB',
    ]);
    expect(await page.getByTestId('preview-asof').textContent()).toBe('Estimate as of just now');
    expect(await page.locator('input[name="threshold"]:checked').getAttribute('value')).toBe('86400');
    expect(await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp)).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('previews again when the threshold changes, preset or custom', async () => {
    const { context, page } = await openApp();
    await page.locator('#reclaim').getByText('3 d', { exact: true }).click();
    await expect.poll(() => page.getByTestId('preview-frees').textContent()).toBe('About 1.0 GiB freeable in 1 item');
    await page.locator('#reclaim').getByText('1 h', { exact: true }).click();
    // 1 GiB + 1 GiB + 512 MiB
    await expect.poll(() => page.getByTestId('preview-frees').textContent()).toBe('About 2.5 GiB freeable in 3 items');
    await page.locator('#reclaim').getByText('7 d', { exact: true }).click();
    await expect.poll(() => page.getByTestId('preview-frees').textContent()).toBe('Nothing to reclaim at this threshold');
    expect(await page.locator('[data-key="reclaim"]').getAttribute('aria-disabled')).toBe('true');
    await page.locator('[data-key="reclaim"]').click({ force: true }); // aria-disabled: the click does nothing
    expect(await page.locator('#reclaim-dialog').evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    await page.locator('#reclaim').getByText('Custom', { exact: true }).click();
    const custom = page.locator('#custom-threshold');
    await custom.fill('2d 12h'); // 216000 s: only the 400000 s item is older
    await expect.poll(() => page.getByTestId('preview-frees').textContent()).toBe('About 1.0 GiB freeable in 1 item');
    expect(await page.locator('#custom-hint').textContent()).toBe('= 2 d 12 h');
    await custom.fill('soon');
    // The engine's reason, as it read the text.
    await expect.poll(() => page.locator('#custom-hint').textContent()).toContain('bad duration "soon"');
    expect(await custom.getAttribute('aria-invalid')).toBe('true');
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'set_threshold').at(-1)).toEqual([
      'set_threshold',
      { thresholdSecs: 216000 },
    ]);
    const thresholds = (await calls(page)).filter(([c]) => c === 'estimate_reclaim').map(([, a]) => a.thresholdSecs);
    expect(thresholds).toEqual([86400, 259200, 3600, 604800, 216000]);
    expect((await calls(page)).filter(([c]) => c === 'plan_reclaim')).toEqual([]); // estimates only
    await context.close();
  });

  it('runs the reclaim flow by plan id: planning, confirm of the real plan, progress, result', async () => {
    const { context, page } = await openApp();
    const dialog = page.locator('#reclaim-dialog');
    await page.evaluate(() => ((window as unknown as { __holdPlans: boolean }).__holdPlans = true));
    await page.locator('[data-key="reclaim"]').click();
    // The real plan is being made: a cancellable "Planning…".
    expect(await dialog.locator('h2').textContent()).toBe('Planning…');
    // No indeterminate bar: it would animate (the web process drawing) for as long as it waits.
    expect(await dialog.locator('progress').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    expect((await calls(page)).filter(([c]) => c === 'plan_reclaim')).toEqual([
      ['plan_reclaim', { producers: [], thresholdSecs: 86400 }],
    ]);
    mkdirSync(join(UI_DIR, 'screenshots'), { recursive: true });
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'planning.png') });
    await page.evaluate(() => (window as unknown as { __releasePlans: () => void }).__releasePlans());
    await expect.poll(() => dialog.locator('h2').textContent()).toBe('Reclaim space?');
    // The plan says what the estimate said: no word of a change.
    expect(await dialog.getByTestId('confirm-summary').textContent()).toBe('Deletes 2 items older than 1 d, freeing 2.0 GiB.');
    expect(await dialog.getByTestId('confirm-changed').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await dialog.getByText('Delete 2 items').click();
    expect(await dialog.locator('h2').textContent()).toBe('Reclaiming…');
    expect(await dialog.locator('progress').count()).toBe(0);
    await page.evaluate(() => (window as unknown as { __releaseExecute: () => void }).__releaseExecute());
    await expect.poll(() => dialog.getByTestId('result').textContent()).toBe('Freed 2.0 GiB · 2 deleted · 1 kept · 0 errors');
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'light-result.png') });
    const executes = (await calls(page)).filter(([c]) => c === 'execute_reclaim');
    expect(executes).toEqual([['execute_reclaim', { planId: 'plan-1-86400-' }]]); // an id, never paths
    await dialog.getByText('Done').click();
    expect(await dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    expect(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.key)).toBe('reclaim');
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').length).toBe(2);
    expect((await calls(page)).filter(([c]) => c === 'plan_reclaim')).toHaveLength(1);
    await context.close();
  });

  it('ignores the plan of a cancelled planning and executes only the plan confirmed', async () => {
    const { context, page } = await openApp();
    const dialog = page.locator('#reclaim-dialog');
    await page.evaluate(() => ((window as unknown as { __holdPlans: boolean }).__holdPlans = true));
    await page.locator('[data-key="reclaim"]').click();
    await dialog.getByText('Cancel').click();
    expect(await dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    await page.evaluate(() => (window as unknown as { __releasePlans: () => void }).__releasePlans());
    // the cancelled plan came: nothing opens; the estimate is asked for again instead
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').length).toBe(2);
    expect(await dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    await page.evaluate(() => ((window as unknown as { __holdPlans: boolean }).__holdPlans = false));
    await page.locator('[data-key="reclaim"]').click();
    await dialog.getByText('Delete 2 items').click();
    expect((await calls(page)).filter(([c]) => c === 'execute_reclaim')).toEqual([['execute_reclaim', { planId: 'plan-2-86400-' }]]);
    await page.evaluate(() => (window as unknown as { __releaseExecute: () => void }).__releaseExecute());
    await expect.poll(() => dialog.getByTestId('result').textContent()).toBe('Freed 2.0 GiB · 2 deleted · 1 kept · 0 errors');
    await context.close();
  });

  it('confirms the real figures when items changed since the estimate', async () => {
    const { context, page } = await openApp();
    const dialog = page.locator('#reclaim-dialog');
    // The histograms are of the tree as it was; then a 1 GiB item 300000 s old appears.
    await page.evaluate((gib) => {
      const w = window as unknown as { __items: { path: string; age_secs: number; allocated_bytes: number }[]; __estimateItems: unknown };
      w.__estimateItems = [...w.__items];
      w.__items.push({ path: '/tmp/com.apple.gpuarchiver/gpuarchiver-4', age_secs: 300000, allocated_bytes: gib });
    }, GIB);
    expect(await page.getByTestId('preview-frees').textContent()).toBe('About 2.0 GiB freeable in 2 items');
    await page.locator('[data-key="reclaim"]').click();
    await expect.poll(() => dialog.locator('h2').textContent()).toBe('Reclaim space?');
    // 1 GiB × 3 now
    expect(await dialog.getByTestId('confirm-summary').textContent()).toBe('Deletes 3 items older than 1 d, freeing 3.0 GiB.');
    expect(await dialog.getByTestId('confirm-changed').textContent()).toBe(
      'The estimate said about 2 items, 2.0 GiB; items changed since. These are the figures now.',
    );
    expect(await dialog.getByTestId('confirm-items').locator('li').count()).toBe(3);
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'confirm-changed.png') });
    await dialog.getByText('Delete 3 items').click();
    expect((await calls(page)).filter(([c]) => c === 'execute_reclaim')).toEqual([['execute_reclaim', { planId: 'plan-1-86400-' }]]);
    await context.close();
  });

  it('says so when the real plan is empty, and goes back to the estimate', async () => {
    const { context, page } = await openApp();
    const dialog = page.locator('#reclaim-dialog');
    // Everything the estimate counted is gone by the time the plan is made.
    await page.evaluate(() => {
      const w = window as unknown as { __items: unknown[]; __estimateItems: unknown };
      w.__estimateItems = [...w.__items];
      w.__items.length = 0;
    });
    await page.locator('[data-key="reclaim"]').click();
    await expect.poll(() => dialog.locator('h2').textContent()).toBe('Nothing to reclaim');
    expect(await dialog.getByTestId('plan-empty').textContent()).toBe(
      'The plan made now finds nothing older than 1 d to delete: 1 item must stay. The estimate said about 2 items, 2.0 GiB; items changed since.',
    );
    expect(await dialog.getByTestId('confirm-kept').locator('li').allTextContents()).toEqual(['1 in use: katago-coreml-222.mlmodelc (pid 77)']);
    expect(await dialog.locator('[data-key="dialog-confirm"]').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Back');
    await dialog.getByText('Back').click();
    expect(await dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').length).toBe(2);
    expect((await calls(page)).filter(([c]) => c === 'execute_reclaim')).toEqual([]);
    await context.close();
  });

  it('shows a failed plan with its error and plans again on Retry', async () => {
    const { context, page } = await openApp();
    const dialog = page.locator('#reclaim-dialog');
    await page.evaluate(() => ((window as unknown as { __failPlans: number }).__failPlans = 1));
    await page.locator('[data-key="reclaim"]').click();
    await expect.poll(() => dialog.locator('h2').textContent()).toBe('Planning failed');
    expect(await dialog.getByTestId('plan-error').textContent()).toBe('a blocking job failed: reclaim plan panicked');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Retry');
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'plan-failed.png') });
    await dialog.getByText('Retry').click();
    await expect.poll(() => dialog.locator('h2').textContent()).toBe('Reclaim space?');
    expect(await dialog.getByTestId('confirm-summary').textContent()).toBe('Deletes 2 items older than 1 d, freeing 2.0 GiB.');
    expect((await calls(page)).filter(([c]) => c === 'plan_reclaim')).toEqual([
      ['plan_reclaim', { producers: [], thresholdSecs: 86400 }],
      ['plan_reclaim', { producers: [], thresholdSecs: 86400 }],
    ]);
    await context.close();
  });

  it('previews one producer only from its expanded row', async () => {
    const { context, page } = await openApp();
    await page.locator('[data-key="producer-metal-gpuarchiver"]').click();
    await page.getByText('Preview reclaim of Metal gpuarchiver only').click();
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').at(-1)).toEqual([
      'estimate_reclaim',
      { producers: ['metal-gpuarchiver'], thresholdSecs: 86400 },
    ]);
    expect(await page.locator('.scope strong').textContent()).toBe('Metal gpuarchiver');
    // Reclaim plans that producer alone.
    await page.locator('[data-key="reclaim"]').click();
    await page.locator('[data-key="dialog-confirm"]').waitFor();
    expect((await calls(page)).filter(([c]) => c === 'plan_reclaim')).toEqual([
      ['plan_reclaim', { producers: ['metal-gpuarchiver'], thresholdSecs: 86400 }],
    ]);
    await page.locator('[data-key="dialog-cancel"]').click();
    await page.locator('[data-key="scope-clear"]').click();
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').at(-1)?.[1]).toEqual({ producers: [], thresholdSecs: 86400 });
    await context.close();
  });

  it('shows new values when a snapshot event and an alert event arrive', async () => {
    const { context, page } = await openApp();
    const next = fixtureSnapshot();
    next.taken_at_unix_secs = NOW + 60;
    next.total_allocated_bytes = 2 * GIB;
    next.state = 'scanning';
    next.scan_progress = { roots_done: 1, roots_total: 2, entries_done: 20003 };
    const gpu = next.producers.find((p) => p.id === 'metal-gpuarchiver');
    if (!gpu) throw new Error('fixture lacks gpuarchiver');
    gpu.allocated_bytes = 100 * MIB; // now smaller than KataGo's 150 MiB: the order flips
    gpu.reclaimable_bytes = 0;
    gpu.reclaimable_items = 0;
    await page.evaluate((s) => (window as unknown as { __emit: (e: string, p: unknown) => void }).__emit('snapshot', s), next);
    await expect.poll(() => page.getByTestId('total').textContent()).toBe('2.0 GiB');
    expect(await page.getByTestId('state').textContent()).toBe('Scanning');
    // Progress in entries and a determinate bar (roots done of all: it stands still while the data
    // does), and no "not filling" meanwhile.
    expect(await page.getByTestId('scan-text').textContent()).toBe('Scanning root 2 of 2 · 20,003 entries so far');
    expect(await page.locator('.scan-progress').getAttribute('value')).toBe('1');
    expect(await page.locator('.scan-progress').getAttribute('max')).toBe('2');
    expect(await page.getByTestId('eta').textContent()).toBe('—');
    expect(await page.locator('.row-name').allTextContents()).toEqual(['KataGo CoreML bundles', 'Metal gpuarchiver', 'ONNX Runtime']);
    expect(await page.getByTestId('producer-bytes').allTextContents()).toEqual(['150 MiB', '100 MiB', '5.5 MiB']);
    // Reclaimable figures changed: the estimate is asked for again.
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').length).toBe(2);
    await page.evaluate(
      (alert) => (window as unknown as { __emit: (e: string, p: unknown) => void }).__emit('alert', alert),
      { id: 8, time_unix_secs: NOW + 120, rule: 'free-disk', producer: null, title: 'Disk almost full', message: '9.5 GiB free.', app_message: '9.5 GiB free.', suggested_reclaim: null },
    );
    await expect.poll(() => page.getByTestId('alert').first().locator('strong').textContent()).toBe('Disk almost full');
    expect(await page.getByTestId('alert').count()).toBe(2);
    await context.close();
  });

  it('is keyboard usable: focus order, Enter/Space/arrows on rows, Escape closes dialogs', async () => {
    const { context, page } = await openApp();
    const focused = () => page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.key ?? document.activeElement?.tagName);
    const order: (string | undefined)[] = [];
    for (let i = 0; i < 6; i += 1) {
      await page.keyboard.press('Tab');
      order.push(await focused());
    }
    expect(order).toEqual(['pause', 'rescan', 'settings', 'range-24h', 'range-7d', 'producer-metal-gpuarchiver']);
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle);
    expect(outline).toBe('solid'); // a visible focus ring
    await page.keyboard.press('Enter');
    const row = page.locator('[data-key="producer-metal-gpuarchiver"]');
    expect(await row.getAttribute('aria-expanded')).toBe('true');
    expect(await page.locator('.notes').first().textContent()).toBe('Metal leaves a gpuarchiver-* dir per process.');
    expect(await focused()).toBe('producer-metal-gpuarchiver'); // focus survives the re-render
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe('producer-katago-coreml');
    await page.keyboard.press(' ');
    expect(await page.locator('[data-key="producer-katago-coreml"]').getAttribute('aria-expanded')).toBe('true');
    await page.keyboard.press('Enter');
    expect(await page.locator('[data-key="producer-katago-coreml"]').getAttribute('aria-expanded')).toBe('false');
    // Escape closes the reclaim confirmation without deleting.
    await page.locator('[data-key="reclaim"]').focus();
    await page.keyboard.press('Enter');
    expect(await page.locator('#reclaim-dialog').evaluate((d) => (d as HTMLDialogElement).open)).toBe(true);
    await page.keyboard.press('Escape');
    expect(await page.locator('#reclaim-dialog').evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    expect((await calls(page)).filter(([c]) => c === 'execute_reclaim')).toEqual([]);
    // Escape closes settings too.
    await page.locator('[data-key="settings"]').click();
    await page.locator('#set-threshold').waitFor();
    await page.keyboard.press('Escape');
    expect(await page.locator('#settings-dialog').evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    await context.close();
  });

  it('opens evidence through the shell and saves settings', async () => {
    const { context, page } = await openApp();
    await page.locator('[data-key="producer-katago-coreml"]').click();
    await page.getByText('lightvector/KataGo#1234').click();
    expect((await calls(page)).filter(([c]) => c === 'open_evidence')).toEqual([
      ['open_evidence', { url: 'https://github.com/lightvector/KataGo/issues/1234' }],
    ]);
    expect(page.url()).toBe(baseUrl); // no navigation
    await page.locator('[data-key="settings"]').click();
    await page.locator('#set-threshold').fill('3d');
    await page.locator('#set-alerts-producer_growth_items').fill('2000');
    // Sizes are shown and typed in binary units; the engine reads them (with the settings).
    expect(await page.locator('#set-alerts-producer_growth_bytes').inputValue()).toBe('1 GiB');
    expect(await page.locator('#set-alerts-free_disk_min_bytes').inputValue()).toBe('10 GiB');
    await page.locator('#set-alerts-total_limit_bytes').fill('50 parsecs');
    await page.getByText('Open at login').click();
    await page.getByText('Save').click();
    await expect.poll(() => page.locator('#settings-dialog .error-text').textContent()).toContain('Total limit: bad size "50 parsecs"');
    await page.locator('#set-alerts-total_limit_bytes').fill('50 MiB');
    await page.getByText('Save').click();
    await expect.poll(() => page.locator('#settings-dialog').evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    // The refused try, then the one saved: the sizes as typed beside the numbers the form was given.
    const saved = (await calls(page)).filter(([c]) => c === 'set_settings').slice(1);
    expect(saved).toEqual([
      [
        'set_settings',
        {
          settings: {
            default_threshold_secs: 259200,
            open_at_login: true,
            sizes: {
              'alerts.producer_growth_bytes': '1 GiB', 'alerts.total_limit_bytes': '50 MiB',
              'alerts.free_disk_min_bytes': '10 GiB', 'alerts.unexplained_growth_min_bytes': '1 GiB',
            },
            alerts: {
              producer_growth_bytes: 1073741824, producer_growth_items: 2000, producer_growth_window: '1h', total_limit_bytes: null,
              free_disk_min_bytes: 10737418240, disk_full_eta_min_hours: 24, cooldown: '6h',
              crash_loop: { crash_loop_reports: 5, crash_loop_window: '10m', crash_loop_cooldown: '6h' },
              unexplained_growth_alert: false, unexplained_growth_min_bytes: 1073741824,
              unexplained_growth_min_ratio: 1, unexplained_growth_window: '6h',
            },
          },
        },
      ],
    ]);
    await context.close();
  });

  it('charts an expanded producer: window-wide, values on hover, its reclaims marked, span switchable', async () => {
    const { context, page, errors } = await openApp();
    await page.locator('[data-key="producer-metal-gpuarchiver"]').click();
    const chart = page.getByTestId('chart-metal-gpuarchiver');
    await chart.locator('canvas').waitFor();
    expect((await calls(page)).filter(([c]) => c === 'producer_history')).toEqual([
      ['producer_history', { producer: 'metal-gpuarchiver', spanSecs: 86400 }],
    ]);
    // The newest sample at rest, the reclaim in words below the chart.
    expect(await chart.getByTestId('chart-readout').textContent()).toMatch(/^Now: \d\d:\d\d · 3\.0 GiB · 12,000 items$/);
    expect(await chart.getByTestId('chart-reclaims').textContent()).toMatch(
      /^Reclaimed 260 items, 260 MiB at \d\d:\d\d \(rule metal-daily\)$/,
    );
    // As wide as the row, not a sparkline.
    const box = await chart.locator('.chart-plot').boundingBox();
    expect(box?.width ?? 0).toBeGreaterThan(300);
    // Hovering the left edge of the plot reads the oldest sample: 4 h ago, 260 MiB more.
    const over = await chart.locator('.u-over').boundingBox();
    if (!over) throw new Error('no plot area');
    await page.mouse.move(over.x + 2, over.y + over.height / 2);
    await expect.poll(() => chart.getByTestId('chart-readout').textContent()).toMatch(/^\d\d:\d\d · 3\.0 GiB · 11,040 items$/);
    await page.mouse.move(over.x + over.width - 1, over.y + over.height / 2);
    await expect.poll(() => chart.getByTestId('chart-readout').textContent()).toMatch(/ · 12,000 items$/);
    // Another span asks again.
    await page.locator('[data-key="range-7d"]').click();
    await expect
      .poll(async () => (await calls(page)).filter(([c]) => c === 'producer_history').length)
      .toBe(2);
    expect((await calls(page)).filter(([c]) => c === 'producer_history')[1]).toEqual([
      'producer_history',
      { producer: 'metal-gpuarchiver', spanSecs: 604800 },
    ]);
    await page.locator('[data-key="range-24h"]').click();
    await page.locator('[data-key="producer-metal-gpuarchiver"]').scrollIntoViewIfNeeded();
    mkdirSync(join(UI_DIR, 'screenshots'), { recursive: true });
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'producer-chart.png') });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('opens the clicked notification\'s producer: its row with the chart, and a preview of it alone', async () => {
    const { context, page, errors } = await openApp();
    await page.evaluate(() =>
      (window as unknown as { __emit: (e: string, p: unknown) => void }).__emit('focus-producer', 'katago-coreml'),
    );
    await page.getByTestId('chart-katago-coreml').locator('canvas').waitFor();
    expect(await page.locator('[data-key="producer-katago-coreml"]').getAttribute('aria-expanded')).toBe('true');
    await expect
      .poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').at(-1))
      .toEqual(['estimate_reclaim', { producers: ['katago-coreml'], thresholdSecs: 86400 }]);
    expect((await calls(page)).filter(([c]) => c === 'producer_history')).toEqual([
      ['producer_history', { producer: 'katago-coreml', spanSecs: 86400 }],
    ]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('lists past reclaims when asked: when, by whom, what each producer lost, kept and errors', async () => {
    const { context, page, errors } = await openApp();
    expect(await page.getByTestId('history-list').count()).toBe(0); // folded: nothing fetched
    expect((await calls(page)).filter(([c]) => c === 'reclaim_history')).toEqual([]);
    await page.locator('[data-key="history-toggle"]').click();
    await page.getByTestId('history-run').first().waitFor();
    expect((await calls(page)).filter(([c]) => c === 'reclaim_history')).toEqual([
      ['reclaim_history', { spanSecs: 30 * 86400 }],
    ]);
    const runs = await page.getByTestId('history-run').allTextContents();
    expect(runs).toHaveLength(2);
    expect(runs[0]).toMatch(/^\d\d:\d\dasked for2\.0 GiB freedMetal gpuarchiver: 2 items, 2\.0 GiB · kept 1 in use1 error: permission denied$/);
    expect(runs[1]).toMatch(
      /^\d\d:\d\drule metal-daily260 MiB freedMetal gpuarchiver: 260 items, 260 MiB · kept 40 too young · 3 items already gone$/,
    );
    await page.locator('#history').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'reclaim-history.png') });
    // An auto-reclaim run deleted something (the snapshot's totals moved): the open panel asks again.
    const next = fixtureSnapshot();
    next.taken_at_unix_secs = NOW + 60;
    next.auto_reclaim.reclaimed = [{ producer: 'metal-gpuarchiver', items: 6, bytes: 9 * MIB }];
    await page.evaluate((s) => (window as unknown as { __emit: (e: string, p: unknown) => void }).__emit('snapshot', s), next);
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'reclaim_history').length).toBe(2);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('renders under the locale WebKitGTK gives JavaScript with LANG=C (a bad tag "C")', async () => {
    const { context, page, errors } = await openApp('light', { badLocale: true });
    // The stand-in really is hostile: the default locale and "C" throw.
    const probe = await page.evaluate(() => {
      const out: string[] = [navigator.language];
      for (const run of [() => new Intl.NumberFormat(), () => new Intl.DateTimeFormat('C'), () => (1).toLocaleString()]) {
        try {
          run();
          out.push('ok');
        } catch (e) {
          out.push(String(e));
        }
      }
      return out;
    });
    expect(probe[0]).not.toBe('C'); // the window swapped the bad tag for a valid one
    expect(probe.slice(1)).toEqual(['ok', 'ok', 'ok']); // and guards the default locale
    expect(await page.getByTestId('total').textContent()).toBe('4.0 GiB');
    expect(await page.getByTestId('producer-bytes').allTextContents()).toEqual(['3.0 GiB', '150 MiB', '5.5 MiB']);
    expect((await page.locator('.row-facts').allTextContents())[0]).toBe('12,000 items · +1.2 GiB in the last 1 d');
    await expect.poll(() => page.locator('.spark canvas').count()).toBe(3);
    expect(await page.getByTestId('preview-frees').textContent()).toBe('About 2.0 GiB freeable in 2 items');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('shows crash loops (a CoreAI loop highlighted) and the roots with mount and rescans', async () => {
    const { context, page, errors } = await openApp();
    const section = page.locator('#crashes');
    expect(await section.isVisible()).toBe(true);
    expect(await section.locator('h2').textContent()).toBe('Crash loops');
    const groups = page.getByTestId('crash-group');
    expect(await groups.count()).toBe(2);
    // The engine's order (newest report first): the CoreAI loop, then Preview.
    expect(await groups.locator('.crash-process').allTextContents()).toEqual(['ModelWorker', 'Preview']);
    expect(await page.getByTestId('crash-count').allTextContents()).toEqual(['12 reports', '2 reports']);
    expect(await groups.first().locator('.crash-title').textContent()).toBe(
      'CoreAI runtime allocation cap: the process is killed after 16384 outputs',
    );
    expect(await groups.locator('time').allTextContents()).toEqual(['last 5 min ago', 'last 1 d ago']);
    expect(await page.getByTestId('crash-bytes').allTextContents()).toEqual(['1.1 MiB of reports', '40.0 KiB of reports']);
    expect(await groups.evaluateAll((els) => els.map((e) => e.classList.contains('loop')))).toEqual([true, false]);
    const border = await groups.evaluateAll((els) => els.map((e) => getComputedStyle(e).borderLeftWidth));
    expect(border).toEqual(['3px', '1px']);
    expect(await groups.first().getAttribute('title')).toBe('coreai-ndarray-allocation-cap: first 1 h ago, last 5 min ago');
    // Roots: mount and rescans on a compact second line, details in the tooltip.
    expect(await page.getByTestId('root-detail').allTextContents()).toEqual([
      'on / · events · 0 rescans',
      'on /home · polling · 3 rescans · 2 unreadable paths',
    ]);
    // A polling root wears a "Polling" badge; an evented one none.
    expect(await page.getByTestId('root').nth(1).getByTestId('root-polling').textContent()).toBe('Polling');
    expect(await page.getByTestId('root-polling').count()).toBe(1);
    expect(await page.getByTestId('root').nth(1).getAttribute('title')).toBe(
      '/home/u/.cache\nmount: /home\nvolume: 100 GiB free of 1000 GiB\n40 items, 3 rescans since start\nnot watched by events: inotify watch limit reached',
    );
    // A snapshot without crash groups hides the section; one from an engine that predates the
    // fields (no crash_groups, no mount/rescans) still renders.
    const none = fixtureSnapshot();
    none.taken_at_unix_secs = NOW + 60;
    none.crash_groups = [];
    await page.evaluate((s) => (window as unknown as { __emit: (e: string, p: unknown) => void }).__emit('snapshot', s), none);
    await expect.poll(() => section.isVisible()).toBe(false);
    expect(await page.getByTestId('crash-group').count()).toBe(0);
    const old = fixtureSnapshot() as unknown as Record<string, unknown>;
    old.taken_at_unix_secs = NOW + 120;
    old.total_allocated_bytes = 5 * GIB;
    delete old.crash_groups;
    for (const r of old.roots as Record<string, unknown>[]) {
      delete r.mount;
      delete r.rescans;
    }
    await page.evaluate((s) => (window as unknown as { __emit: (e: string, p: unknown) => void }).__emit('snapshot', s), old);
    await expect.poll(() => page.getByTestId('total').textContent()).toBe('5.0 GiB');
    expect(await section.isVisible()).toBe(false);
    expect(await page.getByTestId('root-detail').first().textContent()).toBe('mount unknown · events · 0 rescans');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('turns a group into a rule in two clicks: the engine\'s figures, then the producer', async () => {
    const { context, page, errors } = await openApp('light', { snapshot: groupSnapshot() });
    const groups = page.getByTestId('unattributed-group');
    await expect.poll(() => groups.count()).toBe(2);
    await groups.first().getByTestId('make-rule').click(); // 1
    const dialog = page.locator('#rule-dialog');
    await dialog.getByTestId('rule-claims').waitFor();
    expect(await dialog.getByTestId('rule-claims').textContent()).toBe('Claims 24 items of 24 members, 96.0 KiB allocated, in /tmp.');
    expect(await dialog.getByTestId('rule-id').textContent()).toBe('Producer local-swc: Unknown producer of swc-<uuid>/');
    expect(await dialog.getByTestId('rule-toml').textContent()).toContain('item = "swc-*"');
    mkdirSync(join(UI_DIR, 'screenshots'), { recursive: true });
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'make-rule.png') });
    await dialog.locator('[data-key="rule-confirm"]').click(); // 2
    await dialog.getByTestId('rule-added').waitFor();
    expect(await dialog.getByTestId('rule-added').textContent()).toBe(
      'Added producer local-swc (24 items) to /home/u/.config/cachewatch/config.toml.',
    );
    const sent = (await calls(page)).filter(([c]) => c === 'preview_group_rule' || c === 'add_group_rule');
    expect(sent).toEqual([
      ['preview_group_rule', { root: '/tmp', label: 'swc-<uuid>/' }],
      ['add_group_rule', { root: '/tmp', label: 'swc-<uuid>/', ruleId: 'local-swc', regex: '^swc-[0-9a-f-]{36}$' }],
    ]);
    // The group shows as a producer now, with the group's figures.
    await expect.poll(() => groups.count()).toBe(1);
    await expect.poll(() => page.locator('#producers .row-name').allTextContents()).toContain('Unknown producer of swc-<uuid>/');
    await dialog.locator('[data-key="rule-done"]').click();
    expect(await dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    // A group whose names are not text: the engine's refusal, and nothing to confirm.
    await groups.first().getByTestId('make-rule').click();
    await dialog.getByTestId('rule-blocked').waitFor();
    expect(await dialog.getByTestId('rule-blocked').textContent()).toBe(
      'the names of group "odd\\xff-<uuid>/" are not UTF-8 text: no rule is made for it',
    );
    expect(await dialog.locator('[data-key="rule-confirm"]').count()).toBe(0);
    await dialog.locator('[data-key="rule-cancel"]').click();
    expect(errors).toEqual([]);
    await context.close();
  });

  it('drafts a report on a group for upstream and copies it', async () => {
    const { context, page, errors } = await openApp('light', { snapshot: groupSnapshot() });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(baseUrl).origin });
    const groups = page.getByTestId('unattributed-group');
    await expect.poll(() => groups.count()).toBe(2);
    await groups.first().getByTestId('copy-report').click();
    const dialog = page.locator('#report-dialog');
    await dialog.getByTestId('report-text').waitFor();
    const draft = '## Leftover `swc-<uuid>/` in the temp dir\n\n24 items, left behind.\n';
    expect(await dialog.getByTestId('report-text').inputValue()).toBe(draft);
    expect(await dialog.getByTestId('report-note').textContent()).toContain('Nothing is sent anywhere');
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'copy-report.png') });
    await dialog.locator('[data-key="report-copy"]').click();
    await expect.poll(() => dialog.getByTestId('report-note').textContent()).toContain('Copied.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(draft);
    expect((await calls(page)).filter(([c]) => c === 'report_draft')).toEqual([
      ['report_draft', { root: '/tmp', label: 'swc-<uuid>/' }],
    ]);
    await dialog.locator('[data-key="report-close"]').click();
    expect(await dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('opens a group to its details, ignores its shape and shows it again', async () => {
    const { context, page, errors } = await openApp('light', { snapshot: groupSnapshot() });
    const groups = page.getByTestId('unattributed-group');
    await expect.poll(() => groups.count()).toBe(2);
    await page.locator('[data-key^="group-/tmp"]').first().click();
    const details = page.getByTestId('group-details');
    await details.waitFor();
    const text = await details.textContent();
    expect(text).toContain('24 items · 96.0 KiB allocated · 59.6 KiB apparent · oldest 3 d ago · newest 10 min ago');
    expect(text).toContain('swc-00000001-1a2b-4c3d-8e9f-000000001eef');
    expect(text).toContain('pid in name: swc (22 of 24, 20 orphans) · last seen 2 h ago · /usr/local/bin/swc');
    // Its growth from the history database, charted as a producer's.
    await expect.poll(() => details.getByTestId('chart-2f746d700064737763').count()).toBe(1);
    expect((await calls(page)).filter(([c]) => c === 'group_history')).toEqual([
      ['group_history', { key: '2f746d700064737763', spanSecs: 86400 }],
    ]);
    await page.locator('#unattributed').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'group-details.png') });
    await groups.first().getByTestId('ignore-shape').click();
    await expect.poll(() => groups.count()).toBe(1);
    expect(await page.getByTestId('ignored').locator('summary').textContent()).toBe('Ignored shapes (1)');
    await page.getByTestId('ignored').locator('summary').click();
    expect(await page.getByTestId('ignored-shape').allTextContents()).toEqual(['swc-<uuid>/Show again']);
    await page.getByTestId('unignore-shape').click();
    await expect.poll(() => groups.count()).toBe(2);
    expect(await page.getByTestId('ignored').count()).toBe(0);
    expect((await calls(page)).filter(([c]) => c === 'ignore_shape')).toEqual([
      ['ignore_shape', { label: 'swc-<uuid>/', ignored: true }],
      ['ignore_shape', { label: 'swc-<uuid>/', ignored: false }],
    ]);
    // The engine no longer has the group (gone since the last snapshot): its error, as it says it.
    await page.evaluate(() => {
      const w = window as unknown as { __snapshot: Snapshot };
      w.__snapshot = { ...w.__snapshot, unattributed_groups: [] };
    });
    await groups.first().getByTestId('make-rule').click();
    const dialog = page.locator('#rule-dialog');
    await dialog.getByTestId('rule-error').waitFor();
    expect(await dialog.getByTestId('rule-error').textContent()).toBe('no group "odd\\xff-<uuid>/" in "/tmp" now: look at the list again');
    await page.keyboard.press('Escape');
    expect(await dialog.evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('saves light and dark screenshots', async () => {
    const out = join(UI_DIR, 'screenshots');
    mkdirSync(out, { recursive: true });
    for (const scheme of ['light', 'dark'] as const) {
      const { context, page, errors } = await openApp(scheme);
      await page.locator('[data-key="producer-metal-gpuarchiver"]').click();
      await page.locator('.notes').waitFor();
      await expect.poll(() => page.locator('.spark canvas').count()).toBe(3);
      const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      expect(bg).toBe(scheme === 'light' ? 'rgb(245, 245, 247)' : 'rgb(30, 30, 30)');
      await page.screenshot({ path: join(out, `${scheme}.png`) });
      // The crash loops, then the lower sections (unattributed, alerts, roots), scrolled into view.
      await page.locator('#crashes').evaluate((c) => c.scrollIntoView({ block: 'start' }));
      await page.screenshot({ path: join(out, `${scheme}-crashes.png`) });
      await page.locator('.main').evaluate((m) => m.scrollTo(0, m.scrollHeight));
      await page.screenshot({ path: join(out, `${scheme}-lists.png`) });
      expect(errors).toEqual([]);
      await context.close();
    }
  });

  // Two minutes into a leak the window said "+31.6 GiB/day" and "full in 1 d 20 h".
  it('says growth over the minutes observed and gives no ETA without a steady trend', async () => {
    const snap = fixtureSnapshot();
    snap.disk_full_eta_secs = null;
    snap.disk_full_eta_span_secs = null;
    snap.total_growth = { bytes: 105 * MIB, items: 40, span_secs: 120 };
    const gpu = snap.producers.find((p) => p.id === 'metal-gpuarchiver');
    if (!gpu) throw new Error('fixture lacks metal-gpuarchiver');
    gpu.growth = { bytes: 105 * MIB, items: 40, span_secs: 120 };
    const { context, page, errors } = await openApp('light', { snapshot: snap });
    expect(await page.getByTestId('eta').textContent()).toBe('no steady trend yet');
    expect((await page.locator('.row-facts').allTextContents())[0]).toBe('12,000 items · +105 MiB in the last 2 min');
    expect(await page.locator('body').textContent()).not.toContain('/day');
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'leak-two-minutes.png') });
    expect(errors).toEqual([]);
    await context.close();
  });

  // The confirm dialog gave counts only.
  it('lists in the confirm dialog what goes, largest first with ages, what is kept and why', async () => {
    const { context, page } = await openApp();
    await page.locator('#reclaim').getByText('1 h', { exact: true }).click();
    await expect.poll(() => page.getByTestId('preview-frees').textContent()).toBe('About 2.5 GiB freeable in 3 items');
    await page.locator('[data-key="reclaim"]').click();
    const dialog = page.locator('#reclaim-dialog');
    await dialog.getByTestId('confirm-items').waitFor();
    expect(await dialog.getByTestId('confirm-items').locator('li').allTextContents()).toEqual([
      'gpuarchiver-1 · 1.0 GiB · 4 d 15 h old',
      'gpuarchiver-2 · 1.0 GiB · 2 d 7 h old',
      'gpuarchiver-3 · 512 MiB · 2 h old',
    ]);
    expect(await dialog.getByTestId('confirm-kept').locator('li').allTextContents()).toEqual([
      '1 in use: katago-coreml-222.mlmodelc (pid 77)',
    ]);
    expect(await dialog.getByTestId('confirm-permanent').textContent()).toContain('Deletion is permanent');
    await page.screenshot({ path: join(UI_DIR, 'screenshots', 'confirm-list.png') });
    await dialog.getByText('Cancel').click();
    await context.close();
  });

  // Alerts told a GUI user to run `cachewatch reclaim …`.
  it('offers the reclaim preview in the alert card instead of a command to run', async () => {
    const { context, page } = await openApp();
    const card = page.getByTestId('alert').first();
    expect(await card.locator('p').textContent()).toBe(
      'Metal gpuarchiver grew 1.2 GiB and 4000 items in 1 d. Upstream: https://developer.apple.com/forums/thread/12345',
    );
    await card.getByTestId('alert-reclaim').click();
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').at(-1)).toEqual([
      'estimate_reclaim',
      { producers: ['metal-gpuarchiver'], thresholdSecs: 86400 },
    ]);
    expect(await page.locator('#reclaim .scope strong').textContent()).toBe('Metal gpuarchiver');
    await context.close();
  });

  // "… ago" froze between snapshots.
  it('moves "… ago" on with the clock between snapshots', async () => {
    const { context, page } = await openApp('light', { clock: true });
    const time = page.getByTestId('alert').first().locator('time');
    expect(await time.textContent()).toBe('10 min ago');
    expect(await page.getByTestId('preview-asof').textContent()).toBe('Estimate as of just now');
    await page.clock.runFor(5 * 60_000 + 30_000); // the next 30 s tick after 5 min
    await expect.poll(() => time.textContent()).toBe('15 min ago');
    // the estimate's age moves on with it (no new estimate was asked for)
    expect(await page.getByTestId('preview-asof').textContent()).toBe('Estimate as of 5 min ago');
    expect((await calls(page)).filter(([c]) => c === 'estimate_reclaim')).toHaveLength(1);
    await context.close();
  });

  // "Scanning 0/2" with a full bar next to "No roots watched" and "not filling".
  // The shell destroys the window a while after it closes: a new one takes over what the last
  // one was doing, from `get_ui_state`, at once.
  it('a new window restores the view and a reclaim still running, then shows its result', async () => {
    const { context, page } = await openApp('light', {
      noEstimate: true,
      uiState: {
        view: { scope: 'katago-coreml', expanded: ['katago-coreml'], threshold_secs: 604800, focus: null },
        reclaim: {
          phase: 'executing',
          plan: {
            id: 'plan-old', created_unix_secs: NOW - 30, threshold_secs: 604800, planned_items: 2, planned_bytes: 2 * GIB,
            planned_freeable_bytes: 2 * GIB, producers: [], kept_items: 0, kept: [], largest: [],
          },
        },
      },
    });
    const dialog = page.locator('#reclaim-dialog');
    await expect.poll(() => dialog.locator('h2').textContent()).toBe('Reclaiming…');
    expect(await page.locator('[data-key="threshold-604800"]').isChecked()).toBe(true);
    expect(await page.locator('[data-key="scope-clear"]').count()).toBe(1);
    expect(await page.locator('[data-key="producer-katago-coreml"]').getAttribute('aria-expanded')).toBe('true');
    const report = {
      deleted_items: 2, freed_bytes: 2 * GIB, kept_items: 0, already_gone_items: 0, error_count: 0, deleted: [], kept: [], errors: [],
    };
    await page.evaluate(
      (job) => (window as unknown as { __emit: (e: string, p: unknown) => void }).__emit('reclaim-job', job),
      { phase: 'done', plan: { id: 'plan-old', created_unix_secs: NOW - 30, threshold_secs: 604800, planned_items: 2, planned_bytes: 2 * GIB, planned_freeable_bytes: 2 * GIB, producers: [], kept_items: 0, kept: [], largest: [] }, report },
    );
    await expect.poll(() => dialog.getByTestId('result').textContent()).toBe('Freed 2.0 GiB · 2 deleted · 0 kept · 0 errors');
    await dialog.getByText('Done').click();
    expect((await calls(page)).filter(([c]) => c === 'dismiss_reclaim')).toHaveLength(1);
    // the view it keeps for the next window
    await page.locator('[data-key="threshold-86400"]').check({ force: true });
    await expect
      .poll(async () => (await calls(page)).filter(([c]) => c === 'set_ui_view').at(-1)?.[1])
      .toEqual({ view: { scope: 'katago-coreml', expanded: ['katago-coreml'], threshold_secs: 86400, focus: null } });
    await context.close();
  });

  it('says nothing that contradicts a first scan in progress', async () => {
    const snap = fixtureSnapshot();
    snap.state = 'scanning';
    snap.scan_progress = { roots_done: 0, roots_total: 2, entries_done: 0 };
    snap.roots = [];
    snap.producers = [];
    snap.disk_full_eta_secs = null;
    const { context, page } = await openApp('light', { snapshot: snap, noProducers: true });
    expect(await page.getByTestId('scan-text').textContent()).toBe('Scanning root 1 of 2 · 0 entries so far');
    const body = (await page.locator('body').textContent()) ?? '';
    for (const wrong of ['No roots watched', 'No known producer', 'not filling']) expect(body).not.toContain(wrong);
    expect(body).toContain('Producers appear as the scan finishes each root.');
    await context.close();
  });

  // The preview said "Keeps 1 item" while the row said 61 items: new items ask for it again.
  it('asks for the estimate again when a producer gains items', async () => {
    const { context, page } = await openApp();
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').length).toBe(1);
    const next = fixtureSnapshot();
    next.taken_at_unix_secs = NOW + 5;
    const gpu = next.producers.find((p) => p.id === 'metal-gpuarchiver');
    if (!gpu) throw new Error('fixture lacks gpuarchiver');
    gpu.items += 1;
    await page.evaluate((s) => (window as unknown as { __emit: (e: string, p: unknown) => void }).__emit('snapshot', s), next);
    await expect.poll(async () => (await calls(page)).filter(([c]) => c === 'estimate_reclaim').length).toBe(2);
    await context.close();
  });
});
