// The unknown producers (groups of unattributed entries sharing a name shape): each row opens to
// its examples, bytes, oldest/newest member and writer evidence, and acts on the group: "Make a
// rule…" (a dialog with the engine's own check of what the rule would claim, then the rule
// written into the config) and "Ignore this shape" (kept in the config; "Ignored shapes" undoes).
import { h } from '../dom';
import { formatAgo, formatBytes, formatCount } from '../format';
import type { EvidenceDto, EvidenceKindDto, GroupRuleAdded, GroupRulePreview, UiError, UnattributedGroupDto } from '../types';

/** How many groups of unattributed entries (unknown producers) the window lists. */
export const GROUPS_SHOWN = 5;

/** What each kind of evidence is called in a group's row. */
export const EVIDENCE_LABEL: Record<EvidenceKindDto, string> = {
  'pid-in-name': 'pid in name',
  'created-at-launch': 'created at launch',
  held: 'held open',
  'in-path': 'in path',
};

/**
 * A group's writer as the window says it: the process holding a member (`written by bun (pid
 * 4242)`), else the strongest evidence (`pid in name: katago (28 of 30)`), or nothing.
 */
export function writerText(group: UnattributedGroupDto): string {
  const w = group.writers[0];
  if (w) return `written by ${w.name || 'a process'} (pid ${w.pid})`;
  const e = group.evidence[0];
  return e ? `${EVIDENCE_LABEL[e.kind]}: ${e.name} (${e.agree} of ${e.total})` : '';
}

/** One piece of writer evidence in full: `pid in name: bun (28 of 30, 27 orphans) · running`. */
export function evidenceLine(e: EvidenceDto, nowUnixSecs: number): string {
  const counts = [`${e.agree} of ${e.total}`];
  if (e.orphans !== null && e.orphans > 0) counts.push(formatCount(e.orphans, 'orphan'));
  const alive = e.alive
    ? 'running'
    : e.last_seen_unix_secs !== null
      ? `last seen ${formatAgo(e.last_seen_unix_secs, nowUnixSecs)}`
      : 'not running';
  const who = e.app ?? e.exe ?? e.name;
  return `${EVIDENCE_LABEL[e.kind]}: ${e.name} (${counts.join(', ')}) · ${alive}${who !== e.name ? ` · ${who}` : ''}`;
}

/** The key of a group: its root and shape label (the engine's key for it over IPC). */
export function groupKey(g: Pick<UnattributedGroupDto, 'root' | 'label'>): string {
  return `${g.root}\u0000${g.label}`;
}

/** What a group row's controls do. */
export interface GroupActions {
  toggle(key: string): void;
  makeRule(group: UnattributedGroupDto): void;
  report(group: UnattributedGroupDto): void;
  ignore(label: string): void;
  unignore(label: string): void;
  /** The chart of a group's growth from the history database (`group_history`), when open. */
  chart?(group: UnattributedGroupDto): HTMLElement;
}

/** The details of an open group row: sizes, oldest/newest, examples, evidence. */
function groupDetails(g: UnattributedGroupDto, id: string, nowUnixSecs: number, chart: HTMLElement | null): HTMLElement {
  const times = [
    g.oldest_mtime === null ? null : `oldest ${formatAgo(g.oldest_mtime, nowUnixSecs)}`,
    g.newest_mtime === null ? null : `newest ${formatAgo(g.newest_mtime, nowUnixSecs)}`,
  ].filter((t) => t !== null);
  const examples = h('ul', { class: 'items', 'aria-label': `Examples of ${g.shape}` });
  for (const name of g.examples) examples.appendChild(h('li', {}, h('span', { class: 'item-name' }, name)));
  const evidence = h('ul', { class: 'items', 'aria-label': `Writer of ${g.shape}` });
  for (const w of g.writers) evidence.appendChild(h('li', {}, `held open by ${w.name || 'a process'} (pid ${w.pid})`));
  for (const e of g.evidence) evidence.appendChild(h('li', {}, evidenceLine(e, nowUnixSecs)));
  return h(
    'div',
    { class: 'row-details', id, 'data-testid': 'group-details' },
    chart,
    g.confirmed_leak ? h('p', { class: 'facts', 'data-testid': 'confirmed-leak' }, 'Confirmed leak: every writer named has exited and its entries remain.') : null,
    h(
      'p',
      { class: 'facts' },
      [
        formatCount(g.items, 'item'),
        `${formatBytes(g.allocated_bytes)} allocated`,
        `${formatBytes(g.apparent_bytes)} apparent`,
        ...times,
      ].join(' · '),
    ),
    h('p', { class: 'facts', title: g.root }, `in ${g.root}`),
    h('h3', {}, 'Examples'),
    examples,
    h('h3', {}, 'Writer'),
    g.writers.length + g.evidence.length > 0 ? evidence : h('p', { class: 'muted' }, 'Nothing names the writer yet.'),
  );
}

