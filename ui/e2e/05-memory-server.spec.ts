import { spawn } from 'node:child_process';
import { command, createAgent, engram, ensureProvider, expect, openApp, openSettings, test } from './fixtures';

/**
 * Another AI tool writes to an agent's memory through `engram mcp serve` (a real process on
 * stdio, spoken to in JSON-RPC as any MCP client does); Settings shows the client and its
 * write, gives the block to paste, and undoes the write.
 */
async function mcpClientWrites(agent: string, client: string, calls: object[]): Promise<string[]> {
  const server = spawn(engram.bin, ['--home', engram.home, 'mcp', 'serve', '--agent', agent, '--client', client], {
    env: { ...process.env, ENGRAM_SECRETS: 'memory', ENGRAM_HOME: '' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const answers: string[] = [];
  let buffered = '';
  const waiting = new Map<number, (line: string) => void>();
  server.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      const id = (JSON.parse(line) as { id?: number }).id;
      if (id !== undefined) waiting.get(id)?.(line);
    }
  });
  const send = (msg: object) => server.stdin!.write(JSON.stringify(msg) + '\n');
  const request = (id: number, method: string, params: object) =>
    new Promise<string>((resolve) => {
      waiting.set(id, resolve);
      send({ jsonrpc: '2.0', id, method, params });
    });
  await request(1, 'initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: client, version: '1.0' },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  let id = 2;
  for (const args of calls) answers.push(await request(id++, 'tools/call', { name: 'memory', arguments: args }));
  server.stdin!.end();
  await new Promise((resolve) => server.on('exit', resolve));
  return answers;
}

test.beforeAll(async () => {
  await ensureProvider();
});

test('Settings shows an MCP client and its last write, and undoes it', async ({ page }) => {
  const agentId = await createAgent('Memo');
  const answers = await mcpClientWrites('Memo', 'e2e-editor', [
    { command: 'str_replace', path: '/memories/persona.md', old_str: 'test companion', new_str: 'careful companion' },
  ]);
  expect(answers[0]).toContain('Edited /memories/persona.md');

  await openApp(page);
  await openSettings(page, 'memory-server');
  const settings = page.getByTestId('memory-server-settings');
  await expect(settings.getByTestId('memory-server-config')).toContainText('"mcpServers"');
  await expect(settings.getByTestId('memory-server-config')).toContainText('--agent');
  const client = settings.locator('[data-testid=memory-client][data-client=e2e-editor]');
  await expect(client.getByTestId('memory-client-last')).toContainText('persona');
  await expect(client.getByTestId('memory-client-seen')).toContainText('over stdio');

  const edit = settings.locator('[data-testid=memory-client-edit][data-client=e2e-editor]').first();
  await expect(edit).toContainText('careful companion');
  await edit.getByTestId('memory-client-undo').click();
  await expect(edit.getByTestId('memory-client-undone')).toBeVisible();
  const state = await command<{ blocks: { label: string; value: string }[] }>('get_agent', { agent_id: agentId });
  expect(state.blocks.find((b) => b.label === 'persona')?.value).toBe('I am a test companion.');
});
