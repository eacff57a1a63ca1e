import { agentItem, command, createAgent, ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';

test.beforeAll(async () => {
  await ensureProvider();
});

test('create an agent from the dialog', async ({ page }) => {
  await openApp(page);
  await page.getByTestId('new-agent').click();
  await page.getByTestId('new-agent-name').fill('Dialog Agent');
  await page.getByTestId('new-agent-model').fill('mock/mock-small');
  await page.getByTestId('new-agent-human').fill('Likes tea.');
  await page.getByTestId('new-agent-create').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Dialog Agent' })).toBeVisible();
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('Likes tea.');
  await expect(page.getByTestId('chat-input')).toBeFocused();
});

test('a reply streams in and the human block changes live', async ({ page }) => {
  await createAgent('Bob Test');
  await openApp(page);
  await openAgent(page, 'Bob Test');
  await page.getByTestId('chat-input').fill('my name is Bob');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=user]').last()).toContainText('my name is Bob');
  const reply = page.locator('[data-testid=message][data-role=assistant]').last();
  await expect(reply).toContainText('Nice to meet you, Bob!');
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('Name: Bob');
  // The tool call is shown compactly, with the memory diff inside.
  const call = page.locator('[data-testid=tool-call][data-tool=core_memory_append]').last();
  await expect(call).toHaveAttribute('data-state', 'ok');
  await call.locator('summary').click();
  await expect(call.getByTestId('diff').locator('ins')).toContainText('Name: Bob');
  await expect(page.getByTestId('run-usage').last()).toContainText('2 steps');
  await expect(page.getByTestId('context-total')).toContainText('tokens');
  await page.screenshot({ path: 'test-results/chat.png' });
});

test('edit a block by hand', async ({ page }) => {
  await createAgent('Editor Test');
  await openApp(page);
  await openAgent(page, 'Editor Test');
  const persona = page.getByTestId('block-persona');
  await persona.getByTestId('block-edit').click();
  await persona.getByTestId('block-editor').fill('I am a gardener who loves tulips.');
  await persona.getByTestId('block-save').click();
  await expect(persona.getByTestId('block-value')).toHaveText('I am a gardener who loves tulips.');
  await expect(persona.getByTestId('block-chars')).toContainText('33 /');
  await persona.getByTestId('block-history-toggle').click();
  await expect(persona.getByTestId('block-history-item').first()).toContainText('By you');
  const id = await agentItem(page, 'Editor Test').getAttribute('data-agent-id');
  const blocks = await command<{ label: string; value: string }[]>('list_blocks', { agent_id: id });
  expect(blocks.find((b) => b.label === 'persona')?.value).toBe('I am a gardener who loves tulips.');
  // Undo puts the old value back.
  await persona.getByTestId('block-undo').first().click();
  await expect(persona.getByTestId('block-value')).toHaveText('I am a test companion.');
});

test('archival memory: the agent saves, the panel finds it', async ({ page }) => {
  await createAgent('Archive Test');
  await openApp(page);
  await openAgent(page, 'Archive Test');
  await page.getByTestId('chat-input').fill('remember that the tulips bloom in April');
  await page.getByTestId('send').click();
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('archival memory');
  await page.getByTestId('memory-tab-archival').click();
  await page.getByTestId('archival-search').fill('tulips');
  await page.getByTestId('archival-search-submit').click();
  await expect(page.getByTestId('archival-item').first()).toContainText('tulips bloom in April');

  await page.getByTestId('archival-search').fill('');
  await page.getByRole('button', { name: 'Clear' }).click();
  await page.getByTestId('archival-add').click();
  await page.getByTestId('archival-add-text').fill('Bob keeps bees.');
  await page.getByTestId('archival-add-tags').fill('bees, hobby');
  await page.getByTestId('archival-add-save').click();
  await expect(page.getByTestId('archival-count')).toHaveText('2 passages');
  await expect(page.getByTestId('archival-item').first()).toContainText('hobby');

  await page.getByTestId('memory-tab-recall').click();
  await page.getByTestId('recall-search').fill('tulips');
  await page.getByTestId('recall-search-submit').click();
  await expect(page.getByTestId('recall-item').filter({ hasText: 'remember that the tulips' }).first()).toBeVisible();
});

test('stop a slow reply: the conversation stays and goes on', async ({ page }) => {
  await createAgent('Slow Test');
  await openApp(page);
  await openAgent(page, 'Slow Test');
  await page.getByTestId('chat-input').fill('slow: tell me a story');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.getByTestId('stop')).toBeVisible();
  await page.getByTestId('stop').click();
  await expect(page.getByTestId('send')).toBeVisible({ timeout: 15_000 });
  await expect(page.locator('[data-testid=message][data-role=user]').last()).toContainText('slow: tell me a story');
  await expect(page.getByTestId('run-usage').last()).toContainText('stopped');
  // The chat stays usable after a stop.
  await page.getByTestId('chat-input').fill('my name is Alice');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('Alice');
});

test('switch agents: each keeps its own conversation and memory', async ({ page }) => {
  const a = await createAgent('Switch A');
  await createAgent('Switch B');
  await command('update_block', { agent_id: a, label: 'human', patch: { value: 'Name: Ada' } });
  await openApp(page);
  await openAgent(page, 'Switch A');
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('Name: Ada');
  await page.getByTestId('chat-input').fill('hello there');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]')).not.toHaveCount(0);
  await openAgent(page, 'Switch B');
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('(empty)');
  await expect(page.locator('[data-testid=message]')).toHaveCount(0);
  await openAgent(page, 'Switch A');
  await expect(page.locator('[data-testid=message][data-role=user]')).toContainText('hello there');
});

