/**
 * A request to open a message in its conversation (a recall hit clicked in the memory panel);
 * the chat view of that agent takes it and jumps there. A shared cell rather than a prop chain,
 * because the panel and the chat are siblings.
 */
export const jumpRequest = $state<{ current: { agentId: string; messageId: string } | null }>({ current: null });

/** Asks the chat of `agentId` to open `messageId` in context, highlighted. */
export function openInConversation(agentId: string, messageId: string): void {
  jumpRequest.current = { agentId, messageId };
}
