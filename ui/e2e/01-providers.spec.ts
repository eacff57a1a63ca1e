import { command, engram, expect, openApp, test } from './fixtures';

test('first run: set up an OpenAI-compatible provider and pick a model', async ({ page }) => {
  const before = await command<unknown[]>('list_providers');
  test.skip(before.length > 0, 'needs a fresh engram home');
  await openApp(page);
  // The token left the address bar.
  await expect(page).not.toHaveURL(/token=/);
  // A fresh home opens on the guided first run; every provider setting is one link away.
  await expect(page.getByTestId('first-run')).toBeVisible();
  await page.getByTestId('first-run-settings').click();
  await expect(page.getByRole('heading', { name: 'Model providers' })).toBeVisible();

  await page.getByTestId('provider-add').click();
  await page.getByTestId('provider-kind-compatible').check();
  await page.getByTestId('provider-name').fill('mock');
  await page.getByTestId('provider-base-url').fill(engram.mockBase);
  await page.getByTestId('provider-api-key').fill('sk-test');
  await page.getByTestId('provider-save').click();
  await expect(page.getByTestId('provider-status')).toHaveText('Saved.');
  // The key went in and never comes back: the field is empty, only "key set" shows.
  await expect(page.getByTestId('provider-api-key')).toHaveValue('');
  await expect(page.getByTestId('provider-key-state')).toContainText('Key set');
  await expect(page.locator('body')).not.toContainText('sk-test');

  await page.getByTestId('provider-test').click();
  await expect(page.getByTestId('provider-status')).toContainText('2 chat models available');
  await page.getByTestId('provider-model').selectOption('mock-large');
  await page.getByTestId('provider-context-window').fill('16000');
  await page.getByTestId('provider-save').click();
  await expect(page.getByTestId('provider-mock')).toContainText('mock/mock-large');
  await expect(page.getByTestId('provider-mock')).toContainText('key set');
});
