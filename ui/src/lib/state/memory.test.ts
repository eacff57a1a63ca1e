import { afterEach, describe, expect, it } from 'vitest';
import { MemoryState } from './memory.svelte';
import { setBackend } from '../backend';
import { block, useFakeBackend } from '../../test/fakeBackend';
import type { Block } from '../backend/types';

afterEach(() => setBackend(null));

describe('MemoryState.load', () => {
  it('keeps the newest blocks when answers cross or an edit streamed in first', async () => {
    // Each answer waits until the test lets it go.
    const answers: ((blocks: Block[]) => void)[] = [];
    useFakeBackend({
      list_blocks: () => new Promise<Block[]>((resolve) => answers.push(resolve)),
      shared_blocks: () => [],
    });
    const memory = new MemoryState('agent-1');
    const older = memory.load();
    const newer = memory.load();
    answers[1]!([block({ value: 'Name: Bob', version: 3 })]);
    await newer;
    answers[0]!([block({ value: '', version: 2 })]);
    await older;
    expect(memory.blocks.map((b) => [b.value, b.version])).toEqual([['Name: Bob', 3]]);

    // A run's edit arrives while a list read before it is on its way.
    const reading = memory.load();
    memory.applyAgentEdit(block({ value: 'Name: Bob\nLikes tea', version: 4 }));
    answers[2]!([block({ value: 'Name: Bob', version: 3 })]);
    await reading;
    expect(memory.blocks.map((b) => [b.value, b.version])).toEqual([['Name: Bob\nLikes tea', 4]]);
  });
});
