import { agentItem, command, createAgent, ensureProvider, expect, openAgent, openApp, test } from './fixtures';

test.beforeAll(async () => {
  await ensureProvider();
});

test('approve a tool call in the chat: the run waits, survives a reload, then goes on', async ({ page }) => {
  await createAgent('Approve Test');
  await openApp(page);
  await openAgent(page, 'Approve Test');
  // "Ask before running" is set on the Tools screen, per agent and tool.
  await page.getByTestId('nav-tools').click();
  const tool = page.locator('[data-testid=tool-item][data-tool-name=core_memory_append]');
  await tool.getByTestId('tool-ask-first').check();
  await expect(tool.getByTestId('tool-ask-first')).toBeChecked();
  await openAgent(page, 'Approve Test');

  await page.getByTestId('chat-input').fill('my name is Bob');
  await page.getByTestId('chat-input').press('Enter');
  const card = page.getByTestId('approval-card');
  await expect(card).toBeVisible();
  await expect(card).toHaveAttribute('data-tool', 'core_memory_append');
  await expect(card.getByTestId('approval-arguments')).toContainText('Name: Bob');
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('(empty)');

  // The waiting call is stored: a reload shows the same card.
  await page.reload();
  await openAgent(page, 'Approve Test');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('approval-approve').click();
  await expect(page.getByTestId('approval-card')).toHaveCount(0);
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('Name: Bob');
  await expect(page.locator('[data-testid=tool-call][data-tool=core_memory_append]').last()).toHaveAttribute(
    'data-state',
    'ok',
  );
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText(
    'Nice to meet you, Bob!',
  );
});

test('deny a tool call with a reason: the model reads it and nothing runs', async ({ page }) => {
  const id = await createAgent('Deny Test');
  await command('set_tool_approval', { agent_id: id, tool: 'core_memory_append', on: true });
  await openApp(page);
  await openAgent(page, 'Deny Test');
  await page.getByTestId('chat-input').fill('my name is Ann');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('approval-deny').click();
  await page.getByTestId('approval-reason').fill('I would rather you did not store my name');
  await page.getByTestId('approval-deny-confirm').click();
  await expect(page.getByTestId('approval-card')).toHaveCount(0);
  const call = page.locator('[data-testid=tool-call][data-tool=core_memory_append]').last();
  await expect(call).toHaveAttribute('data-state', 'failed');
  await call.locator('summary').click();
  await expect(call).toContainText('I would rather you did not store my name');
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('(empty)');
  expect(await command('pending_approval', { agent_id: id })).toBeNull();
  await expect(agentItem(page, 'Deny Test')).toBeVisible();
});
