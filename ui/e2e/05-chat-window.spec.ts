import type { Page } from '@playwright/test';
import { agentItem, createAgent, engram, ensureProvider, expect, openAgent, openApp, test } from './fixtures';
import { importBigAgent, type BigHistory } from './bigAgent';

// The chat window at a year's scale, measured as a user feels it, against
// `engram serve` with an agent of 5,000 messages built by the test.

const BIG = 'Year of garden notes';
const SMALL = 'Quick chat';
let big: BigHistory;

test.describe.configure({ mode: 'serial' });
// Playwright's trace recorder (`trace: 'retain-on-failure'`) snapshots the whole DOM before and
// after every action on the page's main thread: ~20 ms of forced style and layout per snapshot,
// two per key press. Chromium's trace of the typing test showed those snapshots in every key
// above 50 ms, so this file, which times what a user feels, records no Playwright trace.
test.use({ trace: 'off' });

test.beforeAll(async () => {
  test.setTimeout(120_000);
  await ensureProvider();
  big = await importBigAgent(BIG, 5000, { 1234: 'zanzibar', 4930: 'kumquat' });
  await createAgent(SMALL);
});

const messages = (page: Page) => page.getByTestId('messages');

/** The document is exactly the window: nothing outside the panels scrolls. */
async function documentFits(page: Page) {
  const m = await page.evaluate(() => ({
    scroll: document.documentElement.scrollHeight,
    client: document.documentElement.clientHeight,
    y: window.scrollY,
  }));
  expect(m.scroll, JSON.stringify(m)).toBe(m.client);
  expect(m.y).toBe(0);
}

/** JS heap in use after a garbage collection (CDP), in MB. */
async function heapMb(page: Page): Promise<number> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  const { usedSize } = await cdp.send('Runtime.getHeapUsage');
  await cdp.detach();
  return usedSize / 1024 / 1024;
}

/** Scrolls the message list to its top and waits for the page before to land. */
async function pageBack(page: Page): Promise<void> {
  const before = await messages(page).getAttribute('data-first-seq');
  // A scroll set by script is not a reader's action, so a view still settling (rows being
  // measured) may put it back: scroll again until the earlier page has landed.
  await expect(async () => {
    await page.locator('.vlist').evaluate((el) => (el.scrollTop = 0));
    await expect(messages(page)).not.toHaveAttribute('data-first-seq', before ?? '', { timeout: 1_000 });
  }).toPass({ timeout: 15_000 });
}

