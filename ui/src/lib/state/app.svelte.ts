import { backend, BackendError } from '../backend';
import type { Agent, ProviderInfo } from '../backend/types';
import type { Route, SettingsSection } from './route';
import { isAdmin, loadAccount } from './account.svelte';
import { loadServer } from './server.svelte';

export type View = 'chat' | 'settings' | 'tools';

const LAST_AGENT_KEY = 'engram.lastAgent';

/** What the whole window shares: the agent list, the selection, the screen, providers. */
export class AppState {
  agents = $state<Agent[]>([]);
  selectedId = $state<string | null>(null);
  view = $state<View>('chat');
  /** The settings section shown (kept while away, so Settings opens where it was left). */
  section = $state<SettingsSection>('providers');
  providers = $state<ProviderInfo[]>([]);
  loaded = $state(false);
  error = $state<string | null>(null);
  /** Bumped when the agent list should take focus (Ctrl/Cmd+K). */
  searchFocus = $state(0);
  /** Bumped when the new-agent dialog should open (Ctrl/Cmd+N). */
  newAgentRequest = $state(0);
  /** Bumped when the chat input should take focus (Ctrl/Cmd+L). */
  inputFocus = $state(0);

  selected = $derived(this.agents.find((a) => a.id === this.selectedId) ?? null);

  /** What is shown, as a route (its address is in the URL). */
  get route(): Route {
    if (this.view === 'settings') return { view: 'settings', section: this.section };
    if (this.view === 'tools') return { view: 'tools' };
    return { view: 'chat', agentId: this.selectedId };
  }

  /** Loads agents and providers, then shows `initial` (the address the window opened at),
   *  else the last agent, else (no agent yet) the guided first run. */
  async init(initial: Route | null = null): Promise<void> {
    await Promise.all([loadAccount(), loadServer()]);
    await Promise.all([this.loadAgents(), isAdmin() ? this.loadProviders() : undefined]);
    this.loaded = true;
    if (initial) this.show(initial);
  }

  /** Shows `route`. An agent that is not there (deleted, or from another Engram) leaves the
   *  selection as it is. */
  show(route: Route): void {
    // Settings and tools are the administrator's: a user's window stays on the chat.
    if (route.view !== 'chat' && !isAdmin()) {
      this.view = 'chat';
    } else if (route.view === 'settings') {
      this.section = route.section;
      this.view = 'settings';
    } else if (route.view === 'tools') {
      this.view = 'tools';
    } else if (route.agentId && this.agents.some((a) => a.id === route.agentId)) {
      this.select(route.agentId);
    } else {
      this.view = 'chat';
    }
  }

  /** The newest `list_agents` request: notices come in bursts and answers can cross. */
  #agentLoads = 0;

  async loadAgents(): Promise<void> {
    const seq = ++this.#agentLoads;
    try {
      const agents = await backend().call('list_agents');
      // An older answer that arrives last would bring back a deleted or renamed agent.
      if (seq !== this.#agentLoads) return;
      this.agents = agents;
      this.error = null;
    } catch (e) {
      this.error = BackendError.from(e).message;
      return;
    }
    if (!this.selectedId || !this.agents.some((a) => a.id === this.selectedId)) {
      const last = safeStorage()?.getItem(LAST_AGENT_KEY);
      const pick = this.agents.find((a) => a.id === last) ?? this.agents[0];
      this.selectedId = pick?.id ?? null;
    }
  }

  async loadProviders(): Promise<void> {
    try {
      this.providers = await backend().call('list_providers');
    } catch (e) {
      this.error = BackendError.from(e).message;
    }
  }

  select(id: string): void {
    this.selectedId = id;
    this.view = 'chat';
    safeStorage()?.setItem(LAST_AGENT_KEY, id);
  }

  /** Puts a changed or new agent into the list. */
  upsert(agent: Agent): void {
    const i = this.agents.findIndex((a) => a.id === agent.id);
    if (i >= 0) this.agents[i] = agent;
    else this.agents.unshift(agent);
  }

  remove(id: string): void {
    this.agents = this.agents.filter((a) => a.id !== id);
    if (this.selectedId === id) this.selectedId = this.agents[0]?.id ?? null;
  }
}

function safeStorage(): Storage | null {
  try {
    return localStorage;
  } catch {
    return null;
  }
}
