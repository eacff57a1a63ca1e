import type { ToolRule } from '../../backend/types';

/** A tool rule in plain words, for the tool it is about. */
export interface RuleText {
  /** The rule's type as written (`exit_loop`…), or `null`. */
  kind: string | null;
  /** The tool the rule is about (`null` when the rule names none). */
  tool: string | null;
  /** What the rule does, e.g. "ends the turn". */
  text: string;
  /** The rule as written, for a tooltip. */
  raw: string;
}

/**
 * Says what a rule does, the way a person would: "ends the turn", "must run first", "needs
 * your approval". Rules Engram does not know are shown as such, never as raw JSON.
 */
export function describeRule(rule: ToolRule): RuleText {
  const raw = JSON.stringify(rule);
  const r = (rule && typeof rule === 'object' && !Array.isArray(rule) ? rule : {}) as {
    type?: unknown;
    tool_name?: unknown;
    children?: unknown;
    max_count_limit?: unknown;
  };
  const tool = typeof r.tool_name === 'string' ? r.tool_name : null;
  const kind = typeof r.type === 'string' ? r.type : null;
  return { kind, tool, raw, text: wording(r) };
}

function wording(r: { type?: unknown; children?: unknown; max_count_limit?: unknown }): string {
  switch (r.type) {
    case 'exit_loop':
      return 'ends the turn';
    case 'continue_loop':
      return 'the agent keeps going after it';
    case 'run_first':
      return 'must run first';
    case 'requires_approval':
      return 'needs your approval';
    case 'max_count_per_step': {
      const n = typeof r.max_count_limit === 'number' ? r.max_count_limit : null;
      return n === null ? 'runs a limited number of times per message' : n === 1 ? 'runs at most once per message' : `runs at most ${n} times per message`;
    }
    case 'constrain_child_tools': {
      const next = Array.isArray(r.children) ? r.children.filter((c): c is string => typeof c === 'string') : [];
      return next.length ? `only ${list(next)} may follow` : 'no tool may follow';
    }
    default:
      return typeof r.type === 'string' ? `a rule Engram does not know (${r.type})` : 'a rule Engram does not know';
  }
}

/** The rules about `tool`, in plain words. */
export function rulesFor(rules: ToolRule[], tool: string): RuleText[] {
  return rules.map(describeRule).filter((r) => r.tool === tool);
}

/** "a", "a or b", "a, b or c". */
function list(names: string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}
