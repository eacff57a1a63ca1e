import { describe, expect, it } from 'vitest';
import { isEmbeddingModel, splitModels } from './modelKinds';

describe('isEmbeddingModel', () => {
  it('knows the published embedding model names', () => {
    for (const id of ['text-embedding-3-small', 'nomic-embed-text:latest', 'mxbai-embed-large', 'snowflake-arctic-embed', 'bge-m3:latest', 'all-minilm', 'e5-large-v2', 'ollama/nomic-embed-text']) {
      expect(isEmbeddingModel(id), id).toBe(true);
    }
  });

  it('leaves chat models alone', () => {
    for (const id of ['gpt-4o-mini', 'llama3.1:8b', 'qwen2.5', 'claude-3-5-haiku-latest', 'gemma2', 'mistral-nemo']) {
      expect(isEmbeddingModel(id), id).toBe(false);
    }
  });

  it('splits a server list keeping its order', () => {
    const got = splitModels([{ id: 'llama3.1' }, { id: 'nomic-embed-text' }, { id: 'qwen2.5' }]);
    expect(got.chat.map((m) => m.id)).toEqual(['llama3.1', 'qwen2.5']);
    expect(got.embedding.map((m) => m.id)).toEqual(['nomic-embed-text']);
  });
});
