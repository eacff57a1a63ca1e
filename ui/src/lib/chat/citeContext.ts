import { getContext, setContext } from 'svelte';
import type { AgentFile } from '../backend/types';
import type { Citation } from './citations';

/** What rendered replies need to turn citations into links: the agent's files (read when
 *  shown) and what a click does. Set by the chat; absent elsewhere (plain text then). */
export interface CiteContext {
  files(): AgentFile[];
  open(citation: Citation): void;
}

const KEY = Symbol('citations');

export function setCiteContext(ctx: CiteContext): void {
  setContext(KEY, ctx);
}

export function getCiteContext(): CiteContext | undefined {
  return getContext<CiteContext | undefined>(KEY);
}
