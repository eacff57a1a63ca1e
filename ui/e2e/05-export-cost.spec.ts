import { readFileSync } from 'node:fs';
import { command, createAgent, ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';

// Cost beside tokens when the model has a price; export from the window (a download
// in the browser build) that imports back; import errors beside the picker, naming the file.

test.beforeAll(async () => {
  await ensureProvider();
});

test('a priced model shows what a run and the agent cost', async ({ page }) => {
  await createAgent('Costly');
  await openApp(page);
  await openSettings(page, 'models');
  await page.getByTestId('price-new-model').fill('mock/mock-small');
  await page.getByTestId('price-new-input').fill('2');
  await page.getByTestId('price-new-output').fill('8');
  await page.getByTestId('price-add').click();
  await expect(page.locator('[data-testid=price-row][data-model="mock/mock-small"]')).toContainText('(yours)');

  await openAgent(page, 'Costly');
  await page.getByTestId('chat-input').fill('my name is Bob');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.getByTestId('run-usage').last()).toContainText('2 steps');
  const cost = page.getByTestId('run-cost').last();
  await expect(cost).toHaveText(/^\$\d+\.\d{2,4}$/);
  // The engine's numbers, not the window's: the same cost for the run, and for the agent.
  const agents = await command<{ id: string; name: string }[]>('list_agents');
  const id = agents.find((a) => a.name === 'Costly')!.id;
  const total = await command<{ prompt_tokens: number; completion_tokens: number; cost_usd: number }>('usage_cost', { agent_id: id });
  expect(total.cost_usd).toBeCloseTo((total.prompt_tokens * 2 + total.completion_tokens * 8) / 1e6, 10);
  // The agent's total is one click away, in its settings (the header stays quiet).
  await page.getByTestId('agent-settings').click();
  await expect(page.getByTestId('agent-settings-dialog').getByTestId('agent-cost')).toBeVisible();
  await page.keyboard.press('Escape');
  // Shown again after a reload, from stored steps.
  await page.reload();
  await openAgent(page, 'Costly');
  await page.getByTestId('agent-settings').click();
  await expect(page.getByTestId('agent-usage')).toContainText(`${(total.prompt_tokens + total.completion_tokens).toLocaleString('en-US')} tokens`);
});

test('export an agent from Settings as a download that imports back', async ({ page }) => {
  await createAgent('Export Me');
  await openApp(page);
  await openSettings(page, 'transfer');
  const agents = await command<{ id: string; name: string }[]>('list_agents');
  const id = agents.find((a) => a.name === 'Export Me')!.id;
  await page.getByTestId('export-scope').selectOption(id);
  const download = page.waitForEvent('download');
  await page.getByTestId('export-save').click();
  const file = await download;
  expect(file.suggestedFilename()).toBe('Export_Me.af');
  await expect(page.getByTestId('export-result')).toContainText('Downloaded Export_Me.af');
  const path = await file.path();
  const text = readFileSync(path, 'utf8');
  expect(JSON.parse(text).agents[0].name).toBe('Export Me');

  await page.getByTestId('import-file').setInputFiles({ name: 'Export_Me.af', mimeType: 'application/json', buffer: Buffer.from(text) });
  await expect(page.getByTestId('import-report-dialog')).toBeVisible();
  const after = await command<{ name: string }[]>('list_agents');
  expect(after.filter((a) => a.name === 'Export Me')).toHaveLength(2);
});

test('importing the JSON report says what it is, beside the picker, naming the file', async ({ page }) => {
  await createAgent('Reported');
  await openApp(page);
  await openSettings(page, 'transfer');
  await page.getByTestId('export-format').selectOption('json');
  const download = page.waitForEvent('download');
  await page.getByTestId('export-save').click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(/\.report\.json$/);
  const text = readFileSync(await file.path(), 'utf8');
  await page.getByTestId('import-file').setInputFiles({ name: file.suggestedFilename(), mimeType: 'application/json', buffer: Buffer.from(text) });
  const err = page.getByTestId('import-error');
  await expect(err).toContainText(`Could not import ${file.suggestedFilename()}`);
  await expect(err).toContainText('read-only report');
  // Right under the picker.
  await expect(page.locator('[data-testid=import-file] + [data-testid=import-error]')).toBeVisible();
});
