import { afterEach, describe, expect, it } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import McpServersSettings from './McpServersSettings.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { McpServer, Tool } from '../../backend/types';

afterEach(() => setBackend(null));

const files: McpServer = {
  id: 'mcp_server-1',
  name: 'files',
  transport: { type: 'stdio', command: 'mock-mcp', args: ['--root', '/tmp/a b'], env_keys: ['ROOT'] },
  active: true,
  source: 'you',
  created_at: '2026-11-21T10:00:00Z',
  updated_at: '2026-11-21T10:00:00Z',
};

const echo = {
  id: 'tool-5',
  name: 'files__echo',
  description: 'Repeat the given text back.',
} as Tool;

describe('McpServersSettings', () => {
  it('adds a stdio server with one argument per line and env values, then lists its tools', async () => {
    let servers: McpServer[] = [];
    const { calls } = useFakeBackend({
      list_mcp_servers: () => servers,
      add_mcp_server: () => {
        servers = [files];
        return files;
      },
      list_mcp_tools: () => [echo],
    });
    render(McpServersSettings, {});
    await userEvent.type(screen.getByTestId('mcp-name'), 'files');
    await userEvent.type(screen.getByTestId('mcp-command'), 'mock-mcp');
    await userEvent.type(screen.getByTestId('mcp-args'), '--root{Enter}/tmp/a b');
    await userEvent.type(screen.getByTestId('mcp-env'), 'ROOT=/tmp/a=b');
    await userEvent.click(screen.getByTestId('mcp-add'));
    expect(calls).toContainEqual([
      'add_mcp_server',
      {
        server: {
          name: 'files',
          transport: { type: 'stdio', command: 'mock-mcp', args: ['--root', '/tmp/a b'], env: { ROOT: '/tmp/a=b' } },
        },
      },
    ]);
    const item = await screen.findByTestId('mcp-server');
    expect(item).toHaveTextContent('mock-mcp --root /tmp/a b');
    expect(item).toHaveTextContent('Environment: ROOT');
    expect(await within(item).findByTestId('mcp-tools')).toHaveTextContent('files__echo');
  });

  it('shows an imported server as inactive until accepted', async () => {
    let server: McpServer = { ...files, active: false, source: 'claude_desktop_config.json' };
    const { calls } = useFakeBackend({
      list_mcp_servers: () => [server],
      set_mcp_server_active: () => {
        server = { ...server, active: true };
        return server;
      },
    });
    render(McpServersSettings, {});
    const item = await screen.findByTestId('mcp-server');
    expect(within(item).getByTestId('mcp-inactive')).toHaveTextContent('from claude_desktop_config.json');
    expect(within(item).queryByTestId('mcp-test')).toBeNull();
    await userEvent.click(within(item).getByTestId('mcp-accept'));
    expect(calls).toContainEqual(['set_mcp_server_active', { server: 'mcp_server-1', active: true }]);
    expect(await within(item).findByTestId('mcp-test')).toBeVisible();
  });

  it('shows the error of a server that cannot be reached', async () => {
    useFakeBackend({
      list_mcp_servers: () => [files],
      list_mcp_tools: () => {
        throw Object.assign(new Error("MCP server 'files' could not be started"), { code: 'unreachable' });
      },
    });
    render(McpServersSettings, {});
    await userEvent.click(await screen.findByTestId('mcp-test'));
    expect(await screen.findByTestId('mcp-error')).toHaveTextContent("MCP server 'files' could not be started");
  });
});
