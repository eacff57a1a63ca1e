import { backend, BackendError } from '../backend';
import type { Block, Message, RunEvent, StopReason, ToolCall, Usage } from '../backend/types';
import { onNextFrame } from './frame';

/** How many messages one page of history holds. */
export const PAGE = 40;

/** A memory edit seen live: the block before and after. */
export interface MemoryDiff {
  label: string;
  before: string;
  after: string;
}

/** What a running reply has streamed that is not committed as a message yet. */
export interface LiveRun {
  runId: string | null;
  text: string;
  reasoning: string;
  calls: ToolCall[];
  step: number;
}

/** A finished run's outcome, shown under its reply. */
export interface RunOutcome {
  usage: Usage;
  stopReason: StopReason;
  /** The run, so its cost can be read from the stored steps. */
  runId?: string;
  agentId?: string;
}

export interface ChatHooks {
  /** A tool changed a block; returns the block's previous value if it was known. */
  memoryChanged?: (block: Block) => string | undefined;
  /** A run ended (refresh the context meter, …). */
  runDone?: () => void;
}

/** One agent's conversation: stored history, the reply streaming in, and what runs cost. */
export class ChatState {
  readonly agentId: string;
  messages = $state<Message[]>([]);
  hasOlder = $state(true);
  loading = $state(false);
  loadingOlder = $state(false);
  live = $state<LiveRun | null>(null);
  running = $state(false);
  stopping = $state(false);
  error = $state<{ code: string; message: string } | null>(null);
  /** Results of tool calls seen live, by call id (committed ones are also in `messages`). */
  results = $state<Record<string, { status: string; message: string }>>({});
  /** Memory edits seen live, by tool call id. */
  diffs = $state<Record<string, MemoryDiff[]>>({});
  outcomes = $state<Record<string, RunOutcome>>({});

  #hooks: ChatHooks;
  #pendingText = '';
  #pendingReasoning = '';
  #flushScheduled = false;
  #pendingUserId: string | null = null;

  constructor(agentId: string, hooks: ChatHooks = {}) {
    this.agentId = agentId;
    this.#hooks = hooks;
  }

  /** Loads the newest page of history. */
  async load(): Promise<void> {
    this.loading = true;
    try {
      const page = await backend().call('list_messages', { agent_id: this.agentId, limit: PAGE });
      this.messages = page;
      this.hasOlder = page.length >= PAGE;
    } catch (e) {
      this.error = BackendError.from(e);
    } finally {
      this.loading = false;
    }
  }

  /** Re-reads the newest page and merges it in (another window or transport wrote). */
  async refresh(): Promise<void> {
    if (this.running) return;
    try {
      const page = await backend().call('list_messages', { agent_id: this.agentId, limit: PAGE });
      this.#merge(page);
    } catch {
      // Keep what is shown; the next notice or run will try again.
    }
  }

  /** Loads the page before the oldest message shown; resolves `false` when there is none. */
  async loadOlder(): Promise<boolean> {
    if (!this.hasOlder || this.loadingOlder) return false;
    const oldest = this.messages.find((m) => !m.id.startsWith('pending-'));
    if (!oldest) return false;
    this.loadingOlder = true;
    try {
      const page = await backend().call('list_messages', {
        agent_id: this.agentId,
        before: oldest.id,
        limit: PAGE,
      });
      this.hasOlder = page.length >= PAGE;
      this.#merge(page);
      return page.length > 0;
    } catch (e) {
      this.error = BackendError.from(e);
      return false;
    } finally {
      this.loadingOlder = false;
    }
  }