test('a year of history: scroll back 100 pages, type without lag, bounded memory', async ({ page }) => {
  test.setTimeout(240_000);
  await openApp(page);
  await openAgent(page, BIG);
  const last = big.messages.at(-1)!;
  await expect(page.locator('[data-testid=message]').last()).toContainText(last.content);
  await documentFits(page);
  const atOpen = await heapMb(page);

  const t0 = Date.now();
  for (let i = 0; i < 100; i++) await pageBack(page);
  const scrollMs = Date.now() - t0;
  // 100 pages of 40: 4,000 messages scrolled past; only the pages near the screen are kept.
  // Pages far from the screen are dropped after the scroll settles: poll, do not read once.
  const loadedNow = async () => Number(await messages(page).getAttribute('data-loaded'));
  await expect.poll(loadedNow).toBeLessThanOrEqual(240);
  const loaded = await loadedNow();
  await expect.poll(() => page.locator('[data-testid=message]').count()).toBeLessThan(120);
  await documentFits(page);

  // Key press to frame, timed in the page: from the key event to the end of the frame that
  // shows it (a message posted from requestAnimationFrame runs after that frame's paint).
  const input = page.getByTestId('chat-input');
  await input.focus();
  await page.evaluate(() => {
    const w = window as unknown as { keyLatencies: number[] };
    w.keyLatencies = [];
    document.addEventListener(
      'keydown',
      (e) => {
        const start = e.timeStamp;
        requestAnimationFrame(() => {
          const ch = new MessageChannel();
          ch.port1.onmessage = () => w.keyLatencies.push(performance.now() - start);
          ch.port2.postMessage(null);
        });
      },
      true,
    );
  });
  const phrase = 'the garden looks good today, thanks';
  const typed = async (delay: number) => {
    await input.fill('');
    await page.evaluate(() => ((window as unknown as { keyLatencies: number[] }).keyLatencies = []));
    await page.keyboard.type(phrase, { delay });
    await expect(input).toHaveValue(phrase);
    // Each key is timed at the end of the frame that shows it; a burst can land all its keys
    // in one frame still to come, so wait for every key's frame before reading.
    const latencies = () => page.evaluate(() => (window as unknown as { keyLatencies: number[] }).keyLatencies);
    await expect.poll(async () => (await latencies()).length).toBeGreaterThanOrEqual(phrase.length);
    return (await latencies()).sort((a, b) => a - b);
  };
  const show = (lat: number[]) => lat.map((x) => x.toFixed(0)).join(' ');
  // Up to three rounds of typing, a key every 50 ms (a very fast typist): a shared machine
  // can stall one frame for reasons outside the page (another process on the two cores),
  // so the targets must hold in one whole round.
  let median = Infinity;
  let max = Infinity;
  for (let round = 0; round < 3 && !(median <= 16 && max <= 50); round++) {
    const lat = await typed(50);
    median = lat[Math.floor(lat.length / 2)]!;
    max = lat.at(-1)!;
    console.log(
      `[perf] round ${round + 1}: 100 pages back in ${scrollMs} ms (${(scrollMs / 100).toFixed(0)} ms/page); key→frame median ${median.toFixed(1)} ms, max ${max.toFixed(1)} ms over ${lat.length} keys (${show(lat)}); ${loaded} messages loaded`,
    );
  }
  // Keys sent as fast as the browser takes them (several per frame) must not queue (keys
  // once waited 1.5–4 s at 20k messages).
  const burst = await typed(0);
  console.log(`[perf] burst: key→frame median ${burst[Math.floor(burst.length / 2)]!.toFixed(1)} ms, max ${burst.at(-1)!.toFixed(1)} ms (${show(burst)})`);
  const heap = await heapMb(page);
  console.log(`[perf] heap ${atOpen.toFixed(1)} MB at open, ${heap.toFixed(1)} MB after`);
  expect(median).toBeLessThanOrEqual(16);
  expect(max).toBeLessThanOrEqual(50);
  expect(burst.at(-1)!).toBeLessThanOrEqual(150);
  expect(heap).toBeLessThanOrEqual(30);
  await input.fill('');
});

