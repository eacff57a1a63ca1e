import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ProviderForm from './ProviderForm.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { ProviderInfo } from '../../backend/types';

afterEach(() => setBackend(null));

const openai: ProviderInfo = { name: 'openai', kind: 'open_ai', base_url: null, key_set: true, default_model: 'openai/gpt-4o-mini' };

describe('ProviderForm', () => {
  it('never shows a stored key, only that one is set', () => {
    useFakeBackend({});
    render(ProviderForm, { existing: openai, onsaved: vi.fn() });
    expect(screen.getByTestId('provider-api-key')).toHaveValue('');
    expect(screen.getByTestId('provider-api-key')).toHaveAttribute('type', 'password');
    expect(screen.getByTestId('provider-key-state')).toHaveTextContent('Key set');
  });

  it('sends a new key once and clears the field after saving', async () => {
    const { calls } = useFakeBackend({ set_provider: () => ({ ...openai, key_set: true }) });
    const onsaved = vi.fn();
    render(ProviderForm, { onsaved });
    expect(screen.getByTestId('provider-key-state')).toHaveTextContent('No key');
    await userEvent.type(screen.getByTestId('provider-api-key'), 'sk-secret-123');
    await userEvent.click(screen.getByTestId('provider-save'));
    expect(calls[0]).toEqual(['set_provider', { setup: expect.objectContaining({ name: 'openai', kind: 'open_ai', api_key: 'sk-secret-123' }) }]);
    expect(screen.getByTestId('provider-api-key')).toHaveValue('');
    expect(screen.getByTestId('provider-key-state')).toHaveTextContent('Key set');
    expect(document.body.innerHTML).not.toContain('sk-secret-123');
    expect(onsaved).toHaveBeenCalled();
  });

  it('tests the connection, lists models and prefills their context window', async () => {
    const local: ProviderInfo = { name: 'local', kind: 'open_ai', base_url: 'http://127.0.0.1:8080/v1', key_set: false, default_model: null };
    const { calls } = useFakeBackend({
      set_provider: () => ({ ...local, default_model: 'local/qwen' }),
      chat_models: () => [
        { handle: 'local/llama', context_window: null, stored: false },
        { handle: 'local/qwen', context_window: 32768, stored: false },
      ],
      set_model_window: () => null,
    });
    render(ProviderForm, { existing: local, onsaved: vi.fn() });
    await userEvent.click(screen.getByTestId('provider-test'));
    expect(await screen.findByTestId('provider-status')).toHaveTextContent('2 chat models available');
    await userEvent.selectOptions(screen.getByTestId('provider-model'), 'qwen');
    expect(screen.getByTestId('provider-context-window')).toHaveValue(32768);
    await userEvent.click(screen.getByTestId('provider-save'));
    const setProvider = calls.find(([c]) => c === 'set_provider');
    expect(setProvider).toEqual([
      'set_provider',
      { setup: expect.objectContaining({ name: 'local', base_url: 'http://127.0.0.1:8080/v1', default_model: 'local/qwen' }) },
    ]);
    // No key typed: none sent (the stored one, if any, stays).
    expect((setProvider![1] as { setup: { api_key?: string } }).setup.api_key).toBeUndefined();
    // The model's window is stored in the engine, not in this browser.
    expect(calls.at(-1)).toEqual(['set_model_window', { handle: 'local/qwen', context_window: 32768 }]);
  });

  it('shows a failed connection', async () => {
    useFakeBackend({
      chat_models: () => {
        throw Object.assign(new Error('connection refused'), { code: 'provider_unreachable' });
      },
    });
    render(ProviderForm, { existing: openai, onsaved: vi.fn() });
    await userEvent.click(screen.getByTestId('provider-test'));
    expect(await screen.findByTestId('provider-status')).toHaveTextContent('Connection failed: connection refused');
  });

  it('says why "Test connection" waits for a save', () => {
    useFakeBackend({});
    render(ProviderForm, { onsaved: vi.fn() });
    expect(screen.getByTestId('provider-test')).toBeDisabled();
    expect(screen.getByTestId('provider-test')).toHaveAccessibleDescription('Save first: the test uses the saved settings and key.');
  });
});
