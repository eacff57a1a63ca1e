import type { Locator, Page } from '@playwright/test';
import { command, createAgent, engram, ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';
import { importBigAgent, type BigHistory } from './bigAgent';

// The app's states show: a hit is scrolled into view even when it was loaded already, an
// agent reopens at its latest message, a resize keeps the reader's place, and the views live
// in the address (Back, Forward, reload).

const DIARY = 'Garden diary';
const OTHER = 'Plain chat';
let diary: BigHistory;

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(120_000);
  await ensureProvider();
  // 300 long notes over a year. "marigold" sits in the newest page (loaded on open, above the
  // screen); "kumquat" far back. Three neighbours each, so at least one is a note or reply
  // (the others may be a tool call and its result).
  diary = await importBigAgent(
    DIARY,
    300,
    { 270: 'marigold', 271: 'marigold', 272: 'marigold', 50: 'kumquat', 51: 'kumquat', 52: 'kumquat' },
    { long: true },
  );
  await createAgent(OTHER);
});

const list = (page: Page) => page.locator('.vlist');

/** The message row at the top of the list, and how far below the list's top it starts. */
function topMessage(page: Page): Promise<{ id: string; offset: number } | null> {
  return page.evaluate(() => {
    const v = document.querySelector('.vlist')!.getBoundingClientRect();
    const rows = [...document.querySelectorAll<HTMLElement>('[data-message-id]')]
      .map((el) => ({ id: el.dataset.messageId!, r: el.getBoundingClientRect() }))
      .filter((x) => x.r.bottom > v.top + 1)
      .sort((a, b) => a.r.top - b.r.top);
    return rows[0] ? { id: rows[0].id, offset: rows[0].r.top - v.top } : null;
  });
}

/** Whether `el` is inside the scrolled list's box (its top at least). */
async function inView(page: Page, el: Locator): Promise<boolean> {
  const [r, v] = await Promise.all([el.boundingBox(), list(page).boundingBox()]);
  return !!r && !!v && r.y >= v.y - 2 && r.y <= v.y + v.height - 20;
}

/** In view now, and still there a moment later (nothing pulls the list elsewhere after). */
async function staysInView(page: Page, el: Locator): Promise<void> {
  await expect(el).toBeVisible();
  await expect.poll(() => inView(page, el)).toBe(true);
  await page.waitForTimeout(700);
  expect(await inView(page, el)).toBe(true);
}

/** The diary's newest message. */
const newest = (page: Page) => page.locator('[data-testid=message]').filter({ hasText: diary.messages.at(-1)!.content.slice(0, 30) }).last();

async function openDiaryAtEnd(page: Page): Promise<void> {
  await openAgent(page, DIARY);
  await staysInView(page, newest(page));
}

test('a hit that is loaded but off screen is scrolled into view: find, recall and date', async ({ page }) => {
  await openApp(page);
  await openDiaryAtEnd(page);
  const messages = page.getByTestId('messages');
  const firstSeq = await messages.getAttribute('data-first-seq');

  // The conversation's own search.
  await page.getByTestId('chat-find').fill('marigold');
  await page.getByTestId('chat-find').press('Enter');
  await page.getByTestId('chat-find-hit').first().click();
  const anchor = page.locator('[data-anchor]');
  await expect(anchor).toContainText('marigold');
  await staysInView(page, anchor);
  // It was loaded already: nothing was read again.
  await expect(messages).toHaveAttribute('data-first-seq', firstSeq!);

  // A recall hit from the memory panel, after going back to the end.
  await page.getByTestId('jump-latest').click();
  await staysInView(page, newest(page));
  await page.getByTestId('memory-tab-recall').click();
  await page.getByTestId('recall-search').fill('marigold');
  await page.getByTestId('recall-search-submit').click();
  await page.getByTestId('recall-open').first().click();
  await expect(anchor).toContainText('marigold');
  await staysInView(page, anchor);

  // A date in the newest page.
  await page.getByTestId('jump-latest').click();
  await staysInView(page, newest(page));
  const target = diary.messages[285]!;
  const d = new Date(target.created_at);
  const iso = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
  await page.getByTestId('jump-date').fill(iso);
  await page.getByTestId('jump-date-go').click();
  await staysInView(page, page.locator('[data-anchor]'));
});

