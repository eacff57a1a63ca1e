import { agentItem, command, createAgent, engram, ensureProvider, expect, openAgent, openApp, test } from './fixtures';
import type { Page } from '@playwright/test';

// Block management in the window, the unsaved-edit prompt, undo of an older edit,
// the compiled context and the model picker — all against the real `engram serve` and the
// scripted model.

test.beforeAll(async () => {
  await ensureProvider();
});

type StoredBlock = { id: string; label: string; value: string; limit: number; read_only: boolean };

async function blocksOf(page: Page, name: string): Promise<StoredBlock[]> {
  const id = await agentItem(page, name).getAttribute('data-agent-id');
  return command<StoredBlock[]>('list_blocks', { agent_id: id });
}

/** What the scripted model was sent, chat requests only, oldest first. */
async function chatRequests(): Promise<{ model: string; temperature?: number; messages: { role: string; content: string | null }[] }[]> {
  const root = engram.mockBase.replace(/\/v1$/, '');
  const all = (await (await fetch(`${root}/_mock/requests`)).json()) as { path: string; body: never }[];
  return all.filter((r) => r.path.endsWith('/chat/completions')).map((r) => r.body);
}

async function send(page: Page, text: string, reply: string) {
  await page.getByTestId('chat-input').fill(text);
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText(reply);
}

test('blocks are added, renamed, limited, locked, shared with a second agent and removed', async ({ page }) => {
  await createAgent('Blocks A');
  await createAgent('Blocks B');
  await openApp(page);
  await openAgent(page, 'Blocks A');

  // Add.
  await page.getByTestId('block-add').click();
  await page.getByTestId('block-add-label').fill('projects');
  await page.getByTestId('block-add-value').fill('Garden');
  await page.getByTestId('block-add-limit').fill('200');
  await page.getByTestId('block-add-save').click();
  const projects = page.getByTestId('block-projects');
  await expect(projects.getByTestId('block-value')).toHaveText('Garden');
  await expect(projects.getByTestId('block-chars')).toHaveText('6 / 200 chars');

  // Rename, change the limit, make it read-only: one save, by version.
  await projects.getByTestId('block-settings-toggle').click();
  await projects.getByTestId('block-settings-label').fill('hobbies');
  await projects.getByTestId('block-settings-limit').fill('300');
  await projects.getByTestId('block-settings-read-only').check();
  await projects.getByTestId('block-settings-save').click();
  const hobbies = page.getByTestId('block-hobbies');
  await expect(hobbies.getByTestId('block-read-only')).toBeVisible();
  await expect(hobbies.getByTestId('block-chars')).toHaveText('6 / 300 chars');
  await expect(page.getByTestId('block-projects')).toHaveCount(0);
  const stored = (await blocksOf(page, 'Blocks A')).find((b) => b.label === 'hobbies')!;
  expect([stored.value, stored.limit, stored.read_only]).toEqual(['Garden', 300, true]);

  // Attach it to the second agent: one block, shown as shared on both sides.
  await openAgent(page, 'Blocks B');
  await page.getByTestId('block-attach').click();
  await page.getByTestId('block-attach-select').selectOption({ label: 'hobbies — with Blocks A' });
  await page.getByTestId('block-attach-save').click();
  await expect(page.getByTestId('block-hobbies').getByTestId('block-shared')).toHaveText('shared with Blocks A');
  expect((await blocksOf(page, 'Blocks B')).find((b) => b.label === 'hobbies')?.id).toBe(stored.id);
  await openAgent(page, 'Blocks A');
  await expect(page.getByTestId('block-hobbies').getByTestId('block-shared')).toHaveText('shared with Blocks B');
  // README screenshot: a shared, read-only block with its settings open.
  await page.getByTestId('block-hobbies').getByTestId('block-settings-toggle').click();
  await page.screenshot({ path: 'test-results/blocks.png' });
  await page.getByTestId('block-hobbies').getByTestId('block-settings-toggle').click();

  // Remove from B only (detach), then delete it from A.
  await openAgent(page, 'Blocks B');
  await page.getByTestId('block-hobbies').getByTestId('block-remove').click();
  await expect(page.getByTestId('remove-block-dialog')).toContainText('shared with Blocks A');
  await page.getByTestId('remove-block-detach').click();
  await expect(page.getByTestId('block-hobbies')).toHaveCount(0);
  expect((await blocksOf(page, 'Blocks A')).some((b) => b.label === 'hobbies')).toBe(true);

  await openAgent(page, 'Blocks A');
  await page.getByTestId('block-hobbies').getByTestId('block-remove').click();
  await expect(page.getByTestId('remove-block-detach')).toHaveCount(0);
  await page.getByTestId('remove-block-delete').click();
  await expect(page.getByTestId('block-hobbies')).toHaveCount(0);
  const everywhere = await command<{ block: { id: string } }[]>('shared_blocks');
  expect(everywhere.some((s) => s.block.id === stored.id)).toBe(false);
});

