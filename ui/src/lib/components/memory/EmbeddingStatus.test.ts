import { afterEach, describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import EmbeddingStatus from './EmbeddingStatus.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { Notice } from '../../backend/types';

afterEach(() => setBackend(null));

describe('EmbeddingStatus', () => {
  it('shows the model download, an outage of this agent only, and backfill progress', async () => {
    let notify: (n: Notice) => void = () => {};
    const { backend } = useFakeBackend({});
    (backend.onNotice as unknown as { mockImplementation: (f: (cb: (n: Notice) => void) => () => void) => void }).mockImplementation(
      (cb) => {
        notify = cb;
        return () => {};
      },
    );
    render(EmbeddingStatus, { agentId: 'agent-1' });

    notify({ type: 'model_download', model: 'local/all-minilm-l6-v2', file: 'model.safetensors', done_bytes: 45_000_000, total_bytes: 90_000_000 });
    expect(await screen.findByTestId('embedding-download')).toHaveTextContent('45.0 / 90.0 MB');
    notify({ type: 'model_download', model: 'local/all-minilm-l6-v2', file: 'model.safetensors', done_bytes: 90_000_000, total_bytes: 90_000_000 });
    await expect.poll(() => screen.queryByTestId('embedding-download')).toBeNull();

    notify({ type: 'embeddings_unavailable', agent_id: 'agent-2', message: 'not mine' });
    notify({ type: 'embeddings_unavailable', agent_id: 'agent-1', message: 'searched by words alone: server down' });
    expect(await screen.findByTestId('embedding-warning')).toHaveTextContent('searched by words alone');
    expect(screen.queryByText('not mine')).toBeNull();

    notify({ type: 'embedding_backfill', agent_id: 'agent-1', done: 64, total: 100 });
    expect(await screen.findByTestId('embedding-backfill')).toHaveTextContent('64 / 100');
    notify({ type: 'embedding_backfill', agent_id: 'agent-1', done: 100, total: 100 });
    await expect.poll(() => screen.queryByTestId('embedding-backfill')).toBeNull();
    expect(screen.queryByTestId('embedding-warning')).toBeNull();
  });

  it('says an offline model in one line, keeps the engine\'s words in Details, and tries again on request', async () => {
    let notify: (n: Notice) => void = () => {};
    const retries: unknown[] = [];
    const { backend } = useFakeBackend({
      retry_embedding_model: (args) => {
        retries.push(args);
        return null;
      },
    });
    (backend.onNotice as unknown as { mockImplementation: (f: (cb: (n: Notice) => void) => () => void) => void }).mockImplementation(
      (cb) => {
        notify = cb;
        return () => {};
      },
    );
    render(EmbeddingStatus, { agentId: 'agent-1' });
    const raw =
      'stored without a vector (searchable by its words; the vector is filled in once the model works): the built-in embedding model local/all-minilm-l6-v2 is not usable: could not download config.json from https://huggingface.co/x/config.json: error sending request';
    notify({ type: 'embeddings_unavailable', agent_id: 'agent-1', message: raw });
    const line = await screen.findByTestId('embedding-warning-text');
    expect(line).toHaveTextContent('Offline: the built-in search model could not be downloaded');
    expect(line.textContent).not.toContain('huggingface');
    expect(screen.getByTestId('embedding-warning')).toHaveTextContent('huggingface.co'); // in Details
    screen.getByTestId('embedding-retry').click();
    await expect.poll(() => retries).toEqual([{ agent_id: 'agent-1' }]);
    await expect.poll(() => screen.queryByTestId('embedding-warning')).toBeNull();
  });

  it('shows a vector index build going on when opened, follows it, and hides it when done', async () => {
    let notify: (n: Notice) => void = () => {};
    const { backend, calls } = useFakeBackend({
      vector_index_builds: () => [
        { agent_id: 'agent-2', done: 10, total: 20, seconds: 1, finished: false },
        { agent_id: 'agent-1', done: 1_500, total: 100_000, seconds: 3, finished: false },
      ],
    });
    (backend.onNotice as unknown as { mockImplementation: (f: (cb: (n: Notice) => void) => () => void) => void }).mockImplementation(
      (cb) => {
        notify = cb;
        return () => {};
      },
    );
    render(EmbeddingStatus, { agentId: 'agent-1', archival: true });

    // Opened mid-build: the engine's state shows at once, this agent's only.
    const shown = await screen.findByTestId('vector-index-build');
    expect(shown).toHaveTextContent('Indexing 1,500 of 100,000 passages — search is exact but slower until this finishes');
    expect(calls.filter(([c]) => c === 'vector_index_builds')).toHaveLength(1);
    expect(shown.querySelector('progress')?.value).toBe(1_500);

    notify({ type: 'vector_index_build', agent_id: 'agent-2', done: 20, total: 20, finished: true });
    notify({ type: 'vector_index_build', agent_id: 'agent-1', done: 52_000, total: 100_000, finished: false });
    await expect.poll(() => screen.getByTestId('vector-index-build').textContent).toContain('52,000 of 100,000');
    expect(screen.getByTestId('vector-index-build').querySelector('progress')?.max).toBe(100_000);

    notify({ type: 'vector_index_build', agent_id: 'agent-1', done: 100_000, total: 100_000, finished: true });
    await expect.poll(() => screen.queryByTestId('vector-index-build')).toBeNull();
  });

  it('leaves the vector index to the archival tab', async () => {
    let notify: (n: Notice) => void = () => {};
    const { backend, calls } = useFakeBackend({
      vector_index_builds: () => [{ agent_id: 'agent-1', done: 1, total: 9, seconds: 0, finished: false }],
    });
    (backend.onNotice as unknown as { mockImplementation: (f: (cb: (n: Notice) => void) => () => void) => void }).mockImplementation(
      (cb) => {
        notify = cb;
        return () => {};
      },
    );
    render(EmbeddingStatus, { agentId: 'agent-1' });
    notify({ type: 'vector_index_build', agent_id: 'agent-1', done: 5, total: 9, finished: false });
    notify({ type: 'embedding_backfill', agent_id: 'agent-1', done: 1, total: 2 });
    expect(await screen.findByTestId('embedding-backfill')).toBeInTheDocument();
    expect(screen.queryByTestId('vector-index-build')).toBeNull();
    expect(calls.filter(([c]) => c === 'vector_index_builds')).toHaveLength(0);
  });
});
