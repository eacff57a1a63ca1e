import { afterEach, describe, expect, it, vi } from 'vitest';
import { clearMocks, mockIPC, mockWindows } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import type { Channel } from '@tauri-apps/api/core';
import { tauriBackend, NOTICE_EVENT } from './tauri';
import { BackendError } from './backend';
import type { RunEvent } from './types';

declare global {
  interface Window {
    __TAURI_INTERNALS__: { runCallback: (id: number, data: unknown) => void };
  }
}

afterEach(() => clearMocks());

const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, step_count: 1 };

describe('tauri backend', () => {
  it('invokes the command with snake_case args and returns its result', async () => {
    const seen: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      seen.push([cmd, args]);
      if (cmd === 'list_passages') return { passages: [], total: 0 };
    });
    const b = tauriBackend();
    const list = { search: 'tulips', tags: [], tag_match: 'any' as const, offset: 20, limit: 10, ascending: false };
    const page = await b.call('list_passages', { agent_id: 'agent-1', list });
    expect(page).toEqual({ passages: [], total: 0 });
    expect(seen).toEqual([['list_passages', { agent_id: 'agent-1', list }]]);
  });

  it('passes an empty object to commands without arguments', async () => {
    const seen: unknown[] = [];
    mockIPC((_cmd, args) => {
      seen.push(args);
      return [];
    });
    await tauriBackend().call('list_agents');
    expect(seen).toEqual([{}]);
  });

  it('rethrows the engine error body as a typed BackendError', async () => {
    mockIPC(() => {
      throw { code: 'not_found', message: 'no agent agent-9' };
    });
    const err = await tauriBackend()
      .call('get_agent', { agent_id: 'agent-9' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect(err).toMatchObject({ code: 'not_found', message: 'no agent agent-9' });
  });

  it('streams run events from the channel and resolves after done', async () => {
    const run: RunEvent[] = [
      { type: 'run_started', run_id: 'run-1', agent_id: 'agent-1' },
      { type: 'text_delta', delta: 'Hel' },
      { type: 'text_delta', delta: 'lo' },
      { type: 'done', run_id: 'run-1', stop_reason: 'end_turn', usage },
    ];
    let args: Record<string, unknown> = {};
    mockIPC((cmd, payload) => {
      expect(cmd).toBe('send_message');
      args = payload as Record<string, unknown>;
      const channel = args.on_event as Channel<RunEvent>;
      // The shell resolves the command first; the last events arrive later, in order.
      setTimeout(() => {
        // Deliberately out of order: the channel reorders by index.
        window.__TAURI_INTERNALS__.runCallback(channel.id, { index: 1, message: run[1] });
        window.__TAURI_INTERNALS__.runCallback(channel.id, { index: 0, message: run[0] });
        window.__TAURI_INTERNALS__.runCallback(channel.id, { index: 2, message: run[2] });
        window.__TAURI_INTERNALS__.runCallback(channel.id, { index: 3, message: run[3] });
      }, 5);
      return null;
    });
    const events: RunEvent[] = [];
    await tauriBackend().sendMessage({ agent_id: 'agent-1', text: 'hi' }, (e) => events.push(e));
    expect(args.agent_id).toBe('agent-1');
    expect(args.text).toBe('hi');
    expect(events).toEqual(run);
  });

  it('attaches to a run in flight, or answers false when none runs', async () => {
    const run: RunEvent[] = [
      { type: 'run_started', run_id: 'run-2', agent_id: 'agent-1' },
      { type: 'done', run_id: 'run-2', stop_reason: 'end_turn', usage },
    ];
    let running = false;
    mockIPC((cmd, payload) => {
      expect(cmd).toBe('attach_run');
      if (!running) return false;
      const channel = (payload as Record<string, unknown>).on_event as Channel<RunEvent>;
      setTimeout(() => run.forEach((message, index) => window.__TAURI_INTERNALS__.runCallback(channel.id, { index, message })), 5);
      return true;
    });
    expect(await tauriBackend().attachRun({ agent_id: 'agent-1' }, () => {})).toBe(false);
    running = true;
    const events: RunEvent[] = [];
    expect(await tauriBackend().attachRun({ agent_id: 'agent-1' }, (e) => events.push(e))).toBe(true);
    expect(events).toEqual(run);
  });

  it('rejects when the run cannot start', async () => {
    mockIPC(() => {
      throw { code: 'provider_not_configured', message: 'no provider for openai/gpt-4o' };
    });
    await expect(
      tauriBackend().sendMessage({ agent_id: 'agent-1', text: 'hi' }, () => {}),
    ).rejects.toMatchObject({ code: 'provider_not_configured' });
  });

  it('delivers notices until unsubscribed', async () => {
    mockIPC(() => null, { shouldMockEvents: true });
    const got = vi.fn();
    const stop = tauriBackend().onNotice(got);
    await new Promise((r) => setTimeout(r, 0));
    await emit(NOTICE_EVENT, { type: 'memory_changed', agent_id: 'agent-1' });
    expect(got).toHaveBeenCalledWith({ type: 'memory_changed', agent_id: 'agent-1' });
    stop();
    await new Promise((r) => setTimeout(r, 0));
    await emit(NOTICE_EVENT, { type: 'tools_changed' });
    expect(got).toHaveBeenCalledTimes(1);
  });

  it('asks before the window closes: stays open on no, closes on yes', async () => {
    mockWindows('main');
    const seen: string[] = [];
    mockIPC((cmd) => void seen.push(cmd), { shouldMockEvents: true });
    let answer = false;
    const asked = vi.fn(async () => answer);
    const stop = tauriBackend().onCloseRequested(asked);
    await new Promise((r) => setTimeout(r, 0));
    await emit('tauri://close-requested');
    await vi.waitFor(() => expect(asked).toHaveBeenCalledTimes(1));
    await new Promise((r) => setTimeout(r, 0));
    expect(seen).not.toContain('plugin:window|destroy');
    answer = true;
    await emit('tauri://close-requested');
    await vi.waitFor(() => expect(seen).toContain('plugin:window|destroy'));
    stop();
  });

  it('opens links through the opener plugin', async () => {
    const seen: [string, unknown][] = [];
    mockIPC((cmd, args) => void seen.push([cmd, args]));
    await tauriBackend().openUrl('https://example.com/');
    expect(seen).toEqual([['plugin:opener|open_url', { url: 'https://example.com/' }]]);
  });

  it('saves an export through the shell, which picks the path in its own dialog', async () => {
    const seen: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      seen.push([cmd, args]);
      if (cmd === 'export_to_file') return (args as { format: string }).format === 'af' ? '/home/me/Sam.af' : null;
      if (cmd === 'import_from_file') return { file_name: 'Sam.af', agents: ['agent-2'] };
    });
    const b = tauriBackend();
    expect(await b.saveExport({ agent_ids: ['agent-1'], format: 'af' })).toEqual({ kind: 'path', where: '/home/me/Sam.af' });
    // A cancelled dialog is not an error.
    expect(await b.saveExport({ format: 'markdown' })).toBeNull();
    expect(seen[0]).toEqual(['export_to_file', { agent_ids: ['agent-1'], format: 'af' }]);
    expect(await b.importFromDialog!()).toMatchObject({ file_name: 'Sam.af' });
  });
});
