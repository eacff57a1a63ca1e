import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ServerSettings from './ServerSettings.svelte';
import { BackendError, setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { ServerConnection } from '../../bindings/ServerConnection';
import { reloadWindow, server } from '../../state/server.svelte';

vi.mock('../../state/server.svelte', async (original) => ({
  ...(await original<typeof import('../../state/server.svelte')>()),
  reloadWindow: vi.fn(),
}));

const desk: ServerConnection = {
  url: 'https://desk.lan:8283/',
  host: 'desk.lan',
  user: 'ben',
  fingerprint: 'AB:CD',
  version: '0.1.0',
  connected: true,
  error: null,
};

beforeEach(() => {
  // Only the desktop app connects to servers.
  (window as unknown as { __TAURI_INTERNALS__: object }).__TAURI_INTERNALS__ = {};
  server.connection = null;
  vi.mocked(reloadWindow).mockClear();
});

afterEach(() => {
  delete (window as unknown as { __TAURI_INTERNALS__?: object }).__TAURI_INTERNALS__;
  setBackend(null);
});

describe('ServerSettings', () => {
  it('connects with the address, token and fingerprint, shows a refusal, and starts over once connected', async () => {
    let tries = 0;
    const { calls } = useFakeBackend({
      server_connection: () => null,
      connect_server: () => {
        tries += 1;
        if (tries === 1) throw new BackendError('backend_unreachable', 'desk.lan is not answering (certificate fingerprint differs)');
        return desk;
      },
    });
    render(ServerSettings);
    const connect = await screen.findByTestId('server-connect');
    expect(connect).toBeDisabled();
    await userEvent.type(screen.getByTestId('server-url'), ' https://desk.lan:8283 ');
    await userEvent.type(screen.getByTestId('server-token'), 'engram-user-1');
    await userEvent.type(screen.getByTestId('server-fingerprint'), 'AB:CD');
    await userEvent.click(connect);
    expect(await screen.findByTestId('server-error')).toHaveTextContent('fingerprint differs');
    expect(reloadWindow).not.toHaveBeenCalled();
    expect(screen.getByTestId('server-url')).toHaveValue(' https://desk.lan:8283 ');

    await userEvent.click(screen.getByTestId('server-connect'));
    expect(calls).toContainEqual([
      'connect_server',
      { url: 'https://desk.lan:8283', token: 'engram-user-1', fingerprint: 'AB:CD' },
    ]);
    expect(await screen.findByTestId('server-state')).toHaveTextContent('Working on desk.lan as ben (Engram 0.1.0).');
    expect(reloadWindow).toHaveBeenCalledTimes(1);
  });

  it('shows a server that could not be reached, and goes back to this computer', async () => {
    let link: ServerConnection | null = { ...desk, connected: false, user: null, version: null, error: 'connection refused' };
    const { calls } = useFakeBackend({
      server_connection: () => link,
      disconnect_server: () => (link = null),
    });
    render(ServerSettings);
    expect(await screen.findByTestId('server-state')).toHaveTextContent('desk.lan could not be reached: connection refused');
    await userEvent.click(screen.getByTestId('server-disconnect'));
    expect(calls).toContainEqual(['disconnect_server', {}]);
    expect(await screen.findByTestId('server-form')).toBeInTheDocument();
    expect(reloadWindow).toHaveBeenCalledTimes(1);
  });
});
