import { backend } from '../backend';
import type { Feature } from '../bindings/Feature';

/**
 * Whose window this is: the administrator's (the desktop app, or `engram serve` opened with
 * its own token) or a user's of a shared server (opened with their own token). A user's window
 * shows their agents and those shared with them, and leaves out what only the administrator
 * may see or change (providers, models, tools, settings), so it never asks for it.
 *
 * Also what the engine does not offer where it runs (a shared server has no folders yet, …):
 * the window leaves those parts out rather than showing an error.
 */
export const account = $state<{ user: string | null; unavailable: Feature[] }>({ user: null, unavailable: [] });

/** Reads who the window is for from `app_info` (an unreachable engine leaves it as it is). */
export async function loadAccount(): Promise<void> {
  try {
    const info = await backend().call('app_info');
    account.user = info.user;
    account.unavailable = info.unavailable;
  } catch {
    // The agent list reports an engine that does not answer.
  }
}

/** Whether the window has the administrator's rights. */
export function isAdmin(): boolean {
  return account.user === null;
}

/** Whether the engine offers `feature` here. */
export function offers(feature: Feature): boolean {
  return !account.unavailable.includes(feature);
}