test('an agent reopens at its latest message, not where a jump left it', async ({ page }) => {
  await openApp(page);
  await openDiaryAtEnd(page);
  // Far back: a recall hit.
  await page.getByTestId('memory-tab-recall').click();
  await page.getByTestId('recall-search').fill('kumquat');
  await page.getByTestId('recall-search-submit').click();
  await page.getByTestId('recall-open').first().click();
  await expect(page.locator('[data-anchor]')).toContainText('kumquat');
  await expect(page.getByTestId('messages')).toHaveAttribute('data-has-newer', 'true');

  await openAgent(page, OTHER);
  await openDiaryAtEnd(page);
  await expect(page.locator('[data-anchor]')).toHaveCount(0);
  await expect(page.getByTestId('jump-latest')).toBeHidden();

  // The same after a reload (the address names the agent).
  await page.getByTestId('jump-start').click();
  await expect(page.getByTestId('conversation-start')).toBeVisible();
  await page.reload();
  await expect(page.getByRole('heading', { level: 1, name: DIARY })).toBeVisible();
  await openDiaryAtEnd(page);
});

test('resizing the window keeps the message at the top of the view there', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await openApp(page);
  await openDiaryAtEnd(page);
  // Somewhere in the middle of the newest page, not at the bottom.
  await list(page).evaluate((el) => (el.scrollTop = el.scrollHeight / 2));
  await page.waitForTimeout(400);
  const before = (await topMessage(page))!;
  expect(before).not.toBeNull();
  for (const [width, height] of [
    [800, 600],
    [600, 800],
    [1280, 800],
  ] as const) {
    await page.setViewportSize({ width, height });
    await expect
      .poll(async () => {
        const now = await topMessage(page);
        return now?.id === before.id && Math.abs(now.offset - before.offset) <= 4;
      }, { message: `top message at ${width}×${height}` })
      .toBe(true);
  }

  // A reader at the bottom stays at the bottom.
  await page.getByTestId('jump-latest').click();
  const last = page.locator('[data-testid=message]').last();
  await staysInView(page, last);
  await page.setViewportSize({ width: 600, height: 800 });
  await staysInView(page, last);
  await expect(page.getByTestId('jump-latest')).toBeHidden();
  await page.setViewportSize({ width: 1280, height: 800 });
});

test('Back and Forward move between views, and a reload opens the same one', async ({ page }) => {
  await openApp(page);
  await openAgent(page, OTHER);
  await expect(page).toHaveURL(/#\/agent\/agent-/);
  const other = page.url();
  await openSettings(page, 'models');
  await expect(page).toHaveURL(/#\/settings\/models$/);
  await page.getByTestId('settings-nav-mcp').click();
  await expect(page).toHaveURL(/#\/settings\/mcp$/);
  await page.getByTestId('nav-tools').click();
  await expect(page).toHaveURL(/#\/tools$/);
  await openAgent(page, DIARY);

  await page.goBack();
  await expect(page.getByRole('heading', { level: 1, name: 'Tools' })).toBeVisible();
  await page.goBack();
  await expect(page.getByTestId('mcp-settings')).toBeVisible();
  await page.goBack();
  await expect(page.getByTestId('settings')).toHaveAttribute('data-section', 'models');
  // Settings opened at its first section before the menu picked another.
  await page.goBack();
  await expect(page.getByTestId('settings')).toHaveAttribute('data-section', 'providers');
  await page.goBack();
  await expect(page.getByRole('heading', { level: 1, name: OTHER })).toBeVisible();
  expect(page.url()).toBe(other);
  await page.goForward();
  await page.goForward();
  await expect(page.getByTestId('settings')).toHaveAttribute('data-section', 'models');

  await page.reload();
  await expect(page.getByTestId('settings')).toHaveAttribute('data-section', 'models');
  await expect(page.getByTestId('settings-nav-models')).toHaveAttribute('aria-current', 'page');

  // An agent's address opens that agent; the sign-in token stays in this tab.
  const agents = await command<{ id: string; name: string }[]>('list_agents');
  const id = agents.find((a) => a.name === DIARY)!.id;
  await page.goto(`${engram.url}/#/agent/${id}`);
  await expect(page.getByRole('heading', { level: 1, name: DIARY })).toBeVisible();
  // A new tab opened at a view with the token: signed in, at that view, the token gone from
  // the address.
  const fresh = await page.context().newPage();
  await fresh.goto(`${engram.url}/#/settings/about?token=${engram.token}`);
  await expect(fresh.getByTestId('settings')).toHaveAttribute('data-section', 'about');
  await expect(fresh.getByTestId('about-version')).not.toBeEmpty();
  await expect(fresh).toHaveURL(/#\/settings\/about$/);
  await fresh.close();
});