test('an unsaved block edit asks before switching agents', async ({ page }) => {
  await createAgent('Draft A');
  await createAgent('Draft B');
  await openApp(page);
  await openAgent(page, 'Draft A');
  const human = page.getByTestId('block-human');
  await human.getByTestId('block-edit').click();
  await human.getByTestId('block-editor').fill('Prefers mornings');

  await agentItem(page, 'Draft B').getByTestId('agent-open').click();
  const dialog = page.getByTestId('confirm-dialog');
  await expect(dialog).toContainText('Your edit of human is not saved');
  await dialog.getByTestId('confirm-cancel').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Draft A' })).toBeVisible();
  await expect(human.getByTestId('block-editor')).toHaveValue('Prefers mornings');

  // Agreeing to leave throws the draft away; the block stays as stored.
  await agentItem(page, 'Draft B').getByTestId('agent-open').click();
  await page.getByTestId('confirm-ok').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Draft B' })).toBeVisible();
  expect((await blocksOf(page, 'Draft A')).find((b) => b.label === 'human')?.value).toBe('');

  // Closing the page with a draft open asks too (the browser's own leave-page prompt).
  await page.getByTestId('block-human').getByTestId('block-edit').click();
  await page.getByTestId('block-human').getByTestId('block-editor').fill('Night owl');
  const asked = new Promise<string>((resolve) =>
    page.once('dialog', (d) => {
      resolve(d.type());
      void d.accept();
    }),
  );
  await page.close({ runBeforeUnload: true });
  expect(await asked).toBe('beforeunload');
});

test('undo of an older edit keeps the later ones, or says what a restore loses', async ({ page }) => {
  const id = await createAgent('Undo Test');
  const set = (value: string) => command('update_block', { agent_id: id, label: 'human', patch: { value } });
  await set('Name: Bob');
  await set('Name: Bob\nLikes tea');
  await set('Name: Bob\nLikes tea\nLives in Oslo');
  await openApp(page);
  await openAgent(page, 'Undo Test');
  const human = page.getByTestId('block-human');
  await human.getByTestId('block-history-toggle').click();
  const items = human.getByTestId('block-history-item');
  await expect(items).toHaveCount(3);
  await items.nth(1).getByTestId('block-undo').click();
  await expect(human.getByTestId('block-value')).toHaveText('Name: Bob\nLives in Oslo');
  expect((await blocksOf(page, 'Undo Test')).find((b) => b.label === 'human')?.value).toBe('Name: Bob\nLives in Oslo');

  // A later edit rewrote what this one wrote: the window asks before losing it.
  await set('Name: Robert\nLives in Oslo');
  await set('Name: Rob\nLives in Oslo');
  await expect(human.getByTestId('block-value')).toHaveText('Name: Rob\nLives in Oslo');
  await expect(items).toHaveCount(6);
  await items.nth(1).getByTestId('block-undo').click();
  const confirm = human.getByTestId('undo-confirm');
  await expect(confirm).toContainText('1 later edit changed the same text');
  await confirm.getByTestId('undo-cancel').click();
  expect((await blocksOf(page, 'Undo Test')).find((b) => b.label === 'human')?.value).toBe('Name: Rob\nLives in Oslo');
  await items.nth(1).getByTestId('block-undo').click();
  await human.getByTestId('undo-restore').click();
  await expect(human.getByTestId('block-value')).toHaveText('Name: Bob\nLives in Oslo');
});

