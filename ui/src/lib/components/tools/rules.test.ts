import { describe, expect, it } from 'vitest';
import { describeRule, rulesFor } from './rules';
import type { ToolRule } from '../../backend/types';

describe('tool rules in plain words', () => {
  it('says what each kind of rule does', () => {
    const said = (r: ToolRule) => describeRule(r).text;
    expect(said({ type: 'exit_loop', tool_name: 'send_message' })).toBe('ends the turn');
    expect(said({ type: 'continue_loop', tool_name: 'search' })).toBe('the agent keeps going after it');
    expect(said({ type: 'run_first', tool_name: 'recall' })).toBe('must run first');
    expect(said({ type: 'requires_approval', tool_name: 'rm' })).toBe('needs your approval');
    expect(said({ type: 'max_count_per_step', tool_name: 'fetch', max_count_limit: 1 })).toBe('runs at most once per message');
    expect(said({ type: 'max_count_per_step', tool_name: 'fetch', max_count_limit: 3 })).toBe('runs at most 3 times per message');
    expect(said({ type: 'constrain_child_tools', tool_name: 'plan', children: ['act'] })).toBe('only act may follow');
    expect(said({ type: 'constrain_child_tools', tool_name: 'plan', children: ['a', 'b', 'c'] })).toBe('only a, b or c may follow');
    expect(said({ type: 'constrain_child_tools', tool_name: 'plan', children: [] })).toBe('no tool may follow');
  });

  it('never shows a rule it does not know as JSON, but keeps the JSON for a tooltip', () => {
    const r = describeRule({ type: 'conditional', tool_name: 'x', child_output_mapping: {} });
    expect(r.text).toBe('a rule Engram does not know (conditional)');
    expect(r.text).not.toContain('{');
    expect(r.raw).toContain('"conditional"');
    expect(describeRule(42).text).toBe('a rule Engram does not know');
  });

  it('picks the rules about one tool', () => {
    const rules: ToolRule[] = [
      { type: 'exit_loop', tool_name: 'send_message' },
      { type: 'run_first', tool_name: 'recall' },
      { type: 'requires_approval', tool_name: 'send_message' },
    ];
    expect(rulesFor(rules, 'send_message').map((r) => [r.kind, r.text])).toEqual([
      ['exit_loop', 'ends the turn'],
      ['requires_approval', 'needs your approval'],
    ]);
  });
});