  /** Sends `text` and streams the reply. Resolves `false` if the run could not start. */
  async send(text: string): Promise<boolean> {
    if (this.running || !text.trim()) return false;
    this.error = null;
    this.running = true;
    this.stopping = false;
    this.live = { runId: null, text: '', reasoning: '', calls: [], step: 0 };
    const pending = pendingUserMessage(this.agentId, text, this.#nextSeq());
    this.#pendingUserId = pending.id;
    this.messages.push(pending);
    let started = false;
    try {
      await backend().sendMessage({ agent_id: this.agentId, text }, (e) => {
        started = true;
        this.handle(e);
      });
    } catch (e) {
      this.#flush();
      this.error = BackendError.from(e);
      if (!started) this.messages = this.messages.filter((m) => m.id !== pending.id);
    } finally {
      this.#flush();
      this.running = false;
      this.stopping = false;
      // Keep text that never became a message (a dropped connection) visible; drop the rest.
      if (this.live && !this.live.text && !this.live.reasoning && this.live.calls.length === 0) this.live = null;
      if (started) {
        await this.refresh();
        this.#hooks.runDone?.();
      }
    }
    return started;
  }

  /** Asks the engine to stop this agent's run; what already arrived stays. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.stopping = true;
    try {
      await backend().call('cancel_run', { agent_id: this.agentId });
    } catch (e) {
      this.stopping = false;
      this.error = BackendError.from(e);
    }
  }

  /** Applies one run event. Deltas are batched and land once per animation frame. */
  handle(e: RunEvent): void {
    if (e.type === 'text_delta' || e.type === 'reasoning_delta') {
      if (e.type === 'text_delta') this.#pendingText += e.delta;
      else this.#pendingReasoning += e.delta;
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        onNextFrame(() => this.#flush());
      }
      return;
    }
    // Everything else keeps its place after the text that came before it.
    this.#flush();
    const live = this.#ensureLive();
    switch (e.type) {
      case 'run_started':
        live.runId = e.run_id;
        break;
      case 'step_started':
        live.step = e.index;
        break;
      case 'tool_call':
        live.calls.push(e.call);
        break;
      case 'tool_result':
        this.results[e.tool_call_id] = { status: e.status, message: e.message };
        break;
      case 'memory_changed': {
        const before = this.#hooks.memoryChanged?.(e.block);
        if (before !== undefined && before !== e.block.value) {
          const key = e.tool_call_id ?? this.#callFor(e.block.label) ?? live.runId ?? 'run';
          this.diffs[key] = [...(this.diffs[key] ?? []), { label: e.block.label, before, after: e.block.value }];
        }
        break;
      }
      case 'message':
        // A stored tool result is the final word: an edit the engine refused at commit (the
        // block changed meanwhile) was streamed as OK but is stored as Failed.
        if (e.message.role === 'tool' && e.message.tool_call_id) delete this.results[e.message.tool_call_id];
        this.#commit(e.message);
        break;
      case 'usage':
        break;
      case 'done':
        this.outcomes[e.run_id] = { usage: e.usage, stopReason: e.stop_reason, runId: e.run_id, agentId: this.agentId };
        break;
      case 'error':
        this.error = e.error;
        break;
    }
  }

  /** The live tool call that edited block `label` (memory tools name it in `label`). */
  #callFor(label: string): string | undefined {
    const calls = [...(this.live?.calls ?? []), ...this.messages.flatMap((m) => m.tool_calls)];
    for (let i = calls.length - 1; i >= 0; i--) {
      const c = calls[i]!;
      try {
        const args = JSON.parse(c.arguments) as { label?: unknown };
        if (args.label === label) return c.id;
      } catch {
        // Malformed arguments: not this call.
      }
    }
    return undefined;
  }

  #commit(m: Message): void {
    if (m.role === 'user' && this.#pendingUserId) {
      this.messages = this.messages.filter((x) => x.id !== this.#pendingUserId);
      this.#pendingUserId = null;
    }
    if (m.role === 'assistant' && this.live) {
      // The committed message holds what streamed so far in this step.
      this.live.text = '';
      this.live.reasoning = '';
      this.live.calls = [];
    }
    this.#merge([m]);
  }

  #merge(page: Message[]): void {
    const byId = new Map(this.messages.map((m) => [m.id, m]));
    for (const m of page) byId.set(m.id, m);
    this.messages = [...byId.values()].sort((a, b) => a.seq - b.seq);
  }

  // Returns the reactive proxy (`this.live ??= x` would hand back the plain object).
  #ensureLive(): LiveRun {
    if (!this.live) this.live = { runId: null, text: '', reasoning: '', calls: [], step: 0 };
    return this.live;
  }

  #nextSeq(): number {
    return (this.messages.at(-1)?.seq ?? 0) + 0.5;
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (!this.#pendingText && !this.#pendingReasoning) return;
    const live = this.#ensureLive();
    live.text += this.#pendingText;
    live.reasoning += this.#pendingReasoning;
    this.#pendingText = '';
    this.#pendingReasoning = '';
  }
}

function pendingUserMessage(agentId: string, text: string, seq: number): Message {
  return {
    id: `pending-${crypto.randomUUID()}`,
    agent_id: agentId,
    seq,
    role: 'user',
    kind: 'chat',
    content: text,
    reasoning: null,
    tool_calls: [],
    tool_call_id: null,
    tool_name: null,
    run_id: null,
    step_id: null,
    in_context: true,
    created_at: new Date().toISOString(),
  };
}
