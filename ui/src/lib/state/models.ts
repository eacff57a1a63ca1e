import { backend } from '../backend';
import { isAdmin } from './account.svelte';

/**
 * Context windows people set per model handle (`provider/model`). The engine keeps them
 * (`set_model_window`), so every window and every reload sees the same ones and new agents on
 * a model get its window; this module holds the copy the forms read synchronously, loaded once
 * with {@link loadModelWindows}.
 */
const windows = new Map<string, number>();
let loading: Promise<void> | null = null;

/** A safe default for models whose window nobody told us. */
export const DEFAULT_CONTEXT_WINDOW = 8192;

/** Reads the stored windows from the engine (once; call again after a failure to retry). */
export function loadModelWindows(): Promise<void> {
  // The stored windows are the administrator's settings; a user's window goes without them.
  if (!isAdmin()) return Promise.resolve();
  loading ??= backend()
    .call('model_windows')
    .then((all) => {
      for (const w of all) windows.set(w.handle, w.context_window);
    })
    .catch(() => {
      loading = null;
    });
  return loading;
}

export function contextWindowFor(handle: string): number | undefined {
  return windows.get(handle);
}

/** Stores a model's window in the engine (and here at once). */
export async function rememberContextWindow(handle: string, tokens: number): Promise<void> {
  if (!handle.includes('/') || !Number.isFinite(tokens) || tokens <= 0) return;
  const context_window = Math.round(tokens);
  windows.set(handle, context_window);
  try {
    await backend().call('set_model_window', { handle, context_window });
  } catch {
    // The window is also on the agent itself; a failed store only loses the prefill.
  }
}

/** All handles with a stored window (for model pickers). */
export function knownModels(): string[] {
  return [...windows.keys()];
}
