import { command, createAgent, engram, ensureProvider, expect, openAgent, openApp, test } from './fixtures';

// The archive browser against the real `engram serve` with an agent of 5,000 passages, built
// through Letta's REST API: one an hour from 2025-01-01 00:00 UTC (`Entry 0` … `Entry 4999`),
// every 100th tagged `milestone`, twelve of them mentioning a zeppelin.
const N = 5_000;
const ZEPPELINS = 12;
const NAME = 'Archive 5k';
let agentId = '';

test.use({ timezoneId: 'UTC' });
test.describe.configure({ mode: 'serial' });

function entry(i: number) {
  const zeppelin = i % 400 === 17 && i < 400 * ZEPPELINS;
  return {
    text: `Entry ${i}: ${zeppelin ? 'a zeppelin drifted over the harbour' : 'an ordinary hour in the log'}.`,
    tags: i % 100 === 0 ? ['milestone', 'log'] : ['log'],
    created_at: new Date(Date.UTC(2025, 0, 1) + i * 3_600_000).toISOString(),
  };
}

async function rest(path: string, body: unknown): Promise<void> {
  const res = await fetch(`${engram.url}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${engram.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

test.beforeAll(async () => {
  test.setTimeout(300_000);
  await ensureProvider();
  agentId = await createAgent(NAME);
  for (let i = 0; i < N; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, N - i) }, (_, k) => rest(`/v1/agents/${agentId}/archival-memory`, entry(i + k))),
    );
  }
});

async function openArchive(page: import('@playwright/test').Page) {
  await openApp(page);
  await openAgent(page, NAME);
  await page.getByTestId('memory-tab-archival').click();
  await expect(page.getByTestId('archival-count')).toHaveText('5,000 passages');
}

const items = (page: import('@playwright/test').Page) => page.getByTestId('archival-item');

test('the last page is one click away and shows the oldest passage', async ({ page }) => {
  await openArchive(page);
  await expect(items(page).first()).toContainText('Entry 4999:');
  await expect(page.getByTestId('archival-pages')).toHaveText('500');
  await page.getByTestId('archival-last').click();
  await expect(items(page).last()).toContainText('Entry 0:');
  await expect(page.getByTestId('archival-range')).toHaveText('4,991–5,000 of 5,000');
  // A typed page, then a bigger page size that keeps the first passage on show in view.
  await page.getByTestId('archival-page').fill('42');
  await page.getByTestId('archival-page').press('Enter');
  await expect(items(page).first()).toContainText(`Entry ${N - 1 - 410}:`);
  await page.getByTestId('archival-page-size').selectOption('50');
  await expect(items(page)).toHaveCount(50);
  await expect(page.getByTestId('archival-range')).toHaveText('401–450 of 5,000');
});

test('jump to a date opens the page that holds it', async ({ page }) => {
  await openArchive(page);
  // Newest first, the newest passage of 2025-03-01 is Entry 1439 (59 days and 23 hours in),
  // 3,560 passages from the top: page 357 of 500.
  await page.getByTestId('archival-jump-date').fill('2025-03-01');
  await page.getByTestId('archival-jump').click();
  await expect(items(page).first()).toContainText('Entry 1439:');
  await expect(page.getByTestId('archival-page')).toHaveValue('357');
});

test('a search counts its own matches, not the archive', async ({ page }) => {
  await openArchive(page);
  await page.getByTestId('archival-search').fill('zeppelin');
  await page.getByTestId('archival-search-submit').click();
  await expect(page.getByTestId('archival-count')).toHaveText(`${ZEPPELINS} matches for “zeppelin”`);
  await expect(items(page)).toHaveCount(ZEPPELINS);
  await expect(page.getByTestId('archival-relevance').first()).toContainText('best match');
  await expect(page.getByText(/score \d/)).toHaveCount(0);
  await expect(page.getByTestId('archival-pager')).toHaveCount(0);
});

test('filter by tag and by date, with counts of what passes', async ({ page }) => {
  await openArchive(page);
  await page.getByTestId('archival-filter-tags').fill('milestone');
  await page.getByTestId('archival-filter-apply').click();
  await expect(page.getByTestId('archival-count')).toHaveText('50 passages match the filters');
  await expect(items(page).first()).toContainText('Entry 4900:');
  await page.getByTestId('archival-last').click();
  await expect(items(page).last()).toContainText('Entry 0:');
  // For the README: the whole panel in view, filters and pager included.
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.getByTestId('archival-filter-tags').scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/archive.png' });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.getByTestId('archival-filter-clear').click();
  await expect(page.getByTestId('archival-count')).toHaveText('5,000 passages');
  // One day holds 24 hourly passages: 2025-01-03 is Entry 48 … Entry 71.
  await page.getByTestId('archival-filter-from').fill('2025-01-03');
  await page.getByTestId('archival-filter-to').fill('2025-01-03');
  await page.getByTestId('archival-filter-apply').click();
  await expect(page.getByTestId('archival-count')).toHaveText('24 passages match the filters');
  await expect(items(page).first()).toContainText('Entry 71:');
  await page.getByTestId('archival-order').selectOption('asc');
  await expect(items(page).first()).toContainText('Entry 48:');
});

test('edit a passage in place; it stays edited after a reload', async ({ page }) => {
  await openArchive(page);
  const first = items(page).first();
  await expect(first).toContainText('Entry 4999:');
  await first.getByTestId('archival-edit').click();
  await first.getByTestId('archival-edit-text').fill('Entry 4999: rewritten by hand.');
  await first.getByTestId('archival-edit-tags').fill('log, edited');
  await first.getByTestId('archival-edit-save').click();
  await expect(items(page).first()).toContainText('rewritten by hand');
  await page.reload();
  await openArchive(page);
  await expect(items(page).first()).toContainText('Entry 4999: rewritten by hand.');
  await expect(items(page).first()).toContainText('edited');
  const stored = await command<{ passages: { text: string; tags: string[] }[]; total: number }>('list_passages', {
    agent_id: agentId,
    list: { tags: ['edited'], tag_match: 'any', offset: 0, limit: 10, ascending: false },
  });
  expect(stored.total).toBe(1);
  expect(stored.passages[0]).toMatchObject({ text: 'Entry 4999: rewritten by hand.', tags: ['log', 'edited'] });
  // Delete asks first.
  await items(page).first().getByTestId('archival-delete').click();
  await page.getByRole('button', { name: 'Delete', exact: true }).click();
  await expect(page.getByTestId('archival-count')).toHaveText('4,999 passages');
  await expect(items(page).first()).toContainText('Entry 4998:');
});
