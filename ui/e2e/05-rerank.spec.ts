import { command, createAgent, ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';

// The reranker's switch in the window's settings. A folder that is not there is
// refused with a clear error, nothing is stored, and archival search still answers.

test.beforeAll(async () => {
  await ensureProvider();
});

test('a missing reranker folder is a clear error and search still answers', async ({ page }) => {
  const id = await createAgent('Reranked');
  await command('add_passage', { agent_id: id, text: 'Bob loves boston terriers' });
  await command('add_passage', { agent_id: id, text: 'The tax report is due on Friday' });

  await openApp(page);
  await openSettings(page, 'search');
  const settings = page.getByTestId('rerank-settings');
  await expect(settings.getByTestId('rerank-state')).toHaveText('On: late interaction with the built-in model (no cross-encoder folder set).');
  await settings.getByTestId('rerank-folder').fill('/no/such/reranker');
  await settings.getByTestId('rerank-folder-save').click();
  await expect(settings.getByTestId('rerank-error')).toHaveText('there is no folder /no/such/reranker on this computer');
  await settings.getByTestId('rerank-folder').fill('models/reranker');
  await settings.getByTestId('rerank-folder-save').click();
  await expect(settings.getByTestId('rerank-error')).toContainText('is not a full path');
  // Nothing was stored: the engine's state after a reload is what it was.
  await page.reload();
  await openSettings(page, 'search');
  await expect(page.getByTestId('rerank-state')).toHaveText('On: late interaction with the built-in model (no cross-encoder folder set).');
  await expect(page.getByTestId('rerank-folder')).toHaveValue('');

  await openAgent(page, 'Reranked');
  await page.getByTestId('memory-tab-archival').click();
  await page.getByTestId('archival-search').fill('terriers');
  await page.getByTestId('archival-search-submit').click();
  // Ranked by the search (no cross-encoder): the passage about terriers first.
  await expect(page.getByTestId('archival-item').first()).toContainText('Bob loves boston terriers');
  await expect(page.getByTestId('archival-relevance').first()).toContainText('best match');
});
