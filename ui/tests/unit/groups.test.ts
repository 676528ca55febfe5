// A group row and its "Make a rule…" dialog say the engine's figures as they are: what the
// rule claims (counted by the engine's check), why it cannot be written, and the writer evidence.
import { describe, expect, it } from 'vitest';
import { blockedText, claimText, evidenceLine, groupKey } from '../../src/views/groups';
import type { EvidenceDto, GroupRulePreview } from '../../src/types';
import { GROUP_RULE_PREVIEW, GROUP_RULE_REFUSED } from '../generated/samples';

function preview(over: Partial<GroupRulePreview>): GroupRulePreview {
  return { ...GROUP_RULE_PREVIEW, ...over };
}

describe('the rule dialog', () => {
  it('says what the rule claims from the engine check, not from the group', () => {
    // 24 members, 98304 bytes = 96.0 KiB (the sample's figures).
    expect(claimText(GROUP_RULE_PREVIEW)).toBe('Claims 24 items of 24 members, 96.0 KiB allocated, in /roots/temp.');
    expect(claimText(preview({ claimed: 23 }))).toBe('Claims 23 items of 24 members, 96.0 KiB allocated, in /roots/temp.');
    expect(blockedText(GROUP_RULE_PREVIEW)).toBeNull();
  });

  it('blocks a rule the engine refused, or one that claims too much or too little', () => {
    expect(blockedText(GROUP_RULE_REFUSED)).toBe(GROUP_RULE_REFUSED.refused);
    expect(blockedText(preview({ wrongly_claimed: ['swc-notes'], missed: ['swc-x'] }))).toBe(
      'Not written: it would also claim swc-notes, which are not in the group; it would miss swc-x. Write a narrower rule by hand.',
    );
  });
});

describe('a group row', () => {
  const e: EvidenceDto = {
    kind: 'pid-in-name', name: 'bun', exe: '/opt/homebrew/bin/bun', app: null, agree: 28, total: 30, orphans: 27,
    alive: false, last_seen_unix_secs: 1_000_000 - 7200,
  };

  it('gives each piece of writer evidence in full', () => {
    expect(evidenceLine(e, 1_000_000)).toBe('pid in name: bun (28 of 30, 27 orphans) · last seen 2 h ago · /opt/homebrew/bin/bun');
    expect(evidenceLine({ ...e, alive: true, orphans: null, exe: null }, 1_000_000)).toBe('pid in name: bun (28 of 30) · running');
    expect(evidenceLine({ ...e, kind: 'held', alive: false, last_seen_unix_secs: null, exe: null, orphans: 0 }, 0)).toBe(
      'held open: bun (28 of 30) · not running',
    );
  });

  it('is keyed by root and label, which tell bytes apart', () => {
    expect(groupKey({ root: '/tmp', label: 'a\\xffb' })).not.toBe(groupKey({ root: '/tmp', label: 'a\\\\xffb' }));
    expect(groupKey({ root: '/tmp', label: 'x' })).not.toBe(groupKey({ root: '/var', label: 'x' }));
  });
});
