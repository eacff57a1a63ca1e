import { tick } from 'svelte';
import { backend, BackendError } from '../backend';
import type { RunCommand, RunCommands } from '../backend/backend';
import type {
  Block,
  Compaction,
  Message,
  MessageWindow,
  PendingApproval,
  RunEvent,
  StopReason,
  ToolCall,
  ToolEdit,
  TurnRollback,
  Usage,
  WindowAt,
} from '../backend/types';
import { mergeCompactions, mergeMessages, trimWindow } from '../chat/rows';
import { onNextFrame } from './frame';

/** How many messages one page of history holds. */
export const PAGE = 40;

/**
 * The most messages kept loaded. Scrolling further drops pages at the far end (they are read
 * again when the reader comes back), so memory follows the screen, not the history.
 */
export const MAX_LOADED = 6 * PAGE;

/** Where the list should scroll after the window was replaced (a jump). */
export type ScrollTarget = { kind: 'top' } | { kind: 'bottom' } | { kind: 'message'; id: string };

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
  /** The context window changed without a run (a new conversation): re-read the meter. */
  contextChanged?: () => void;
}

/** One agent's conversation: stored history, the reply streaming in, and what runs cost. */
export class ChatState {
  readonly agentId: string;
  /** A contiguous run of the stored history (oldest first), plus the pending user message. */
  messages = $state<Message[]>([]);
  /** Compaction dividers inside the loaded run, by `seq`. */
  compactions = $state<Compaction[]>([]);
  hasOlder = $state(true);
  /** Whether newer stored messages exist past the loaded run (after a jump back, or a trim). */
  hasNewer = $state(false);
  loading = $state(false);
  loadingOlder = $state(false);
  loadingNewer = $state(false);
  /** The message a jump opened (a search hit, a date), shown highlighted. */
  anchor = $state<string | null>(null);
  /** Set with a change at the start of `messages`, so the list keeps what is on screen still. */
  shift = $state(false);
  /** Where to scroll after a jump; `jumps` counts them so the view reacts to each. */
  scrollTarget = $state<ScrollTarget>({ kind: 'bottom' });
  jumps = $state(0);
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
  /** The tool call the agent's run waits on for a person's decision (as stored). */
  approval = $state<PendingApproval | null>(null);

  #hooks: ChatHooks;
  #pendingText = '';
  #pendingReasoning = '';
  #flushScheduled = false;
  #pendingUserId: string | null = null;

  constructor(agentId: string, hooks: ChatHooks = {}) {
    this.agentId = agentId;
    this.#hooks = hooks;
  }

  /** Loads the newest page of history, then joins a run already in flight (after a reload). */
  async load(): Promise<void> {
    this.loading = true;
    try {
      this.#replace(await this.#window({ kind: 'latest' }, PAGE));
      this.scrollTarget = { kind: 'bottom' };
      this.jumps++;
      await this.#loadRuns(this.messages);
      this.approval = await backend().call('pending_approval', { agent_id: this.agentId });
    } catch (e) {
      this.error = BackendError.from(e);
    } finally {
      this.loading = false;
    }
    void this.attach();
  }

  /**
   * Follows the agent's run in flight, if any, as if this window had started it: busy state,
   * Stop, and the reply streaming in. Resolves when the run ended (or at once without one).
   */
  async attach(): Promise<void> {
    if (this.running) return;
    let attached = false;
    try {
      attached = await backend().attachRun({ agent_id: this.agentId }, (e) => {
        if (!this.running) {
          this.running = true;
          this.stopping = false;
        }
        this.handle(e);
      });
    } catch (e) {
      this.error = BackendError.from(e);
    } finally {
      if (this.running) this.#settle();
    }
    if (attached) {
      await this.refresh();
      this.#hooks.runDone?.();
    }
  }

  /** Re-reads the newest page and merges it in (another window or transport wrote). */
  async refresh(): Promise<void> {
    // Far back in the history: new messages are not next to what is shown; "jump to latest"
    // reads them.
    if (this.running || this.hasNewer) return;
    try {
      const w = await this.#window({ kind: 'latest' }, PAGE);
      const newest = this.#stored().at(-1);
      const first = w.messages[0];
      if (newest && first && first.seq > newest.seq && w.has_older) {
        // More arrived than one page holds: the newest page replaces what is shown.
        this.#replace(w);
      } else {
        this.#setMessages(mergeMessages(this.messages, w.messages), false);
        this.compactions = mergeCompactions(this.compactions, w.compactions);
      }
      await this.#loadRuns(w.messages);
      this.approval = await backend().call('pending_approval', { agent_id: this.agentId });
    } catch {
      // Keep what is shown; the next notice or run will try again.
    }
  }

