import { expect, ensureProvider, openApp, test } from './fixtures';

test.beforeAll(async () => {
  await ensureProvider();
});

test('the task-queue template: tasks go [] → two tasks → [] as the agent works', async ({ page }) => {
  await openApp(page);
  await page.getByTestId('new-agent').click();
  await page.getByTestId('new-agent-template').selectOption('task-queue');
  await page.getByTestId('new-agent-name').fill('Planner');
  await page.getByTestId('new-agent-model').fill('mock/mock-small');
  await page.getByTestId('new-agent-create').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Planner' })).toBeVisible();
  const tasks = page.getByTestId('block-tasks').getByTestId('block-value');
  await expect(tasks).toHaveText('[]');

  const input = page.getByTestId('chat-input');
  for (const t of ['buy milk', 'call Alya']) {
    await input.fill(`add task: ${t}`);
    await input.press('Enter');
    await expect(tasks).toContainText(t);
  }
  await expect(tasks).toContainText('buy milk');
  await input.fill('complete your tasks');
  await input.press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('All tasks are done');
  await expect(tasks).toHaveText('[]');
  // Each pop is a visible tool call; the block history holds every edit.
  await expect(page.locator('[data-testid=tool-call][data-tool=task_queue_pop]')).toHaveCount(2);
  await page.getByTestId('block-tasks').getByTestId('block-history-toggle').click();
  await expect(page.getByTestId('block-tasks').getByTestId('block-history-item')).toHaveCount(4);
});

test('write a Python tool and see the schema Engram generated', async ({ page }) => {
  await openApp(page);
  await page.getByTestId('nav-tools').click();
  await page.getByRole('button', { name: 'New Python tool' }).click();
  await expect(page.getByTestId('tool-editor')).toBeVisible();
  await page.getByTestId('tool-source').fill(
    [
      'def roll(agent_state, sides: int) -> str:',
      '    """Roll a die.',
      '',
      '    Args:',
      '        sides: How many sides the die has.',
      '    """',
      '    return f"rolled a d{sides}"',
    ].join('\n'),
  );
  await page.getByTestId('tool-save').click();
  await expect(page.getByTestId('tool-schema')).toContainText('"sides"');
  await expect(page.getByTestId('tool-schema')).toContainText('"integer"');
  const item = page.locator('[data-testid=tool-item][data-tool-name=roll]');
  await expect(item).toBeVisible();
  await expect(item).not.toHaveClass(/unavailable/);
});
