import { backend, BackendError } from '../backend';
import type { RunCommand, RunCommands } from '../backend/backend';
import type { Block, Message, RunEvent, StopReason, ToolCall, ToolEdit, TurnRollback, Usage } from '../backend/types';
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
  /** Memory edits seen live, by tool call id (until the stored ones are read back). */
  diffs = $state<Record<string, MemoryDiff[]>>({});
  /** Memory edits read from the stored block history, by the tool call that made them. */
  storedDiffs = $state<Record<string, MemoryDiff[]>>({});
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
      await this.#loadRuns(page);
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
      await this.#loadRuns(page);
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
      await this.#loadRuns(page);
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
    return this.#stream('send_message', { agent_id: this.agentId, text }, text, null);
  }

  /**
   * Rolls back the last turn (its messages, memory edits and passages) and runs it again;
   * also "retry" after a failed run. Resolves `false` if it could not start (e.g. someone
   * changed one of the turn's blocks since: the error says which).
   */
  async regenerate(): Promise<boolean> {
    const last = this.#lastUserMessage();
    if (this.running || !last) return false;
    return this.#stream('regenerate', { agent_id: this.agentId }, last.content, last.seq);
  }

  /** Replaces user message `messageId` with `text`, rolling back from there, and runs again. */
  async editAndResend(messageId: string, text: string): Promise<boolean> {
    const m = this.messages.find((x) => x.id === messageId);
    if (this.running || !m || !text.trim()) return false;
    return this.#stream('edit_and_resend', { agent_id: this.agentId, message_id: messageId, text }, text, m.seq);
  }

  /** What regenerating (no id) or editing `messageId` would undo. Rejects with the engine's error. */
  preview(messageId?: string): Promise<TurnRollback> {
    return messageId
      ? backend().call('rollback_preview', { agent_id: this.agentId, message_id: messageId })
      : backend().call('regenerate_preview', { agent_id: this.agentId });
  }

  /** Deletes a message (an assistant message takes its tool results along); memory stays. */
  async deleteMessage(messageId: string): Promise<void> {
    try {
      const removed = new Set(
        await backend().call('delete_message', { agent_id: this.agentId, message_id: messageId }),
      );
      this.messages = this.messages.filter((m) => !removed.has(m.id));
    } catch (e) {
      this.error = BackendError.from(e);
    }
  }

  /**
   * Starts a new conversation: memory stays, the context window restarts, and the old messages
   * stay in recall memory (still listed above, and searchable).
   */
  async newConversation(): Promise<void> {
    if (this.running) return;
    try {
      await backend().call('reset_messages', { agent_id: this.agentId });
      await this.load();
    } catch (e) {
      this.error = BackendError.from(e);
    }
  }

  /** The diffs to show under tool call `callId`: stored ones when read back, else live ones. */
  diffsFor(callId: string): MemoryDiff[] {
    return this.storedDiffs[callId] ?? this.diffs[callId] ?? [];
  }

  /**
   * Runs `command`, showing `text` as the pending user message. `from` (a `seq`) is where a
   * rolled-back turn began: once the run started (the rollback is done), what was shown from
   * there goes.
   */
  async #stream<C extends RunCommand>(
    command: C,
    args: RunCommands[C],
    text: string,
    from: number | null,
  ): Promise<boolean> {
    this.error = null;
    this.running = true;
    this.stopping = false;
    this.live = { runId: null, text: '', reasoning: '', calls: [], step: 0 };
    const pending = pendingUserMessage(this.agentId, text, from ?? this.#nextSeq());
    this.#pendingUserId = pending.id;
    if (from === null) this.messages.push(pending);
    let started = false;
    try {
      await backend().run(command, args, (e) => {
        if (!started && from !== null) {
          this.messages = [...this.messages.filter((m) => m.seq < from), pending];
        }
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
          // The event names the tool call that made the edit (issue #10: no guessing).
          const key = e.tool_call_id ?? live.runId ?? 'run';
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
        this.outcomes[e.run_id] = { usage: e.usage, stopReason: e.stop_reason };
        break;
      case 'error':
        this.error = e.error;
        break;
    }
  }

  /** The last message a person wrote (what regenerate sends again). */
  #lastUserMessage(): Message | undefined {
    return [...this.messages].reverse().find((m) => m.role === 'user' && m.kind === 'chat' && !m.id.startsWith('pending-'));
  }

  /**
   * Reads back what the runs of `page` left behind: how each ended (usage line, "stopped"
   * label) and the memory edit under each tool call, so a reload or agent switch shows the
   * same as the live run did.
   */
  async #loadRuns(page: Message[]): Promise<void> {
    const runIds = [...new Set(page.flatMap((m) => (m.run_id ? [m.run_id] : [])))];
    if (runIds.length === 0) return;
    try {
      const [records, edits] = await Promise.all([
        backend().call('run_records', { agent_id: this.agentId, run_ids: runIds }),
        backend().call('run_edits', { agent_id: this.agentId, run_ids: runIds }),
      ]);
      for (const r of records) this.outcomes[r.id] = { usage: r.usage, stopReason: r.stop_reason };
      const byCall: Record<string, MemoryDiff[]> = {};
      for (const e of edits) {
        const call = callOf(e);
        if (!call) continue;
        (byCall[call] ??= []).push({ label: e.label, before: e.edit.old_value, after: e.edit.new_value });
      }
      for (const [call, diffs] of Object.entries(byCall)) {
        this.storedDiffs[call] = diffs;
        delete this.diffs[call];
      }
    } catch {
      // An older engine without run records: keep what was seen live.
    }
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

/** The tool call that made a stored edit, for edits by an agent's tool. */
function callOf(e: ToolEdit): string | null {
  return e.edit.editor.kind === 'agent' ? e.edit.editor.tool_call_id : null;
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
