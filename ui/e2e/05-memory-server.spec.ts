import { spawn } from 'node:child_process';
import { command, createAgent, engram, ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';

/**
 * Another AI tool writes to an agent's memory through `engram mcp serve` (a real process on
 * stdio, spoken to in JSON-RPC as any MCP client does); Settings shows the client and its
 * write, gives the block to paste, and undoes the write. A client whose writes wait for
 * approval shows its write in the agent's chat until the user approves it.
 */
/** A stdio session with `engram mcp serve` (extra flags in `flags`): each `call` resolves with
 *  the raw JSON-RPC answer line when the server answers, so a write waiting for approval can be
 *  answered in the window meanwhile. */
async function mcpSession(agent: string, client: string, flags: string[] = []) {
  const server = spawn(
    engram.bin,
    ['--home', engram.home, 'mcp', 'serve', '--agent', agent, '--client', client, ...flags],
    {
      env: { ...process.env, ENGRAM_SECRETS: 'memory', ENGRAM_HOME: '' },
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
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
  return {
    call: (args: object) => request(id++, 'tools/call', { name: 'memory', arguments: args }),
    close: async () => {
      server.stdin!.end();
      await new Promise((resolve) => server.on('exit', resolve));
    },
  };
}

async function mcpClientWrites(agent: string, client: string, calls: object[]): Promise<string[]> {
  const session = await mcpSession(agent, client);
  const answers: string[] = [];
  for (const args of calls) answers.push(await session.call(args));
  await session.close();
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

test("a client's write waits for approval in the agent's chat, and applies when approved", async ({ page }) => {
  const agentId = await createAgent('Careful');
  const session = await mcpSession('Careful', 'e2e-careful', ['--approve-writes']);
  const answer = session.call({
    command: 'str_replace',
    path: '/memories/persona.md',
    old_str: 'test companion',
    new_str: 'careful companion',
  });

  await openApp(page);
  await openAgent(page, 'Careful');
  const card = page.locator('[data-testid=client-write-card][data-client=e2e-careful]');
  await expect(card).toBeVisible();
  await expect(card.getByTestId('client-write-client')).toHaveText('e2e-careful');
  await expect(card.getByTestId('client-write-path')).toHaveText('/memories/persona.md');
  await expect(card.getByTestId('client-write-after')).toContainText('careful companion');
  let state = await command<{ blocks: { label: string; value: string }[] }>('get_agent', { agent_id: agentId });
  expect(state.blocks.find((b) => b.label === 'persona')?.value).toBe('I am a test companion.');

  // Still there after a reload: it is stored, not held by the page.
  await page.reload();
  await openAgent(page, 'Careful');
  await expect(card).toBeVisible();
  await card.getByTestId('client-write-approve').click();
  await expect(card).toHaveCount(0);
  expect(await answer).toContain('Edited /memories/persona.md');
  state = await command<{ blocks: { label: string; value: string }[] }>('get_agent', { agent_id: agentId });
  expect(state.blocks.find((b) => b.label === 'persona')?.value).toBe('I am a careful companion.');
  await session.close();

  await openSettings(page, 'memory-server');
  const edit = page.locator('[data-testid=memory-client-edit][data-client=e2e-careful]').first();
  await expect(edit).toContainText('careful companion');
});
