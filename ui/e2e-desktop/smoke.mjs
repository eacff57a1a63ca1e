// Smoke test of the real desktop window (run by tests/desktop/smoke.sh under Xvfb): the app
// starts, shows the agent the CLI made, streams a reply over the Tauri Channel and shows the
// agent's memory edit — IPC, events and rendering, end to end — and saves an export. Screenshots go to
// $SMOKE_SCREENSHOTS when set (the README's pictures).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { remote } from 'webdriverio';

const app = process.env.ENGRAM_DESKTOP_BIN;
if (!app) throw new Error('set ENGRAM_DESKTOP_BIN to the engram-desktop binary');
const shots = process.env.SMOKE_SCREENSHOTS;

const driver = spawn('tauri-driver', [], { stdio: ['ignore', 'inherit', 'inherit'] });
const stop = () => driver.exitCode === null && driver.kill();
process.on('exit', stop);

async function session() {
  // tauri-driver needs a moment to listen.
  for (let i = 0; ; i++) {
    try {
      return await remote({
        hostname: '127.0.0.1',
        port: 4444,
        logLevel: 'warn',
        capabilities: { 'tauri:options': { application: app }, 'wdio:enforceWebDriverClassic': true },
      });
    } catch (e) {
      if (i > 50) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

const browser = await session();
try {
  const isTauri = await browser.execute(() => '__TAURI_INTERNALS__' in window);
  if (!isTauri) throw new Error('the window does not run on the Tauri backend');

  const agent = await browser.$('[data-testid="agent-item"]*=Smoke Sam');
  await agent.waitForDisplayed({ timeout: 30_000 });
  await agent.click();

  const input = await browser.$('[data-testid="chat-input"]');
  await input.waitForDisplayed({ timeout: 10_000 });
  await input.setValue('Hi! my name is Bob');
  await (await browser.$('[data-testid="send"]')).click();

  const human = await browser.$('[data-testid="block-human"] [data-testid="block-value"]');
  await browser.waitUntil(async () => (await human.getText()).includes('Name: Bob'), {
    timeout: 30_000,
    timeoutMsg: 'the human block never showed the edit',
  });
  // The edit lands in one step and the reply streams in the next: wait for it, never read once.
  await browser.waitUntil(
    async () => (await browser.$$('[data-testid="message"][data-role="assistant"]')).length > 0,
    { timeout: 30_000, timeoutMsg: 'no assistant reply rendered' },
  );
  if (shots) await browser.saveScreenshot(join(shots, 'chat.png'));

  // Regenerate: the preview says what will be undone, then the turn runs again
  // over the Channel with the old turn's memory edit rolled back (not applied twice).
  await browser.waitUntil(async () => !(await (await browser.$('[data-testid="stop"]')).isExisting()), {
    timeout: 30_000,
    timeoutMsg: 'the first run never finished',
  });
  const before = (await browser.$$('[data-testid="message"][data-role="assistant"]')).length;
  // A message's actions show while the pointer is over it.
  const regenerate = await browser.$('[data-testid="action-regenerate"]');
  await regenerate.moveTo();
  await regenerate.click();
  const dialog = await browser.$('[data-testid="rollback-dialog"]');
  await dialog.waitForDisplayed({ timeout: 10_000 });
  await dialog.$('[data-testid="rollback-block"][data-label="human"]').waitForExist({
    timeout: 10_000,
    timeoutMsg: 'the regenerate preview does not list the human block',
  });
  await (await browser.$('[data-testid="rollback-confirm"]')).click();
  await browser.waitUntil(
    async () =>
      !(await (await browser.$('[data-testid="stop"]')).isExisting()) &&
      (await browser.$$('[data-testid="message"][data-role="assistant"]')).length === before,
    { timeout: 30_000, timeoutMsg: 'the regenerated reply never replaced the old one' },
  );
  await browser.waitUntil(async () => (await human.getText()).trim() === 'Name: Bob', {
    timeout: 10_000,
    timeoutMsg: 'after regenerate the human block is not exactly the one edit',
  });

  // The tools screen lists the built-in tools through another command.
  await (await browser.$('[data-testid="nav-tools"]')).click();
  const builtin = await browser.$('[data-testid="tool-item"]*=core_memory_append');
  await builtin.waitForDisplayed({ timeout: 10_000 });
  // …and shows which of them the agent has.
  const box = await builtin.$('input[type="checkbox"]');
  await browser.waitUntil(() => box.isSelected(), { timeout: 10_000, timeoutMsg: 'the agent\'s tools are not shown as attached' });
  if (shots) await browser.saveScreenshot(join(shots, 'tools.png'));

  // Export through the shell's save dialog. Native dialogs cannot be driven over WebDriver, so
  // this debug build takes the path the dialog would return from ENGRAM_TEST_SAVE_PATH
  // (smoke.sh sets it; release builds ignore it). The file must be an agent file that names
  // the agent, and the window must say where it went.
  const savePath = process.env.ENGRAM_TEST_SAVE_PATH;
  if (!savePath) throw new Error('set ENGRAM_TEST_SAVE_PATH to where the export should go');
  await (await browser.$('[data-testid="nav-settings"]')).click();
  await (await browser.$('[data-testid="settings-nav-transfer"]')).click();
  const save = await browser.$('[data-testid="export-save"]');
  await save.waitForDisplayed({ timeout: 10_000 });
  await save.click();
  const result = await browser.$('[data-testid="export-result"]');
  await browser.waitUntil(async () => (await result.isDisplayed()) && (await result.getText()).includes(savePath), {
    timeout: 30_000,
    timeoutMsg: 'the window did not say where the export went',
  });
  const exported = JSON.parse(readFileSync(savePath, 'utf8'));
  if (!exported.agents?.some((a) => a.name === 'Smoke Sam')) throw new Error('the exported file does not hold the agent');

  // Connect to a server (smoke.sh serves one on PostgreSQL, over HTTPS with a self-signed
  // certificate): the window reloads onto the server's agents, chats there with the
  // certificate pinned, and comes back to this computer's.
  const { REMOTE_URL, REMOTE_FINGERPRINT, REMOTE_TOKEN } = process.env;
  if (!REMOTE_URL || !REMOTE_FINGERPRINT || !REMOTE_TOKEN) throw new Error('smoke.sh serves the remote engine');
  await (await browser.$('[data-testid="settings-nav-server"]')).click();
  await (await browser.$('[data-testid="server-url"]')).setValue(REMOTE_URL);
  await (await browser.$('[data-testid="server-token"]')).setValue(REMOTE_TOKEN);
  await (await browser.$('[data-testid="server-fingerprint"]')).setValue(REMOTE_FINGERPRINT);
  await (await browser.$('[data-testid="server-connect"]')).click();
  const badge = await browser.$('[data-testid="server-badge"]');
  await badge.waitForDisplayed({ timeout: 30_000, timeoutMsg: 'the window never showed the server it works on' });
  const rita = await browser.$('[data-testid="agent-item"]*=Remote Rita');
  await rita.waitForDisplayed({ timeout: 30_000, timeoutMsg: "the server's agent is not listed" });
  if (await (await browser.$('[data-testid="agent-item"]*=Smoke Sam')).isExisting()) {
    throw new Error("this computer's agent is still listed while working on the server");
  }
  await rita.click();
  const remoteInput = await browser.$('[data-testid="chat-input"]');
  await remoteInput.waitForDisplayed({ timeout: 10_000 });
  // What a shared server does not offer yet is left out, not shown failing.
  await (await browser.$('[data-testid="memory-tab-archival"]')).waitForDisplayed({ timeout: 10_000 });
  if (await (await browser.$('[data-testid="memory-tab-files"]')).isExisting()) {
    throw new Error('the Files tab is shown on a server that has no folders');
  }
  await remoteInput.setValue('Hi! my name is Carol');
  await (await browser.$('[data-testid="send"]')).click();
  const remoteHuman = await browser.$('[data-testid="block-human"] [data-testid="block-value"]');
  await browser.waitUntil(async () => (await remoteHuman.getText()).includes('Name: Carol'), {
    timeout: 30_000,
    timeoutMsg: "the server's agent never showed its memory edit",
  });
  if (shots) await browser.saveScreenshot(join(shots, 'server.png'));
  // A hand edit of the server agent's memory, kept there: a reload shows it again.
  await browser.waitUntil(async () => !(await (await browser.$('[data-testid="stop"]')).isExisting()), {
    timeout: 30_000,
    timeoutMsg: "the server agent's run never finished",
  });
  const persona = await browser.$('[data-testid="block-persona"]');
  await (await persona.$('[data-testid="block-edit"]')).click();
  await (await persona.$('[data-testid="block-editor"]')).setValue('I am Rita. I keep the team notes.');
  await (await persona.$('[data-testid="block-save"]')).click();
  await browser.refresh();
  await (await browser.$('[data-testid="agent-item"]*=Remote Rita')).click();
  const kept = await browser.$('[data-testid="block-persona"] [data-testid="block-value"]');
  await browser.waitUntil(async () => (await kept.getText()).includes('I keep the team notes.'), {
    timeout: 30_000,
    timeoutMsg: "the hand edit of the server agent's memory was not kept there",
  });
  // …and so does the conversation, read back from the server's database.
  await browser.waitUntil(
    async () => {
      for (const m of await browser.$$('[data-testid="message"][data-role="user"]')) {
        if ((await m.getText()).includes('my name is Carol')) return true;
      }
      return false;
    },
    { timeout: 30_000, timeoutMsg: "after a reload the server agent's conversation is not shown" },
  );
  await (await browser.$('[data-testid="nav-settings"]')).click();
  await (await browser.$('[data-testid="settings-nav-server"]')).click();
  await (await browser.$('[data-testid="server-disconnect"]')).click();
  await (await browser.$('[data-testid="agent-item"]*=Smoke Sam')).waitForDisplayed({
    timeout: 30_000,
    timeoutMsg: "back on this computer, its agent is not listed",
  });
  console.log('desktop smoke: window rendered, chat streamed, memory edit shown, regenerate rolled back and ran again, export saved, worked on a pinned HTTPS server on PostgreSQL (chat, hand edit and conversation kept) and came back');
} finally {
  await browser.deleteSession();
  stop();
}