  /** Loads the page before the oldest message shown; resolves `false` when there is none. */
  async loadOlder(): Promise<boolean> {
    const oldest = this.#stored()[0];
    if (!this.hasOlder || this.loadingOlder || !oldest) return false;
    this.loadingOlder = true;
    try {
      const w = await this.#window({ kind: 'before', id: oldest.id }, PAGE);
      this.hasOlder = w.has_older;
      this.compactions = mergeCompactions(this.compactions, w.compactions);
      this.#setMessages(mergeMessages(this.messages, w.messages), true);
      await this.#loadRuns(w.messages);
      // Dropping the far end is a change of its own: the list keeps its place from the start.
      await tick();
      this.shift = false;
      const [kept, dropped] = trimWindow(this.messages, MAX_LOADED, 'end');
      if (dropped) {
        this.#setMessages(kept, false);
        this.hasNewer = true;
      }
      return w.messages.length > 0;
    } catch (e) {
      this.error = BackendError.from(e);
      return false;
    } finally {
      this.loadingOlder = false;
    }
  }

  /** Loads the page after the newest message shown (after a jump back); `false` when none. */
  async loadNewer(): Promise<boolean> {
    const newest = this.#stored().at(-1);
    if (!this.hasNewer || this.loadingNewer || !newest) return false;
    this.loadingNewer = true;
    try {
      const w = await this.#window({ kind: 'after', id: newest.id }, PAGE);
      this.hasNewer = w.has_newer;
      this.compactions = mergeCompactions(this.compactions, w.compactions);
      this.#setMessages(mergeMessages(this.messages, w.messages), false);
      await this.#loadRuns(w.messages);
      await tick();
      const [kept, dropped] = trimWindow(this.messages, MAX_LOADED, 'start');
      if (dropped) {
        this.#setMessages(kept, true);
        this.hasOlder = true;
        await tick();
        this.shift = false;
      }
      return w.messages.length > 0;
    } catch (e) {
      this.error = BackendError.from(e);
      return false;
    } finally {
      this.loadingNewer = false;
    }
  }

  /**
   * Opens the conversation at `at` (the start, a message, a date), replacing what is loaded;
   * the message found is highlighted and scrolled to. A message already loaded is scrolled to
   * without reading anything.
   */
  async jumpTo(at: WindowAt): Promise<void> {
    if (at.kind === 'around' && this.messages.some((m) => m.id === at.id)) {
      await this.#highlight(at.id);
      return;
    }
    try {
      const w = await this.#window(at, at.kind === 'around' || at.kind === 'date' ? 2 * PAGE : PAGE);
      this.#replace(w);
      await this.#loadRuns(w.messages);
      if (at.kind === 'start' || !w.anchor) {
        this.scrollTarget = at.kind === 'start' ? { kind: 'top' } : { kind: 'bottom' };
        this.jumps++;
      } else {
        await this.#highlight(w.anchor);
      }
    } catch (e) {
      this.error = BackendError.from(e);
    }
  }