/** One group: a row that opens to its details, with its two actions always in reach. */
export function groupRow(g: UnattributedGroupDto, open: boolean, nowUnixSecs: number, actions: GroupActions): HTMLElement {
  const key = groupKey(g);
  const id = `group-details-${encodeURIComponent(key)}`;
  const newest = g.newest_mtime === null ? '' : `newest ${formatAgo(g.newest_mtime, nowUnixSecs)}`;
  const detail = [formatCount(g.items, 'item'), newest, writerText(g)].filter((t) => t).join(' · ');
  const summary = h(
    'div',
    {
      class: 'row-summary',
      role: 'button',
      tabindex: 0,
      'data-key': `group-${key}`,
      'aria-expanded': String(open),
      'aria-controls': id,
      title: g.root,
      onclick: () => actions.toggle(key),
      onkeydown: (event: Event) => {
        const k = (event as KeyboardEvent).key;
        if (k === 'Enter' || k === ' ') {
          event.preventDefault();
          actions.toggle(key);
        }
      },
    },
    h('span', { class: 'chevron', 'aria-hidden': 'true' }, open ? '▾' : '▸'),
    h(
      'span',
      { class: 'row-main' },
      h(
        'span',
        { class: 'row-line' },
        h('span', { class: 'row-name', 'data-testid': 'group-shape' }, g.shape),
        h('span', { class: 'row-bytes', 'data-testid': 'group-bytes' }, formatBytes(g.allocated_bytes)),
      ),
      h('span', { class: 'row-line sub' }, h('span', { class: 'row-facts' }, `${g.root_kind} · ${detail}`)),
    ),
  );
  const buttons = h(
    'div',
    { class: 'group-actions' },
    h(
      'button',
      { type: 'button', class: 'link-button', 'data-key': `make-rule-${key}`, 'data-testid': 'make-rule', onclick: () => actions.makeRule(g) },
      'Make a rule…',
    ),
    h(
      'button',
      { type: 'button', class: 'link-button', 'data-key': `ignore-${key}`, 'data-testid': 'ignore-shape', onclick: () => actions.ignore(g.label) },
      'Ignore this shape',
    ),
    h(
      'button',
      { type: 'button', class: 'link-button', 'data-key': `report-${key}`, 'data-testid': 'copy-report', onclick: () => actions.report(g) },
      'Copy report…',
    ),
  );
  return h(
    'li',
    { class: `row${open ? ' open' : ''}`, 'data-testid': 'unattributed-group' },
    summary,
    buttons,
    open ? groupDetails(g, id, nowUnixSecs, actions.chart?.(g) ?? null) : null,
  );
}

