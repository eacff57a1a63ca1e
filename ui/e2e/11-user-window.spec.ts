import { spawnSync } from 'node:child_process';
import { agentItem, createAgent, engram, ensureProvider, expect, openAgent, test } from './fixtures';

// A user of a shared `engram serve` opens the window with a token of their own: they see and
// chat with their agents only, the administrator's stay out of sight, and nothing on the way
// fails for lack of the administrator's rights.

/** A user made with the CLI as an administrator would, and a token of theirs. */
function userToken(name: string): string {
  const env = { ...process.env, ENGRAM_HOME: engram.home, ENGRAM_SECRETS: 'memory' };
  const add = spawnSync(engram.bin, ['user', 'add', name], { env, encoding: 'utf8' });
  if (add.status !== 0) throw new Error(`engram user add: ${add.stderr}`);
  const token = spawnSync(engram.bin, ['user', 'token', name], { env, encoding: 'utf8' });
  if (token.status !== 0) throw new Error(`engram user token: ${token.stderr}`);
  return token.stdout.trim();
}

test('a user sees and chats with their own agents only', async ({ page }) => {
  await ensureProvider();
  await createAgent('Admin Only');
  const token = userToken('ben');
  const failed: string[] = [];
  page.on('response', (r) => {
    if (r.url().includes('/app/') && r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
  });
  await page.goto(`${engram.url}/#token=${token}`);
  // Providers, tools and settings are the administrator's: not offered, no guided setup.
  await expect(page.getByTestId('signed-in-user')).toHaveText('Signed in as ben');
  await expect(page.getByTestId('nav-settings')).toHaveCount(0);
  await expect(page.getByTestId('user-no-agents')).toBeVisible();
  await expect(agentItem(page, 'Admin Only')).toHaveCount(0);

  await page.getByTestId('new-agent').click();
  await page.getByTestId('new-agent-name').fill('Ben Helper');
  await page.getByTestId('new-agent-model').fill('mock/mock-small');
  await page.getByTestId('new-agent-create').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Ben Helper' })).toBeVisible();
  await expect(agentItem(page, 'Ben Helper')).toBeVisible();
  await openAgent(page, 'Ben Helper');
  // Sharing blocks and cloning agents are the administrator's: not offered either.
  await expect(page.getByTestId('block-attach')).toHaveCount(0);
  await expect(page.getByTestId('agent-clone')).toHaveCount(0);
  await page.getByTestId('chat-input').fill('my name is Bob');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('Nice to meet you, Bob!');
  // The memory change reaches the window through the user's own notice stream.
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('Name: Bob');
  await page.reload();
  await expect(page.getByRole('heading', { level: 1, name: 'Ben Helper' })).toBeVisible();
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('Name: Bob');
  await expect(agentItem(page, 'Admin Only')).toHaveCount(0);
  await page.screenshot({ path: 'test-results/user-window.png' });
  // Every view of the agent opens without asking for the administrator's rights.
  for (const tab of ['archival', 'recall', 'files', 'context', 'away', 'core']) {
    await page.getByTestId(`memory-tab-${tab}`).click();
    await expect(page.getByTestId(`memory-tab-${tab}`)).toHaveAttribute('aria-selected', 'true');
  }
  await page.getByTestId('agent-settings').click();
  await expect(page.getByTestId('agent-settings-max-tokens')).toBeVisible();
  await page.keyboard.press('Escape');
  // An address naming the settings leaves a user's window on the chat.
  await page.goto(`${engram.url}/#/settings/providers`);
  await page.reload();
  await expect(page.getByRole('heading', { level: 1, name: 'Ben Helper' })).toBeVisible();
  await expect(page.getByTestId('settings')).toHaveCount(0);
  expect(failed).toEqual([]);
});