  /** Highlights loaded message `id` and asks the list to scroll to it. */
  async #highlight(id: string): Promise<void> {
    // Cleared first, so the highlight plays again when the same message is found twice.
    this.anchor = null;
    await tick();
    this.anchor = id;
    this.scrollTarget = { kind: 'message', id };
    this.jumps++;
  }

  /**
   * Shows the newest messages again, as when the agent is opened: an agent reopens at its
   * latest message, not where a jump or a long scroll back left it.
   */
  async reopen(): Promise<void> {
    if (this.loading) return;
    await this.jumpToLatest();
  }

  /** Back to the newest messages (reading them again if the loaded run does not reach them). */
  async jumpToLatest(): Promise<void> {
    this.anchor = null;
    if (this.hasNewer) {
      try {
        this.#replace(await this.#window({ kind: 'latest' }, PAGE));
        await this.#loadRuns(this.messages);
      } catch (e) {
        this.error = BackendError.from(e);
        return;
      }
    }
    this.scrollTarget = { kind: 'bottom' };
    this.jumps++;
  }

  /** Sends `text` and streams the reply. Resolves `false` if the run could not start. */
  async send(text: string): Promise<boolean> {
    if (this.running || !text.trim()) return false;
    // The reply goes at the end of the conversation: show the end first.
    if (this.hasNewer) await this.jumpToLatest();
    const pending = pendingUserMessage(this.agentId, text, this.#nextSeq());
    this.#pendingUserId = pending.id;
    this.#setMessages([...this.messages, pending], false);
    this.scrollTarget = { kind: 'bottom' };
    this.jumps++;
    const started = await this.#stream((on) => backend().run('send_message', { agent_id: this.agentId, text }, on));
    if (!started) this.#setMessages(this.messages.filter((m) => m.id !== pending.id), false);
    return started;
  }

  /**
   * Approves or denies the call the run waits on (`reason` is what the model reads on a
   * denial) and streams the run that goes on. Resolves `false` if it could not start.
   */
  async decide(approve: boolean, reason?: string): Promise<boolean> {
    const waiting = this.approval;
    if (this.running || !waiting) return false;
    const decision = { tool_call_id: waiting.tool_call.id, approve, reason: reason?.trim() || undefined };
    this.approval = null;
    const started = await this.#stream((on) =>
      backend().resolveApproval({ agent_id: this.agentId, decision }, on),
    );
    if (!started) this.approval = waiting;
    return started;
  }

  /**
   * Rolls back the last turn (its messages, memory edits and passages) and runs it again;
   * also "retry" after a failed run. Resolves `false` if it could not start (e.g. someone
   * changed one of the turn's blocks since: the error says which).
   */
  async regenerate(): Promise<boolean> {
    const last = this.#lastUserMessage();
    if (this.running || !last) return false;
    return this.#rerun('regenerate', { agent_id: this.agentId }, last.content, last.seq);
  }

  /** Replaces user message `messageId` with `text`, rolling back from there, and runs again. */
  async editAndResend(messageId: string, text: string): Promise<boolean> {
    const m = this.messages.find((x) => x.id === messageId);
    if (this.running || !m || !text.trim()) return false;
    return this.#rerun('edit_and_resend', { agent_id: this.agentId, message_id: messageId, text }, text, m.seq);
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
      this.#setMessages(this.messages.filter((m) => !removed.has(m.id)), false);
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
    } catch (e) {
      this.error = BackendError.from(e);
      return;
    }
    // Shown at once: every message so far is out of the window (the divider goes under them),
    // and the meter and the compiled context are read again.
    this.#setMessages(
      this.messages.map((m) => (m.in_context ? { ...m, in_context: false } : m)),
      false,
    );
    this.scrollTarget = { kind: 'bottom' };
    this.jumps++;
    this.#hooks.contextChanged?.();
    await this.load();
  }

  /** The diffs to show under tool call `callId`: stored ones when read back, else live ones. */
  diffsFor(callId: string): MemoryDiff[] {
    return this.storedDiffs[callId] ?? this.diffs[callId] ?? [];
  }

  /**
   * Runs a turn-replacing `command`, showing `text` as the pending user message at `from` (the
   * `seq` where the rolled-back turn began): once the run started (the rollback is done), what
   * was shown from there goes.
   */
  async #rerun<C extends RunCommand>(command: C, args: RunCommands[C], text: string, from: number): Promise<boolean> {
    if (this.hasNewer) await this.jumpToLatest();
    const pending = pendingUserMessage(this.agentId, text, from);
    this.#pendingUserId = pending.id;
    let cut = false;
    return this.#stream((on) =>
      backend().run(command, args, (e) => {
        if (!cut) {
          cut = true;
          this.#setMessages([...this.messages.filter((m) => m.seq < from), pending], false);
          this.scrollTarget = { kind: 'bottom' };
          this.jumps++;
        }
        on(e);
      }),
    );
  }

  /** Runs one streaming command; resolves whether its run started. */
  async #stream(run: (onEvent: (e: RunEvent) => void) => Promise<void>): Promise<boolean> {
    this.error = null;
    this.running = true;
    this.stopping = false;
    this.live = { runId: null, text: '', reasoning: '', calls: [], step: 0 };
    let started = false;
    try {
      await run((e) => {
        started = true;
        this.handle(e);
      });
    } catch (e) {
      this.#flush();
      this.error = BackendError.from(e);
    } finally {
      this.#settle();
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
          // The event names the tool call that made the edit: no guessing.
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
      case 'approval_requested':
        this.approval = e.approval;
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
      for (const r of records) this.outcomes[r.id] = { usage: r.usage, stopReason: r.stop_reason, runId: r.id, agentId: this.agentId };
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

  /** The run ended: flush what is pending, drop an empty live reply, clear busy state. */
  #settle(): void {
    this.#flush();
    this.running = false;
    this.stopping = false;
    // Keep text that never became a message (a dropped connection) visible; drop the rest.
    if (this.live && !this.live.text && !this.live.reasoning && this.live.calls.length === 0) this.live = null;
  }

  #commit(m: Message): void {
    if (m.role === 'user' && this.#pendingUserId) {
      this.#setMessages(this.messages.filter((x) => x.id !== this.#pendingUserId), false);
      this.#pendingUserId = null;
    }
    if (m.role === 'assistant' && this.live) {
      // The committed message holds what streamed so far in this step.
      this.live.text = '';
      this.live.reasoning = '';
      this.live.calls = [];
    }
    // Far back in the history the new message is not next to what is shown: it is stored,
    // and "jump to latest" shows it.
    if (!this.hasNewer) this.#setMessages(mergeMessages(this.messages, [m]), false);
  }

  /** Replaces `messages`; `atStart` when the change is at the start (older pages, trims). */
  #setMessages(list: Message[], atStart: boolean): void {
    this.shift = atStart;
    this.messages = list;
  }

  /** Replaces the loaded run with `w` (a jump, or the first load). */
  #replace(w: MessageWindow): void {
    const pending = this.messages.filter((m) => m.id.startsWith('pending-'));
    this.#setMessages(w.has_newer ? w.messages : [...w.messages, ...pending], false);
    this.compactions = w.compactions;
    this.hasOlder = w.has_older;
    this.hasNewer = w.has_newer;
    this.anchor = null;
  }

  #stored(): Message[] {
    return this.messages.filter((m) => !m.id.startsWith('pending-'));
  }

  #window(at: WindowAt, limit: number): Promise<MessageWindow> {
    return backend().call('message_window', { agent_id: this.agentId, at, limit });
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