test('a message with an onerror payload renders inert', async ({ page }) => {
  await createAgent('XSS Test');
  await openApp(page);
  await openAgent(page, 'XSS Test');
  await page.getByTestId('chat-input').fill('<img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script>');
  await page.getByTestId('chat-input').press('Enter');
  // The mock echoes the text back, so it appears in a user bubble and in a markdown reply.
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toBeVisible();
  await page.waitForTimeout(500);
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  expect(await page.locator('[data-testid=messages] [onerror]').count()).toBe(0);
  expect(await page.locator('[data-testid=messages] script').count()).toBe(0);
});

test('delete an agent asks first', async ({ page }) => {
  await createAgent('Doomed');
  await openApp(page);
  const item = agentItem(page, 'Doomed');
  await item.hover();
  await item.getByTestId('agent-delete').click();
  await expect(page.getByTestId('confirm-dialog')).toContainText('Doomed');
  await page.getByTestId('confirm-cancel').click();
  await expect(item).toBeVisible();
  await item.hover();
  await item.getByTestId('agent-delete').click();
  await page.getByTestId('confirm-ok').click();
  await expect(item).toHaveCount(0);
});

test('at 800×600 the memory panel folds behind a toggle', async ({ page }) => {
  await createAgent('Narrow Test');
  await page.setViewportSize({ width: 800, height: 600 });
  await openApp(page);
  await openAgent(page, 'Narrow Test');
  await expect(page.getByTestId('memory-panel')).toBeHidden();
  await expect(page.getByTestId('chat-input')).toBeVisible();
  await page.getByTestId('memory-toggle').click();
  await expect(page.getByTestId('block-human')).toBeVisible();
  await page.screenshot({ path: 'test-results/narrow.png' });
  await page.getByTestId('memory-close').click();
  await expect(page.getByTestId('memory-panel')).toBeHidden();
});

test('keyboard: Ctrl+K searches agents, Ctrl+N opens the new-agent dialog, Ctrl+L focuses the input', async ({ page }) => {
  await createAgent('Keys Test');
  await openApp(page);
  await openAgent(page, 'Keys Test');
  await page.keyboard.press('Control+k');
  await expect(page.getByTestId('agent-search')).toBeFocused();
  await page.keyboard.press('Control+n');
  await expect(page.getByTestId('new-agent-dialog')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('new-agent-dialog')).toBeHidden();
  await page.keyboard.press('Control+l');
  await expect(page.getByTestId('chat-input')).toBeFocused();
  await page.screenshot({ path: 'test-results/wide.png' });
});

test('agent settings, export and import', async ({ page }) => {
  await createAgent('Porter');
  await openApp(page);
  await openAgent(page, 'Porter');
  await page.getByTestId('agent-settings').click();
  await page.getByTestId('agent-settings-name').fill('Porter Two');
  await page.getByTestId('agent-settings-context-window').fill('4096');
  await page.getByTestId('agent-settings-save').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Porter Two' })).toBeVisible();

  const download = page.waitForEvent('download');
  await page.getByTestId('agent-export').click();
  const file = await download;
  expect(file.suggestedFilename()).toBe('Porter_Two.af');
  const path = await file.path();

  const before = await page.getByTestId('agent-item').count();
  await openSettings(page, 'transfer');
  await page.getByTestId('import-file').setInputFiles(path);
  await expect(page.getByTestId('import-report')).toContainText('Imported 1 agent');
  await expect(page.getByTestId('agent-item')).toHaveCount(before + 1);
  // The report opens over the view; closing it opens the imported agent.
  await page.getByTestId('import-report-close').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Porter Two' })).toBeVisible();
});

test('a model without a provider: the error says what to do and links to settings', async ({ page }) => {
  await command('create_agent', {
    new: { name: 'Orphan', description: '', loop_style: 'tool_loop', llm: { model: 'nope/x', context_window: 8192 }, blocks: [], block_ids: [] },
  });
  await openApp(page);
  await openAgent(page, 'Orphan');
  // Said on opening, before any message fails.
  await expect(page.getByTestId('model-banner')).toContainText("No provider named 'nope' is set up");
  await page.getByTestId('chat-input').fill('hello?');
  await page.getByTestId('chat-input').press('Enter');
  const err = page.getByTestId('chat-error');
  await expect(err).toHaveAttribute('data-code', 'provider_not_configured');
  await expect(err).toContainText('No model provider is set up');
  await expect(page.getByTestId('chat-input')).toHaveValue('hello?');
  await expect(err.getByTestId('error-choose-model')).toBeVisible();
  await err.getByTestId('open-providers').click();
  await expect(page.getByRole('heading', { name: 'Model providers' })).toBeVisible();
});

test('follows the OS colour scheme', async ({ page }) => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await openApp(page);
  await openAgent(page, 'Bob Test');
  const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  expect(bg).toBe('rgb(23, 24, 28)');
  await page.screenshot({ path: 'test-results/dark.png' });
  await page.emulateMedia({ colorScheme: 'light' });
  expect(await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe('rgb(255, 255, 255)');
});
