/**
 * Whether a model id names an embedding model (text → vector) rather than a chat model.
 * `GET /models` does not say, so this goes by the names embedding models are published under:
 * OpenAI's `text-embedding-*`, Ollama's `nomic-embed-text`, `mxbai-embed-large`,
 * `snowflake-arctic-embed`, and the BGE / E5 / GTE / MiniLM families.
 */
export function isEmbeddingModel(id: string): boolean {
  const name = id.toLowerCase().split('/').pop() ?? '';
  return /embed/.test(name) || /^(bge|e5|gte|multilingual-e5)[-_:]/.test(name) || /^(all-)?minilm/.test(name);
}

/** Chat models first in the server's order; embedding models apart. */
export function splitModels<T extends { id: string }>(models: T[]): { chat: T[]; embedding: T[] } {
  return {
    chat: models.filter((m) => !isEmbeddingModel(m.id)),
    embedding: models.filter((m) => isEmbeddingModel(m.id)),
  };
}
