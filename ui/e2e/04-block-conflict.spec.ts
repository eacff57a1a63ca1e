import { agentItem, command, createAgent, ensureProvider, expect, openAgent, openApp, test } from './fixtures';

test.beforeAll(async () => {
  await ensureProvider();
});

// A hand edit started before the agent changed the block is not saved over the
// agent's edit. Save names the version the editor opened; the engine refuses it as stale and
// the card offers the choice.
test('a stale save offers a choice instead of overwriting the agent’s edit', async ({ page }) => {
  await createAgent('Conflict Test');
  await openApp(page);
  await openAgent(page, 'Conflict Test');
  const human = page.getByTestId('block-human');
  await human.getByTestId('block-edit').click();
  await human.getByTestId('block-editor').fill('Allergic to peanuts');

  // While the editor is open, the agent writes to the same block through a chat.
  await page.getByTestId('chat-input').fill('my name is Alice');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('Nice to meet you, Alice!');
  await expect(human.getByTestId('block-editor')).toHaveValue('Allergic to peanuts');

  await human.getByTestId('block-save').click();
  const conflict = human.getByTestId('block-conflict');
  await expect(conflict).toBeVisible();
  await expect(conflict.getByTestId('conflict-theirs')).toHaveText('Name: Alice');
  await expect(conflict.getByTestId('conflict-mine')).toHaveText('Allergic to peanuts');
  const id = await agentItem(page, 'Conflict Test').getAttribute('data-agent-id');
  const stored = async () =>
    (await command<{ label: string; value: string }[]>('list_blocks', { agent_id: id })).find((b) => b.label === 'human')?.value;
  expect(await stored()).toBe('Name: Alice');

  // Merge by editing the current value.
  await conflict.getByTestId('conflict-merge').click();
  const editor = human.getByTestId('block-editor');
  await expect(editor).toHaveValue('Name: Alice');
  await editor.fill('Name: Alice\nAllergic to peanuts');
  await human.getByTestId('block-save').click();
  await expect(human.getByTestId('block-value')).toHaveText('Name: Alice\nAllergic to peanuts');
  await expect(human.getByTestId('block-conflict')).toHaveCount(0);
  expect(await stored()).toBe('Name: Alice\nAllergic to peanuts');

  // The history shows both edits with their versions: the agent's, then the merged save.
  await human.getByTestId('block-history-toggle').click();
  const items = human.getByTestId('block-history-item');
  await expect(items).toHaveCount(2);
  await expect(items.nth(0)).toContainText('By you');
  await expect(items.nth(0).getByTestId('block-history-versions')).toHaveText('v2 → v3');
  await expect(items.nth(1)).toContainText('By the agent');
  await expect(items.nth(1).getByTestId('block-history-versions')).toHaveText('v1 → v2');
});
