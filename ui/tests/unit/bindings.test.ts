// The generated bindings against what the window does with them. `tests/generated/samples.ts` is
// serde's JSON of every DTO, typed with the generated types (so `tsc` checks the shapes); these
// tests check the window's texts and the command list against the same samples.
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/bindings';
import { describeKeepReason } from '../../src/format';
import { confirmSummary, reportText } from '../../src/views/reclaim-dialog';
import { keptLines } from '../../src/views/confirm-list';
import { crashGroupText } from '../../src/views/crashes';
import { rootDetail, rootGone } from '../../src/views/lists';
import { IPC_ERROR, KEEP_REASONS, PREVIEW, RESULT, SNAPSHOT } from '../generated/samples';
import * as ipc from '../../src/ipc';

describe('generated bindings', () => {
  it('give every keep reason the engine sends a text of its own', () => {
    expect(KEEP_REASONS).toContain('holds-mount');
    expect(KEEP_REASONS).toContain('structure');
    const texts = KEEP_REASONS.map(describeKeepReason);
    for (const [i, text] of texts.entries()) expect(text).not.toBe(KEEP_REASONS[i]);
    expect(new Set(texts).size).toBe(texts.length);
  });

  it('render a real preview, result, crash group and root', () => {
    expect(confirmSummary(PREVIEW)).toBe('Deletes 700,000 items older than 1 d, freeing 2.7 GiB.');
    expect(keptLines(PREVIEW.kept).join('\n')).toContain('1 a filesystem is mounted in it');
    expect(reportText(RESULT)).toBe('Freed 4.0 KiB · 1 deleted · 1 kept · 1 already gone · 1 error');
    expect(crashGroupText(SNAPSHOT.crash_groups[0], SNAPSHOT.taken_at_unix_secs).detail).toMatch(/^crash: /);
    expect(SNAPSHOT.roots.map((r) => r.kind)).toContain('code-sign-clones');
    expect(rootDetail(SNAPSHOT.roots[0])).toBe('on / · events · 2 rescans · 1 unreadable path');
    // The engine's word for a root swapped for a link is one the window knows.
    const linked = SNAPSHOT.roots.find((r) => r.state === 'replaced-by-link');
    expect(linked && rootGone(linked)).toBe('Replaced by a link');
    expect(IPC_ERROR.code).toBe('unknown-plan');
  });

  it('have a wrapper in ipc.ts for every command of the one list', () => {
    const wrappers = Object.keys(ipc).filter((k) => !k.startsWith('on') && k !== 'toIpcError');
    const camel = COMMANDS.map((c) => c.replace(/_(\w)/g, (_, l: string) => l.toUpperCase()));
    expect(wrappers.sort()).toEqual([...camel].sort());
  });
});
