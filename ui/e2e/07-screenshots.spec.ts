import type { Page } from '@playwright/test';
import { createAgent, ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';

// The chat, the memory panel and the settings at three window sizes, for the docs and for
// looking at: docs/screenshots/{chat,memory,settings}-{600,800,1280}.png.

const SIZES = [
  [600, 800],
  [800, 600],
  [1280, 800],
] as const;

const SHOTS = '../docs/screenshots';

test.beforeAll(async () => {
  await ensureProvider();
});

async function say(page: Page, text: string, reply: string): Promise<void> {
  await page.getByTestId('chat-input').fill(text);
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText(reply);
  await expect(page.getByTestId('send')).toBeVisible();
}

test('screenshots at 600, 800 and 1280 px wide', async ({ page }) => {
  test.setTimeout(120_000);
  await createAgent('Ada');
  await createAgent('Travel planner for the long summer holiday');
  await createAgent('Recipes and shopping lists for the week');
  await page.setViewportSize({ width: 1280, height: 800 });
  await openApp(page);
  await openAgent(page, 'Ada');
  await say(page, 'my name is Bob', 'Nice to meet you, Bob!');
  await say(page, 'remember that the tulips bloom in April', 'archival memory');
  await page.mouse.move(0, 0);

  for (const [width, height] of SIZES) {
    await page.setViewportSize({ width, height });
    await openAgent(page, 'Ada');
    const narrow = width <= 1100;
    // The pointer rests on empty sidebar space, so no row shows its hover buttons.
    await page.mouse.move(40, height - 140);
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${SHOTS}/chat-${width}.png` });

    // Nothing overlaps in the header: the buttons stay whole and apart.
    const boxes = await Promise.all(
      ['agent-settings', 'agent-export', ...(narrow ? ['memory-toggle'] : [])].map((id) => page.getByTestId(id).boundingBox()),
    );
    for (let i = 1; i < boxes.length; i++) expect(boxes[i]!.x).toBeGreaterThanOrEqual(boxes[i - 1]!.x + boxes[i - 1]!.width);
    expect(boxes.at(-1)!.x + boxes.at(-1)!.width).toBeLessThanOrEqual(width);

    if (narrow) await page.getByTestId('memory-toggle').click();
    await expect(page.getByTestId('memory-panel')).toBeVisible();
    await page.getByTestId('block-human').getByTestId('block-history-toggle').click();
    await expect(page.getByTestId('block-human').getByTestId('block-history-item').first()).toBeVisible();
    await page.mouse.move(width - 20, height - 20);
    await page.waitForTimeout(200);
    await page.screenshot({ path: `${SHOTS}/memory-${width}.png` });
    await page.getByTestId('block-human').getByTestId('block-history-toggle').click();
    if (narrow) await page.getByTestId('memory-close').click();

    await openSettings(page, 'providers');
    await page.mouse.move(40, height - 140);
    await page.waitForTimeout(200);
    await page.screenshot({ path: `${SHOTS}/settings-${width}.png` });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});
