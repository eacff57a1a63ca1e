import { backend, BackendError } from '../backend';
import { isAdmin } from './account.svelte';
import type { ClientWriteOutcome, PendingClientWrite } from '../backend/types';

/** How often the list is re-read while shown: the memory server that asked is usually another
 *  process (`engram mcp serve`, launched by an AI tool), whose changes send this window no
 *  notice. */
const POLL_MS = 1500;

/**
 * Memory clients' writes waiting for the user's approval, shared by every view that shows
 * them (the agent's chat, Settings). Views call `watch()` while mounted; the list is read on
 * the first watcher, on `client_writes_changed` notices and every {@link POLL_MS} while watched.
 */
class ClientWrites {
  list = $state<PendingClientWrite[]>([]);
  error = $state<string | null>(null);
  /** The write being decided. */
  busy = $state<string | null>(null);
  /** What the last decision did, for a line under the list. */
  last = $state<{ write: PendingClientWrite; outcome: ClientWriteOutcome } | null>(null);
  #watchers = 0;
  #stop: (() => void) | null = null;

  /** Keeps the list fresh until the returned function is called. */
  watch(): () => void {
    this.#watchers += 1;
    if (this.#watchers === 1) {
      void this.refresh();
      const timer = setInterval(() => {
        if (typeof document === 'undefined' || document.visibilityState !== 'hidden') void this.refresh();
      }, POLL_MS);
      const unlisten = backend().onNotice((n) => {
        if (n.type === 'client_writes_changed') void this.refresh();
      });
      this.#stop = () => {
        clearInterval(timer);
        unlisten();
      };
    }
    return () => {
      this.#watchers -= 1;
      if (this.#watchers === 0) {
        this.#stop?.();
        this.#stop = null;
      }
    };
  }

  async refresh() {
    // Writes waiting from MCP clients are the administrator's to decide.
    if (!isAdmin()) return;
    try {
      this.list = await backend().call('pending_client_writes');
      this.error = null;
    } catch (e) {
      this.error = BackendError.from(e).message;
    }
  }

  /** Approves (the write applies now, to memory as it is now) or denies `write`. */
  async decide(write: PendingClientWrite, approve: boolean, reason?: string) {
    this.busy = write.id;
    try {
      const outcome = await backend().call('decide_client_write', {
        id: write.id,
        approve,
        ...(reason?.trim() ? { reason: reason.trim() } : {}),
      });
      this.last = { write, outcome };
      this.error = null;
    } catch (e) {
      this.error = BackendError.from(e).message;
    } finally {
      this.busy = null;
      await this.refresh();
    }
  }
}

export const clientWrites = new ClientWrites();
