import { backend } from '../backend';

/**
 * Whose window this is: the administrator's (the desktop app, or `engram serve` opened with
 * its own token) or a user's of a shared server (opened with their own token). A user's window
 * shows their agents and those shared with them, and leaves out what only the administrator
 * may see or change (providers, models, tools, settings), so it never asks for it.
 */
export const account = $state<{ user: string | null }>({ user: null });

/** Reads who the window is for from `app_info` (an unreachable engine leaves it as it is). */
export async function loadAccount(): Promise<void> {
  try {
    account.user = (await backend().call('app_info')).user;
  } catch {
    // The agent list reports an engine that does not answer.
  }
}

/** Whether the window has the administrator's rights. */
export function isAdmin(): boolean {
  return account.user === null;
}
