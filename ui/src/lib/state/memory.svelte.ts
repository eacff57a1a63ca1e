import { backend, BackendError } from '../backend';
import type { Block, BlockPatch, ContextBreakdown } from '../backend/types';

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

  constructor(agentId: string) {
    this.agentId = agentId;
  }

  async load(): Promise<void> {
    try {
      this.blocks = await backend().call('list_blocks', { agent_id: this.agentId });
      this.error = null;
    } catch (e) {
      this.error = BackendError.from(e).message;
    }
  }

  async loadContext(): Promise<void> {
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
    const i = this.blocks.findIndex((b) => b.label === label || b.id === block.id);
    if (i >= 0) this.blocks[i] = block;
    else this.blocks.push(block);
  }
}