test('the context view shows what the scripted model receives next', async ({ page }) => {
  await createAgent('Context Test');
  await openApp(page);
  await openAgent(page, 'Context Test');
  await send(page, 'my name is Alice', 'Nice to meet you, Alice!');

  await page.getByTestId('memory-tab-context').click();
  const messages = page.getByTestId('context-message');
  await expect(messages.first()).toHaveAttribute('data-part', 'system');
  await expect(messages.first().getByTestId('context-message-content')).toContainText('Name: Alice');
  await expect(page.getByTestId('context-tool').first()).toBeVisible();
  const shown = await messages.evaluateAll((els) =>
    els.map((el) => ({
      role: el.getAttribute('data-role'),
      content: el.querySelector('[data-testid=context-message-content]')?.textContent ?? '',
    })),
  );
  await expect(page.getByTestId('context-tool').first()).toBeVisible();
  await page.screenshot({ path: 'test-results/context.png' });
  const tools = await page.getByTestId('context-tool').locator('summary code').allTextContents();

  await send(page, 'what is my name?', 'Alice');
  const requests = await chatRequests();
  const sentFirst = requests.findIndex((r) => r.messages.at(-1)?.content === 'what is my name?');
  const sent = requests[sentFirst]!;
  expect(sent.messages.length).toBe(shown.length + 1);
  sent.messages.slice(0, shown.length).forEach((m, i) => {
    expect(m.role).toBe(shown[i]!.role);
    expect(m.content ?? '').toBe(shown[i]!.content);
  });
  const sentTools = (sent as unknown as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name);
  expect(sentTools).toEqual(tools);
});

test('the model picker offers chat models with their windows; the model and temperature reach the model', async ({ page }) => {
  await createAgent('Model Test');
  await openApp(page);
  await openAgent(page, 'Model Test');
  // The window the engine knows for mock-large: the server's 32768, or one stored earlier
  // (the provider test stores 16000) — the picker shows whichever the engine says.
  const listed = await command<{ handle: string; context_window: number }[]>('chat_models', { name: 'mock' });
  expect(listed.map((m) => m.handle)).toEqual(['mock/mock-small', 'mock/mock-large']);
  const window = listed[1]!.context_window;
  await page.getByTestId('agent-settings').click();
  const select = page.getByTestId('agent-settings-model-select');
  await expect(select.locator('option', { hasText: `mock/mock-large · ${window.toLocaleString('en-US')} tokens` })).toHaveCount(1);
  await expect(select.locator('option', { hasText: 'mock-embed' })).toHaveCount(0);
  await select.selectOption('mock/mock-large');
  await expect(page.getByTestId('agent-settings-context-window')).toHaveValue(String(window));
  await page.getByTestId('agent-settings-temperature').fill('0.4');
  await page.getByTestId('agent-settings-max-tokens').fill('300');
  await page.getByTestId('agent-settings-save').click();
  await expect(page.getByTestId('agent-settings-dialog')).toHaveCount(0);

  await send(page, 'hello there', 'hello there');
  const last = (await chatRequests()).at(-1)!;
  expect([last.model, last.temperature]).toEqual(['mock-large', 0.4]);
  expect((last as unknown as { max_tokens: number }).max_tokens).toBe(300);
  const windows = await command<{ handle: string; context_window: number }[]>('model_windows');
  expect(windows).toContainEqual({ handle: 'mock/mock-large', context_window: window });

  // After a reload the agent and the context view still say so (stored, not window state).
  await page.reload();
  await openAgent(page, 'Model Test');
  await page.getByTestId('memory-tab-context').click();
  await expect(page.getByTestId('context-view-model')).toHaveText('mock-large');
  await expect(page.getByTestId('context-view-temperature')).toHaveText('0.4');
});
