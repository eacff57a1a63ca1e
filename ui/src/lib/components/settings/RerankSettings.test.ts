import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import RerankSettings from './RerankSettings.svelte';
import { BackendError, setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { RerankerStatus } from '../../backend/types';

afterEach(() => setBackend(null));

const off: RerankerStatus = {
  active: false,
  enabled: true,
  dir: null,
  dir_from_env: false,
  loaded: false,
  late_interaction: true,
  error: null,
};

describe('RerankSettings', () => {
  it('sets a typed folder, shows a refused one as an error and keeps the stored state', async () => {
    let status = off;
    const { calls } = useFakeBackend({
      reranker_status: () => status,
      set_rerank_model_dir: ({ dir }) => {
        if (dir === '/nowhere') throw new BackendError('invalid_input', 'there is no folder /nowhere on this computer');
        status = { ...status, dir, active: dir !== null, late_interaction: dir === null };
        return status;
      },
    });
    render(RerankSettings);
    expect(await screen.findByTestId('rerank-state')).toHaveTextContent('On: late interaction with the built-in model');
    // The browser build has no folder dialog.
    expect(screen.queryByTestId('rerank-folder-pick')).toBeNull();

    await userEvent.type(screen.getByTestId('rerank-folder'), '/nowhere');
    await userEvent.click(screen.getByTestId('rerank-folder-save'));
    expect(await screen.findByTestId('rerank-error')).toHaveTextContent('there is no folder /nowhere');
    expect(screen.getByTestId('rerank-state')).toHaveTextContent('On: late interaction with the built-in model');

    await userEvent.clear(screen.getByTestId('rerank-folder'));
    await userEvent.type(screen.getByTestId('rerank-folder'), '  /models/ce  ');
    await userEvent.click(screen.getByTestId('rerank-folder-save'));
    expect(await screen.findByTestId('rerank-state')).toHaveTextContent('On, loads on the next search');
    expect(screen.queryByTestId('rerank-error')).toBeNull();
    expect(calls).toContainEqual(['set_rerank_model_dir', { dir: '/models/ce' }]);

    await userEvent.click(screen.getByTestId('rerank-folder-clear'));
    expect(calls).toContainEqual(['set_rerank_model_dir', { dir: null }]);
    expect(await screen.findByTestId('rerank-state')).toHaveTextContent('On: late interaction with the built-in model');
  });

  it('shows why a folder failed, switches off, and picks a folder in the desktop dialog', async () => {
    let status: RerankerStatus = {
      ...off,
      active: true,
      late_interaction: false,
      dir: '/models/broken',
      error: 'model.safetensors in /models/broken is damaged',
    };
    const { backend, calls } = useFakeBackend({
      reranker_status: () => status,
      set_rerank_enabled: ({ enabled }) => (status = { ...status, enabled, active: enabled }),
    });
    backend.pickRerankModelDir = vi.fn(async () => (status = { ...status, dir: '/models/good', error: null, loaded: true }));
    render(RerankSettings);
    expect(await screen.findByTestId('rerank-state')).toHaveTextContent(
      'Failed: model.safetensors in /models/broken is damaged',
    );
    expect(screen.getByTestId('rerank-folder')).toHaveValue('/models/broken');

    await userEvent.click(screen.getByTestId('rerank-folder-pick'));
    expect(await screen.findByTestId('rerank-state')).toHaveTextContent('On, loaded');
    expect(screen.getByTestId('rerank-folder')).toHaveValue('/models/good');

    await userEvent.click(screen.getByTestId('rerank-enabled'));
    expect(calls).toContainEqual(['set_rerank_enabled', { enabled: false }]);
    expect(await screen.findByTestId('rerank-state')).toHaveTextContent('Off (folder kept)');
  });

  it('leaves the folder to the environment variable when it is set', async () => {
    useFakeBackend({
      reranker_status: () => ({ ...off, active: true, dir: '/env/ce', dir_from_env: true }),
    });
    render(RerankSettings);
    expect(await screen.findByTestId('rerank-folder')).toBeDisabled();
    expect(screen.getByText(/ENGRAM_RERANK_MODEL_DIR/)).toBeInTheDocument();
    expect(screen.queryByTestId('rerank-folder-clear')).toBeNull();
  });
});
