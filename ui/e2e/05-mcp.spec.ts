import { existsSync } from 'node:fs';
import { createAgent, engram, ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';

test.beforeAll(async () => {
  await ensureProvider();
});

test('add an MCP server in Settings, attach its tool, and see the model call it', async ({ page }) => {
  test.skip(!existsSync(engram.mockMcp), `no test MCP server at ${engram.mockMcp}: cargo build -p engram-mcp --bins`);
  await createAgent('Mica');
  await openApp(page);

  // Settings → MCP servers: a stdio server, then its tools.
  await openSettings(page, 'mcp');
  const settings = page.getByTestId('mcp-settings');
  await settings.getByTestId('mcp-name').fill('files');
  await settings.getByTestId('mcp-command').fill(engram.mockMcp);
  await settings.getByTestId('mcp-add').click();
  const server = settings.locator('[data-testid=mcp-server][data-server-name=files]');
  await expect(server).toBeVisible();
  await expect(server.getByTestId('mcp-tools')).toContainText('files__echo');
  await expect(server.getByTestId('mcp-tools')).toContainText('Repeat the given text back.');

  // Tools: the server's tool is listed with its server and attaches like any tool.
  await openAgent(page, 'Mica');
  await page.getByTestId('nav-tools').click();
  const tool = page.locator('[data-testid=tool-item][data-tool-name=files__echo]');
  await expect(tool.getByTestId('tool-kind')).toHaveText('MCP: files');
  await tool.getByTestId('tool-attach').check();
  await expect(tool.getByTestId('tool-attach')).toBeChecked();

  // Chat: the scripted model calls it; the call and the server's answer show.
  await openAgent(page, 'Mica');
  const input = page.getByTestId('chat-input');
  await input.fill('use tool files__echo with {"text": "hello from mcp"}');
  await input.press('Enter');
  await expect(page.locator('[data-testid=tool-call][data-tool=files__echo]')).toBeVisible();
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText(
    'The tool said: echo: hello from mcp',
  );

  // A reload shows the same, from stored data.
  await page.reload();
  await openAgent(page, 'Mica');
  await expect(page.locator('[data-testid=tool-call][data-tool=files__echo]')).toBeVisible();
});
