import { backend, BackendError } from '../backend';
import { isAdmin } from './account.svelte';
import type { Block, BlockAgent, BlockPatch, ContextBreakdown, NewBlock, SharedBlock } from '../backend/types';

/** How long a block stays highlighted after the agent edited it (ms). */
export const FLASH_MS = 1600;

/** One agent's core memory and context-window meter. */
export class MemoryState {
  readonly agentId: string;
  blocks = $state<Block[]>([]);
  /** Labels edited by the agent a moment ago. */
  flashing = $state<Record<string, boolean>>({});
  context = $state<ContextBreakdown | null>(null);
  error = $state<string | null>(null);
  /** Every block with the agents it is attached to (where blocks are shared; what to attach). */
  shared = $state<SharedBlock[]>([]);
  /** Blocks with a hand edit not saved yet: id → label. Leaving the agent asks first. */
  unsaved = $state<Record<string, string>>({});

  constructor(agentId: string) {
    this.agentId = agentId;
  }

  /** The newest `list_blocks` request: notices come in bursts and answers can cross. */
  #loads = 0;

  async load(): Promise<void> {
    const shared = this.loadShared();
    const seq = ++this.#loads;
    try {
      const blocks = await backend().call('list_blocks', { agent_id: this.agentId });
      // An older answer that arrives last is dropped, and no block goes back to a version older
      // than the one shown (an edit streamed in by a run may be newer than a list read before).
      if (seq === this.#loads) {
        this.blocks = blocks.map((b) => {
          const shown = this.blocks.find((s) => s.id === b.id);
          return shown && shown.version > b.version ? shown : b;
        });
      }
      this.error = null;
    } catch (e) {
      this.error = BackendError.from(e).message;
    }
    await shared;
  }

  /** Where blocks are shared; without it the blocks still show, only unmarked. */
  async loadShared(): Promise<void> {
    // Which agents share a block is the administrator's to see.
    if (!isAdmin()) {
      this.shared = [];
      return;
    }
    try {
      this.shared = await backend().call('shared_blocks');
    } catch {
      this.shared = [];
    }
  }

  /** The other agents a block of this agent is attached to. */
  sharedWith(blockId: string): BlockAgent[] {
    return this.shared.find((s) => s.block.id === blockId)?.agents.filter((a) => a.id !== this.agentId) ?? [];
  }

  /** Blocks of other agents (or of none) that this agent could attach. */
  get attachable(): SharedBlock[] {
    return this.shared.filter((s) => !s.agents.some((a) => a.id === this.agentId));
  }

  /** Labels of blocks with unsaved hand edits. */
  get unsavedLabels(): string[] {
    return Object.values(this.unsaved);
  }

  setUnsaved(block: Block, dirty: boolean): void {
    if (dirty) this.unsaved[block.id] = block.label;
    else delete this.unsaved[block.id];
  }

  /** Adds a new block to this agent; rejects with the engine's error (label taken, limit…). */
  async addBlock(nb: NewBlock): Promise<Block> {
    const b = await backend().call('create_agent_block', { agent_id: this.agentId, new: nb });
    await this.load();
    void this.loadContext();
    return b;
  }

  /** Attaches an existing block (shared memory). */
  async attach(blockId: string): Promise<void> {
    const state = await backend().call('attach_block', { agent_id: this.agentId, block_id: blockId });
    this.blocks = state.blocks;
    await this.load();
    void this.loadContext();
  }

  /** Detaches a block from this agent only; other agents keep it. */
  async detach(blockId: string): Promise<void> {
    const state = await backend().call('detach_block', { agent_id: this.agentId, block_id: blockId });
    this.blocks = state.blocks;
    delete this.unsaved[blockId];
    await this.load();
    void this.loadContext();
  }

  /** Deletes a block for every agent it is attached to. */
  async deleteBlock(blockId: string): Promise<void> {
    await backend().call('delete_block', { block_id: blockId });
    delete this.unsaved[blockId];
    await this.load();
    void this.loadContext();
  }

  /** Bumped on every context re-read, so the compiled-context view follows. */
  contextVersion = $state(0);

  async loadContext(): Promise<void> {
    this.contextVersion++;
    try {
      this.context = await backend().call('context_window', { agent_id: this.agentId });
    } catch {
      this.context = null;
    }
  }

  /** A block changed by the agent: replaces it, flashes it, and returns its old value. */
  applyAgentEdit(block: Block): string | undefined {
    const i = this.blocks.findIndex((b) => b.id === block.id || b.label === block.label);
    const before = i >= 0 ? this.blocks[i]!.value : undefined;
    if (i >= 0) this.blocks[i] = block;
    else this.blocks.push(block);
    this.flashing[block.label] = true;
    setTimeout(() => delete this.flashing[block.label], FLASH_MS);
    return before;
  }

  /** Saves a person's edit; rejects with the engine's error (e.g. over the limit). */
  async save(label: string, patch: BlockPatch): Promise<Block> {
    const saved = await backend().call('update_block', { agent_id: this.agentId, label, patch });
    this.replace(label, saved);
    return saved;
  }

  replace(label: string, block: Block): void {
    const i = this.blocks.findIndex((b) => b.id === block.id || b.label === label);
    if (i >= 0) this.blocks[i] = block;
    else this.blocks.push(block);
  }
}
