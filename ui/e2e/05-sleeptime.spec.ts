import { command, createAgent, engram, ensureProvider, expect, openAgent, openApp, test } from './fixtures';

// Sleep-time passes in the window: the switch on the agent, a pass shown under "While you were
// away" with its diff, and one of its changes undone — against the real `engram serve`, with
// the scripted model playing the sleep-time agent.

/** Queues the scripted model's next replies (its `/_mock/push` control endpoint). */
async function script(replies: object[]): Promise<void> {
  const root = engram.mockBase.replace(/\/v1$/, '');
  const res = await fetch(`${root}/_mock/push`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(replies),
  });
  if (!res.ok) throw new Error(`mock push: ${res.status}`);
}

type StoredBlock = { label: string; value: string };

async function human(agentId: string): Promise<string> {
  const blocks = await command<StoredBlock[]>('list_blocks', { agent_id: agentId });
  return blocks.find((b) => b.label === 'human')!.value;
}

test.beforeAll(async () => {
  await ensureProvider();
});

test('the switch turns passes on, a pass shows what it changed, and a change is undone', async ({ page }) => {
  const id = await createAgent('Dreamer');
  await command('update_block', {
    agent_id: id,
    label: 'human',
    patch: { value: 'Name: Ana\nLives in Lisbon\nLikes tea\nLikes tea' },
  });
  await openApp(page);
  await openAgent(page, 'Dreamer');
  await page.getByTestId('memory-tab-away').click();
  const panel = page.getByTestId('sleeptime-panel');
  await expect(panel).toContainText('No passes yet.');

  // The switch.
  const toggle = page.getByTestId('sleeptime-switch');
  await expect(toggle).not.toBeChecked();
  await toggle.check();
  await expect.poll(async () => (await command<{ enabled: boolean }>('sleeptime_settings', { agent_id: id })).enabled).toBe(true);
  await page.getByTestId('sleeptime-frequency').fill('3');
  await page.getByTestId('sleeptime-frequency').press('Tab');
  await expect.poll(async () => (await command<{ frequency: number }>('sleeptime_settings', { agent_id: id })).frequency).toBe(3);

  // A pass, scripted: the duplicated line goes and the new fact replaces the old one.
  await script([
    {
      type: 'tool_calls',
      calls: [{ name: 'memory_rethink', arguments: { label: 'human', new_memory: 'Name: Ana\nLives in Porto\nLikes tea' } }],
    },
    { type: 'tool_calls', calls: [{ name: 'finish', arguments: {} }] },
  ]);
  await page.getByTestId('sleeptime-run').click();
  const pass = page.getByTestId('sleeptime-pass').first();
  await expect(pass).toHaveAttribute('data-status', 'done');
  const change = pass.getByTestId('sleeptime-change');
  await expect(change).toHaveCount(1);
  await expect(change).toContainText('Block “human” edited');
  await expect(change.locator('.diff')).toContainText('+Lives in Porto');
  await expect(change.locator('.diff')).toContainText('-Lives in Lisbon');
  expect(await human(id)).toBe('Name: Ana\nLives in Porto\nLikes tea');

  // Undo of that change, through the block's versioned undo.
  await change.getByTestId('sleeptime-undo-change').click();
  await expect(change).toHaveAttribute('data-undone', 'true');
  await expect(pass).toHaveAttribute('data-status', 'undone');
  expect(await human(id)).toBe('Name: Ana\nLives in Lisbon\nLikes tea\nLikes tea');
  await expect(page.getByTestId('sleeptime-undo-pass')).toHaveCount(0);
});

test('limits set in the Away tab bound the passes: an agent over its passes per day is skipped and says why', async ({ page }) => {
  const id = await createAgent('Bounded');
  await openApp(page);
  await openAgent(page, 'Bounded');
  await page.getByTestId('memory-tab-away').click();
  await page.getByTestId('sleeptime-switch').check();
  await page.getByTestId('sleeptime-limits').locator('summary').click();
  await page.getByTestId('sleeptime-passes-per-day').fill('0');
  await page.getByTestId('sleeptime-passes-per-day').press('Tab');
  await expect.poll(async () => (await command<{ passes_per_day?: number }>('sleeptime_settings', { agent_id: id })).passes_per_day).toBe(0);
  // The limits over all agents are read and kept the same way (and cleared again).
  await page.getByTestId('sleeptime-budget-tokens').fill('50000');
  await page.getByTestId('sleeptime-budget-tokens').press('Tab');
  await expect.poll(async () => (await command<{ tokens_per_day?: number }>('sleeptime_budget')).tokens_per_day).toBe(50000);
  await page.getByTestId('sleeptime-budget-tokens').fill('');
  await page.getByTestId('sleeptime-budget-tokens').press('Tab');
  await expect.poll(async () => (await command<{ tokens_per_day?: number | null }>('sleeptime_budget')).tokens_per_day ?? null).toBeNull();

  await page.getByTestId('sleeptime-run').click();
  const pass = page.getByTestId('sleeptime-pass').first();
  await expect(pass).toHaveAttribute('data-status', 'skipped');
  await expect(pass.getByTestId('sleeptime-reason')).toContainText('over budget');
});
