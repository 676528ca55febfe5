// The command names and argument names are the contract with src-tauri: check them as sent.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

beforeAll(() => {
  (globalThis as unknown as { window: unknown }).window = globalThis;
});

describe('ipc', () => {
  afterEach(async () => {
    const { clearMocks } = await import('@tauri-apps/api/mocks');
    clearMocks();
  });

  it('sends the agreed command and argument names', async () => {
    const { mockIPC } = await import('@tauri-apps/api/mocks');
    const ipc = await import('../../src/ipc');
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'plan_reclaim') return { id: 'p1', items: [], kept: [], planned_bytes: 0 };
      return null;
    });
    const plan = await ipc.planReclaim(['katago-coreml'], 86400);
    await ipc.executeReclaim('p1');
    await ipc.setPaused(true);
    await ipc.setThreshold(3600);
    await ipc.rescan();
    await ipc.openEvidence('https://github.com/x/y/issues/1');
    expect(plan.id).toBe('p1');
    expect(calls).toEqual([
      ['plan_reclaim', { producers: ['katago-coreml'], thresholdSecs: 86400 }],
      ['execute_reclaim', { planId: 'p1' }],
      ['set_paused', { paused: true }],
      ['set_threshold', { thresholdSecs: 3600 }],
      ['rescan', {}],
      ['open_evidence', { url: 'https://github.com/x/y/issues/1' }],
    ]);
  });

  it('rethrows a command error as {code, message}', async () => {
    const { mockIPC } = await import('@tauri-apps/api/mocks');
    const ipc = await import('../../src/ipc');
    mockIPC(() => {
      throw { code: 'settings', message: 'config.toml line 3: unknown field "x"' };
    });
    await expect(ipc.getSettings()).rejects.toEqual({
      code: 'settings',
      message: 'config.toml line 3: unknown field "x"',
    });
    mockIPC(() => {
      throw 'a bare string';
    });
    await expect(ipc.rescan()).rejects.toEqual({ code: 'ui', message: 'a bare string' });
  });

  it('delivers snapshot events to the handler', async () => {
    const { mockIPC } = await import('@tauri-apps/api/mocks');
    const { emit } = await import('@tauri-apps/api/event');
    const ipc = await import('../../src/ipc');
    mockIPC(() => null, { shouldMockEvents: true });
    const got: number[] = [];
    await ipc.onSnapshot((s) => got.push(s.total_allocated_bytes));
    await emit('snapshot', { total_allocated_bytes: 12288 });
    expect(got).toEqual([12288]);
  });
});