test('jump to the start, to a date, to a search hit and to a recall hit', async ({ page }) => {
  await openApp(page);
  await openAgent(page, BIG);
  await expect(page.locator('[data-testid=message]').last()).toContainText(big.messages.at(-1)!.content);

  // The first message of the year, within a second of asking.
  const ms = await page.evaluate(async () => {
    const t0 = performance.now();
    (document.querySelector('[data-testid=jump-start]') as HTMLButtonElement).click();
    for (;;) {
      await new Promise((r) => requestAnimationFrame(r));
      const first = [...document.querySelectorAll('[data-testid=message]')].find((e) => e.textContent?.includes('The very first message of the year.'));
      if (first && first.getBoundingClientRect().bottom > 0) return performance.now() - t0;
      if (performance.now() - t0 > 5000) return Infinity;
    }
  });
  console.log(`[perf] jump to start: first message shown after ${ms.toFixed(0)} ms`);
  expect(ms).toBeLessThanOrEqual(1000);
  await expect(page.getByTestId('conversation-start')).toBeVisible();
  await expect(page.getByTestId('date-separator').first()).toBeVisible();
  await expect(page.getByTestId('jump-latest')).toBeVisible();

  // A date: the first message written that day (local time) opens highlighted.
  const target = big.messages[2500]!;
  const day = new Date(target.created_at);
  const iso = `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, '0')}-${String(day.getDate()).padStart(2, '0')}`;
  const startOfDay = new Date(`${iso}T00:00:00`).getTime();
  const firstThatDay = big.messages.find((m) => new Date(m.created_at).getTime() >= startOfDay)!;
  await page.getByTestId('jump-date').fill(iso);
  await page.getByTestId('jump-date-go').click();
  const anchor = page.locator('[data-anchor]');
  await expect(anchor).toBeVisible();
  const shown = firstThatDay.content.startsWith('{') ? (JSON.parse(firstThatDay.content) as { message: string }).message : firstThatDay.content;
  if (firstThatDay.role !== 'tool') await expect(anchor).toContainText(shown.slice(0, 40));
  await expect(page.getByTestId('date-separator').filter({ hasText: String(day.getDate()) }).first()).toBeVisible();
  await page.screenshot({ path: '../docs/screenshots/jump-to-date.png' });

  // A search hit from the chat's own search.
  await page.getByTestId('chat-find').fill('zanzibar');
  await page.getByTestId('chat-find').press('Enter');
  await page.getByTestId('chat-find-hit').first().click();
  await expect(page.locator('[data-anchor]')).toContainText('zanzibar');

  // A recall hit from the memory panel opens in the conversation, highlighted.
  await page.getByTestId('jump-latest').click();
  await expect(page.locator('[data-testid=message]').last()).toContainText(big.messages.at(-1)!.content);
  await page.getByTestId('memory-tab-recall').click();
  await page.getByTestId('recall-search').fill('kumquat');
  await page.getByTestId('recall-search-submit').click();
  await page.getByTestId('recall-open').first().click();
  await expect(page.locator('[data-anchor]')).toContainText('kumquat');
  // The jump settles (its rows measured, the hit held in view) before this test scrolls.
  await expect(messages(page)).toHaveAttribute('data-placed', 'true');

  // Older messages were summarised a few messages further down: the divider opens to the
  // summary. (Only rows near the screen exist, so scroll until it is rendered.)
  // An opened divider stays open when the list re-renders its row.
  const divider = page.getByTestId('compaction-divider');
  await expect(async () => {
    for (let i = 0; i < 30 && (await divider.count()) === 0; i++) {
      await page.locator('.vlist').evaluate((el) => (el.scrollTop += 150));
      await page.waitForTimeout(50);
    }
    await expect(divider).toContainText('earlier messages summarised', { timeout: 1000 });
    if (!(await divider.evaluate((d) => (d as HTMLDetailsElement).open))) await divider.locator('summary').click();
    await expect(page.getByTestId('compaction-summary')).toContainText('A year of garden notes', { timeout: 1000 });
  }).toPass({ timeout: 15_000 });
  await divider.evaluate((el) => el.scrollIntoView({ block: 'center' }));
  await page.waitForTimeout(100);
  await page.screenshot({ path: '../docs/screenshots/compaction.png' });

  // Letta's JSON envelope is unwrapped, and an old message's time has its date.
  await expect(page.locator('[data-role=user]').filter({ hasText: '"type"' })).toHaveCount(0);
  const times = await page.locator('[data-role=user] time').allTextContents();
  expect(times.some((t) => /\d/.test(t) && t.includes(','))).toBe(true);
});

test('switching agents stays fast, whatever their history', async ({ page }) => {
  await openApp(page);
  await openAgent(page, BIG);
  await expect(page.locator('[data-testid=message]').last()).toContainText(big.messages.at(-1)!.content);
  await openAgent(page, SMALL);
  const switchTo = (name: string) =>
    page.evaluate(async (name) => {
      const t0 = performance.now();
      (document.querySelector(`[data-agent-name="${name}"] [data-testid=agent-open]`) as HTMLButtonElement).click();
      for (;;) {
        await new Promise((r) => requestAnimationFrame(r));
        const h = document.querySelector('h1')?.textContent;
        if (h === name && document.querySelector('[data-testid=chat-input]')) return performance.now() - t0;
        if (performance.now() - t0 > 5000) return Infinity;
      }
    }, name);
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    times.push(await switchTo(BIG));
    times.push(await switchTo(SMALL));
  }
  console.log(`[perf] agent switch: ${times.map((t) => t.toFixed(0)).join(', ')} ms`);
  expect(Math.max(...times)).toBeLessThanOrEqual(150);
});