/** The unknown producers' rows (the largest `GROUPS_SHOWN`), and the ignored shapes to undo. */
export function renderGroups(
  groups: readonly UnattributedGroupDto[],
  ignored: readonly string[],
  open: ReadonlySet<string>,
  nowUnixSecs: number,
  actions: GroupActions,
): HTMLElement[] {
  const parts: HTMLElement[] = [];
  if (groups.length > 0) {
    const list = h('ul', { class: 'rows', 'aria-label': 'Unknown producers' });
    for (const g of groups.slice(0, GROUPS_SHOWN)) list.appendChild(groupRow(g, open.has(groupKey(g)), nowUnixSecs, actions));
    parts.push(h('h2', {}, 'Unknown producers'), list);
  }
  if (ignored.length > 0) {
    const list = h('ul', { class: 'plain-list', 'aria-label': 'Ignored shapes', 'data-testid': 'ignored-shapes' });
    for (const label of ignored) {
      list.appendChild(
        h(
          'li',
          { 'data-testid': 'ignored-shape' },
          h('span', { class: 'item-name' }, label),
          h(
            'button',
            { type: 'button', class: 'link-button', 'data-key': `unignore-${label}`, 'data-testid': 'unignore-shape', onclick: () => actions.unignore(label) },
            'Show again',
          ),
        ),
      );
    }
    parts.push(
      h('details', { class: 'ignored', 'data-testid': 'ignored' }, h('summary', {}, `Ignored shapes (${ignored.length})`), list),
    );
  }
  return parts;
}

/** What the rule dialog shows: loading, the preview, writing, the result, or an error. */
export type RuleDialogState =
  | { phase: 'checking'; group: UnattributedGroupDto }
  | { phase: 'preview'; group: UnattributedGroupDto; preview: GroupRulePreview }
  | { phase: 'writing'; group: UnattributedGroupDto; preview: GroupRulePreview }
  | { phase: 'added'; group: UnattributedGroupDto; added: GroupRuleAdded }
  | { phase: 'failed'; group: UnattributedGroupDto; error: UiError };

/** The preview's figures in one sentence, from the engine's check. */
export function claimText(p: GroupRulePreview): string {
  return `Claims ${formatCount(p.claimed, 'item')} of ${formatCount(p.members, 'member')}, ${formatBytes(p.allocated_bytes)} allocated, in ${p.root}.`;
}

/** Why the rule cannot be written as previewed, or `null` when it can. */
export function blockedText(p: GroupRulePreview): string | null {
  if (p.refused !== null) return p.refused;
  const why: string[] = [];
  if (p.wrongly_claimed.length > 0) why.push(`it would also claim ${p.wrongly_claimed.join(', ')}, which are not in the group`);
  if (p.missed.length > 0) why.push(`it would miss ${p.missed.join(', ')}`);
  return why.length === 0 ? null : `Not written: ${why.join('; ')}. Write a narrower rule by hand.`;
}

/** What the rule dialog's buttons do. */
export interface RuleDialogActions {
  close(): void;
  confirm(): void;
}

