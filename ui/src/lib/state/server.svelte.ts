import { backend } from '../backend';
import type { ServerConnection } from '../bindings/ServerConnection';

/**
 * The remote `engram serve` the desktop window works on, if the person connected one
 * (Settings → Server): every command then goes to that server's engine through the shell, so
 * nothing else in the window changes. `null` in a browser tab, which is always its server's.
 */
export const server = $state<{ connection: ServerConnection | null }>({ connection: null });

/** Whether this window runs in the desktop app (only it can connect to a server). */
export function inDesktop(): boolean {
  return '__TAURI_INTERNALS__' in window;
}

/** Reads the link from the shell (an error leaves it as it is). */
export async function loadServer(): Promise<void> {
  if (!inDesktop()) return;
  try {
    server.connection = await backend().call('server_connection');
  } catch {
    // An older shell without the command: no server.
  }
}

/** Everything in the window belongs to the engine it works on: after switching, start over. */
export function reloadWindow(): void {
  location.reload();
}
