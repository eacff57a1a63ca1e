import type { ToolOrigin } from '../../backend/types';

/** Where a tool came from, in words (mirrors `ToolOrigin::describe` in the engine). */
export function describeOrigin(o: ToolOrigin): string {
  switch (o.kind) {
    case 'user':
      return 'you';
    case 'agent_file':
      return `agent file ${o.file} (agent ${o.agent})`;
    default:
      return 'an earlier version of Engram (origin not recorded)';
  }
}
