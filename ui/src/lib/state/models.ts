/**
 * Context windows people set per model handle (`provider/model`), kept in this browser profile
 * and used to prefill new agents. The engine stores the window on each agent's model settings.
 */
const KEY = 'engram.modelWindows';

/** A safe default for models whose window nobody told us. */
export const DEFAULT_CONTEXT_WINDOW = 8192;

function read(): Record<string, number> {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(KEY) ?? '{}');
    return v && typeof v === 'object' ? (v as Record<string, number>) : {};
  } catch {
    return {};
  }
}

export function contextWindowFor(handle: string): number | undefined {
  return read()[handle];
}

export function rememberContextWindow(handle: string, tokens: number): void {
  if (!Number.isFinite(tokens) || tokens <= 0) return;
  const all = read();
  all[handle] = Math.round(tokens);
  try {
    localStorage.setItem(KEY, JSON.stringify(all));
  } catch {
    // Storage full or disabled: the value is only a convenience.
  }
}

/** All remembered handles (for model pickers). */
export function knownModels(): string[] {
  return Object.keys(read());
}