/** The rule dialog's title, body and element to focus for `state`. */
export function ruleDialogContent(state: RuleDialogState, actions: RuleDialogActions): { title: string; body: HTMLElement[]; focus: HTMLElement } {
  const button = (key: string, label: string, onclick: () => void, cls?: string) =>
    h('button', { type: 'button', class: cls, 'data-key': key, onclick }, label);
  const shape = h('p', { class: 'muted' }, `Shape ${state.group.shape} (${state.group.root_kind})`);
  switch (state.phase) {
    case 'checking': {
      const cancel = button('rule-cancel', 'Cancel', actions.close);
      return {
        title: 'Make a rule',
        body: [shape, h('p', { class: 'muted', 'data-testid': 'rule-checking' }, 'Checking what the rule would claim…'), h('div', { class: 'dialog-buttons' }, cancel)],
        focus: cancel,
      };
    }
    case 'preview':
    case 'writing': {
      const p = state.preview;
      const blocked = blockedText(p);
      const cancel = button('rule-cancel', 'Cancel', actions.close);
      const body: HTMLElement[] = [shape];
      if (p.rule) {
        body.push(
          h('p', { 'data-testid': 'rule-claims' }, claimText(p)),
          h('p', { 'data-testid': 'rule-id' }, `Producer ${p.rule.id}: ${p.rule.name}`),
          h('pre', { class: 'rule-toml', 'data-testid': 'rule-toml' }, p.rule.toml.trim()),
        );
      }
      if (blocked) body.push(h('p', { class: 'error-text', 'data-testid': 'rule-blocked' }, blocked));
      else body.push(h('p', { class: 'muted' }, 'Written into the config file (its comments kept); the group then shows as this producer, reclaimed only when you ask.'));
      if (blocked || !p.rule) {
        body.push(h('div', { class: 'dialog-buttons' }, cancel));
        return { title: 'Make a rule', body, focus: cancel };
      }
      const confirm = h(
        'button',
        { type: 'button', class: 'primary', 'data-key': 'rule-confirm', disabled: state.phase === 'writing', onclick: actions.confirm },
        state.phase === 'writing' ? 'Writing…' : 'Write rule',
      );
      body.push(h('div', { class: 'dialog-buttons' }, cancel, confirm));
      return { title: 'Make a rule', body, focus: confirm };
    }
    case 'added': {
      const done = button('rule-done', 'Done', actions.close, 'primary');
      return {
        title: 'Rule written',
        body: [
          h('p', { 'data-testid': 'rule-added' }, `Added producer ${state.added.id} (${formatCount(state.added.claimed, 'item')}) to ${state.added.config}.`),
          h('div', { class: 'dialog-buttons' }, done),
        ],
        focus: done,
      };
    }
    case 'failed': {
      const close = button('rule-close', 'Close', actions.close, 'primary');
      return {
        title: 'No rule written',
        body: [shape, h('p', { class: 'error-text', role: 'alert', 'data-testid': 'rule-error' }, state.error.message), h('div', { class: 'dialog-buttons' }, close)],
        focus: close,
      };
    }
  }
}

/** The engine calls the rule dialog needs. */
export interface RuleIpc {
  previewGroupRule(root: string, label: string): Promise<GroupRulePreview>;
  addGroupRule(root: string, label: string, ruleId: string, regex: string): Promise<GroupRuleAdded>;
}

/** The "Make a rule…" dialog: the engine's preview, then the rule written on confirm. */
export class RuleDialog {
  private state: RuleDialogState | null = null;

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly ipc: RuleIpc,
    private readonly toError: (e: unknown) => UiError,
  ) {
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault();
      this.close();
    });
  }

  /** Opens the dialog for `group` and asks the engine what its rule would claim. */
  async open(group: UnattributedGroupDto): Promise<void> {
    this.show({ phase: 'checking', group });
    try {
      const preview = await this.ipc.previewGroupRule(group.root, group.label);
      if (this.state?.group === group) this.show({ phase: 'preview', group, preview });
    } catch (e) {
      if (this.state?.group === group) this.show({ phase: 'failed', group, error: this.toError(e) });
    }
  }

  private async confirm(): Promise<void> {
    const s = this.state;
    if (s?.phase !== 'preview' || !s.preview.rule) return;
    const { group, preview } = s;
    const rule = s.preview.rule;
    this.show({ phase: 'writing', group, preview });
    try {
      const added = await this.ipc.addGroupRule(group.root, group.label, rule.id, rule.regex);
      this.show({ phase: 'added', group, added });
    } catch (e) {
      this.show({ phase: 'failed', group, error: this.toError(e) });
    }
  }

  close(): void {
    this.state = null;
    if (this.dialog.open) this.dialog.close();
  }

  private show(state: RuleDialogState): void {
    this.state = state;
    const content = ruleDialogContent(state, { close: () => this.close(), confirm: () => void this.confirm() });
    this.dialog.replaceChildren(h('h2', { id: 'rule-title' }, content.title), ...content.body);
    this.dialog.setAttribute('aria-labelledby', 'rule-title');
    if (!this.dialog.open) this.dialog.showModal();
    content.focus.focus();
  }
}
