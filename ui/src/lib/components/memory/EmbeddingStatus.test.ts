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
});
