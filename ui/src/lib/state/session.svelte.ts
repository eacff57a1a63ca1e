import type { Notice } from '../backend/types';
import type { AppState } from './app.svelte';
import { ChatState } from './chat.svelte';
import { MemoryState } from './memory.svelte';

/** An open agent: its conversation and memory, kept while the window lives so runs survive switching. */
export interface AgentSession {
  chat: ChatState;
  memory: MemoryState;
  /** Bumped when archival memory changed, so open browsers re-read. */
  archivalVersion: number;
}

/** Keeps one session per agent opened in this window and routes notices to them. */
export class Sessions {
  #byId = new Map<string, AgentSession>();
  #app: AppState;

  constructor(app: AppState) {
    this.#app = app;
  }

  get(agentId: string): AgentSession {
    let s = this.#byId.get(agentId);
    if (s) return s;
    const memory = new MemoryState(agentId);
    const session: AgentSession = $state({
      memory,
      archivalVersion: 0,
      chat: new ChatState(agentId, {
        memoryChanged: (block) => memory.applyAgentEdit(block),
        runDone: () => {
          // A regenerate or edit & resend rolled memory back before the run: re-read it.
          void memory.load();
          void memory.loadContext();
          session.archivalVersion++;
        },
        contextChanged: () => void memory.loadContext(),
      }),
    });
    s = session;
    this.#byId.set(agentId, s);
    void memory.load();
    void memory.loadContext();
    void s.chat.load();
    return s;
  }

  drop(agentId: string): void {
    this.#byId.delete(agentId);
  }

  /** Re-reads whatever a notice says changed (another window, the REST API, the CLI…). */
  onNotice(n: Notice): void {
    switch (n.type) {
      case 'agents_changed':
        void this.#app.loadAgents();
        // Sent also when notices were missed: re-read everything that is open.
        for (const s of this.#byId.values()) this.#refresh(s, true);
        break;
      case 'agent_changed':
        void this.#app.loadAgents();
        break;
      case 'memory_changed': {
        // Attaching, detaching or deleting a block changes where it is shared, which every
        // open agent shows.
        for (const other of this.#byId.values()) if (other.memory.agentId !== n.agent_id) void other.memory.loadShared();
        const s = this.#byId.get(n.agent_id);
        if (s && !s.chat.running) {
          void s.memory.load();
          void s.memory.loadContext();
        }
        break;
      }
      case 'messages_changed':
        void this.#byId.get(n.agent_id)?.chat.refresh();
        break;
      case 'archival_changed': {
        const s = this.#byId.get(n.agent_id);
        if (s) s.archivalVersion++;
        break;
      }
      case 'tools_changed':
        break;
    }
  }

  #refresh(s: AgentSession, all: boolean): void {
    if (s.chat.running) return;
    void s.memory.load();
    void s.memory.loadContext();
    void s.chat.refresh();
    if (all) s.archivalVersion++;
  }
}