test('the document never scrolls: tool cards below the fold, several window sizes, wheel over panels', async ({ page }) => {
  await openApp(page);
  await openAgent(page, BIG);
  await expect(page.locator('[data-testid=message]').last()).toContainText(big.messages.at(-1)!.content);
  // Scroll until tool-call cards (with their visually hidden status text) are in the page.
  const cards = page.locator('[data-testid=tool-call]');
  for (let i = 0; i < 40 && (await cards.count()) === 0; i++) {
    await page.locator('.vlist').evaluate((el) => (el.scrollTop -= 300));
    await page.waitForTimeout(50);
  }
  await expect(cards.first()).toBeAttached();
  await cards.first().locator('summary').click();
  for (const [width, height] of [
    [1280, 800],
    [800, 600],
    [1024, 700],
    [1600, 1000],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.waitForTimeout(100);
    await documentFits(page);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.mouse.move(100, 400);
  await page.mouse.wheel(0, 3000);
  await page.mouse.move(1200, 400);
  await page.mouse.wheel(0, 3000);
  await page.waitForTimeout(200);
  await documentFits(page);
});

test('a long agent name is readable in the list', async ({ page }) => {
  const long = 'Travel planner for the long summer holiday number 10';
  await createAgent(long);
  await openApp(page);
  const item = agentItem(page, long);
  await expect(item.getByTestId('agent-open')).toHaveAttribute('title', long);
  const box = await item.locator('.name').boundingBox();
  const text = await item.locator('.name').evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
  expect(text.scroll).toBeLessThanOrEqual(text.client);
  expect(box!.height).toBeGreaterThan(20);
});

test('Ctrl+K then Enter opens the agent without typing into the message box', async ({ page }) => {
  await openApp(page);
  await openAgent(page, BIG);
  await page.keyboard.press('Control+k');
  await page.keyboard.type(SMALL.slice(0, 5));
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { level: 1, name: SMALL })).toBeVisible();
  await expect(page.getByTestId('chat-input')).toBeFocused();
  await expect(page.getByTestId('chat-input')).toHaveValue('');
  await expect(page.getByTestId('agent-search')).toHaveValue('');
});

test('reloading during a run shows it busy with Stop, then the reply arriving', async ({ page }) => {
  await openApp(page);
  await openAgent(page, SMALL);
  // The model takes its time over this one: long enough for a reload and the agent opened
  // again on a busy machine, where four seconds were sometimes not.
  const root = engram.mockBase.replace(/\/v1$/, '');
  await fetch(`${root}/_mock/push`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ type: 'delayed', ms: 10_000, reply: { type: 'text', text: 'Here after your reload.' } }),
  });
  await page.getByTestId('chat-input').fill('take your time');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.getByTestId('stop')).toBeVisible();
  await page.reload();
  await openAgent(page, SMALL);
  await expect(page.getByTestId('stop')).toBeVisible();
  await expect(page.locator('[data-live=true]')).toBeVisible();
  await expect(page.locator('[data-testid=message][data-role=user]').last()).toContainText('take your time');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('Here after your reload.', { timeout: 25_000 });
  await expect(page.getByTestId('send')).toBeVisible();
  await expect(page.getByTestId('run-usage').last()).toBeVisible();
});

test('the composer grows with what is typed, and a long sent message folds', async ({ page }) => {
  await openApp(page);
  await openAgent(page, SMALL);
  const input = page.getByTestId('chat-input');
  const h1 = (await input.boundingBox())!.height;
  await input.fill('one\ntwo\nthree\nfour\nfive');
  const h2 = (await input.boundingBox())!.height;
  expect(h2).toBeGreaterThan(h1 + 30);
  const long = Array.from({ length: 40 }, (_, i) => `Line ${i} of a long pasted note.`).join('\n');
  await input.fill(long);
  await input.press('Enter');
  const mine = page.locator('[data-testid=message][data-role=user]').last();
  await expect(mine.getByTestId('toggle-long')).toBeVisible();
  await expect(mine).not.toContainText('Line 39');
  await mine.getByTestId('toggle-long').click();
  await expect(mine).toContainText('Line 39');
  await expect(page.getByTestId('send')).toBeVisible({ timeout: 15_000 });
});
