import { vi } from 'vitest';
import type { ArgsOf, Backend, Command, ResultOf } from '../lib/backend/backend';
import type { Agent, Block, Message, RunEvent } from '../lib/backend/types';
import { setBackend } from '../lib/backend';

type Handlers = { [C in Command]?: (args: ArgsOf<C>) => ResultOf<C> | Promise<ResultOf<C>> };

/** A scripted backend: answers commands from `handlers` and records every call. */
export function useFakeBackend(
  handlers: Handlers,
  send?: (args: { agent_id: string; text: string }, onEvent: (e: RunEvent) => void) => Promise<void>,
  attach?: (args: { agent_id: string }, onEvent: (e: RunEvent) => void) => Promise<boolean>,
  run?: (command: string, args: unknown, onEvent: (e: RunEvent) => void) => Promise<void>,
) {
  const calls: [string, unknown][] = [];
  const b: Backend = {
    call: vi.fn(async (command: Command, args?: unknown) => {
      calls.push([command, args]);
      const h = handlers[command] as ((a: unknown) => unknown) | undefined;
      if (!h) throw Object.assign(new Error(`unexpected ${command}`), { code: 'internal' });
      return h(args);
    }) as Backend['call'],
    sendMessage: vi.fn(send ?? (async () => {})),
    attachRun: vi.fn(attach ?? (async () => false)),
    resolveApproval: vi.fn(async () => {}),
    // Regenerate and edit & resend stream like a sent message; tests script them with `run`.
    run: vi.fn(async (command: string, args: unknown, onEvent: (e: RunEvent) => void) => {
      calls.push([command, args]);
      if (command === 'send_message' && send) return send(args as { agent_id: string; text: string }, onEvent);
      return run?.(command, args, onEvent);
    }) as Backend['run'],
    onNotice: vi.fn(() => () => {}),
    openUrl: vi.fn(async () => {}),
    onCloseRequested: vi.fn(() => () => {}),
    saveExport: vi.fn(async () => null),
    importFromDialog: null,
    pickRerankModelDir: null,
    pickWatchDir: null,
  };
  setBackend(b);
  return { backend: b, calls };
}

export const nextFrame = () => new Promise<void>((r) => requestAnimationFrame(() => r()));

export function agent(over: Partial<Agent> = {}): Agent {
  return {
    id: 'agent-1',
    name: 'Sam',
    description: '',
    system: '',
    llm: { model: 'mock/mock-small', context_window: 8192 },
    embedding: null,
    loop_style: 'tool_loop',
    max_steps: 50,
    tools: [],
    tool_rules: [],
    summary: null,
    created_at: '2026-11-21T10:00:00Z',
    updated_at: '2026-11-21T10:00:00Z',
    ...over,
  };
}

export function block(over: Partial<Block> = {}): Block {
  return {
    id: 'block-1',
    label: 'human',
    value: '',
    limit: 100,
    description: 'What you know about the person.',
    read_only: false,
    version: 1,
    created_at: '2026-11-21T10:00:00Z',
    updated_at: '2026-11-21T10:00:00Z',
    ...over,
  };
}

let seq = 0;
export function message(over: Partial<Message> = {}): Message {
  seq += 1;
  return {
    id: `message-${seq}`,
    agent_id: 'agent-1',
    seq,
    role: 'assistant',
    kind: 'chat',
    content: '',
    reasoning: null,
    tool_calls: [],
    tool_call_id: null,
    tool_name: null,
    run_id: 'run-1',
    step_id: null,
    in_context: true,
    created_at: '2026-11-21T10:00:00Z',
    ...over,
  };
}
