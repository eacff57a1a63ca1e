import { agentItem, command, createAgent, engram, ensureProvider, expect, openAgent, openApp, test } from './fixtures';
import type { Page } from '@playwright/test';

// Message actions: regenerate and edit & resend roll back exactly the replaced
// turn's memory edits and passages (asserted through the engine, not only the DOM); diffs and
// usage lines come from stored data, identical after a reload; a dropped connection says so,
// keeps the partial reply and offers Retry; copy, delete, new conversation.

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

/** One turn: the model appends `fact` to the human block, archives it, then answers. */
async function scriptTurn(fact: string): Promise<void> {
  await script([
    {
      type: 'tool_calls',
      calls: [
        { name: 'core_memory_append', arguments: { label: 'human', content: fact } },
        { name: 'archival_memory_insert', arguments: { content: `fact: ${fact}` } },
      ],
    },
    { type: 'text', text: `Noted: ${fact}.` },
  ]);
}

async function say(page: Page, text: string, reply: string): Promise<void> {
  await page.getByTestId('chat-input').fill(text);
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText(reply);
  await expect(page.getByTestId('stop')).toBeHidden();
}

async function agentId(page: Page, name: string): Promise<string> {
  return (await agentItem(page, name).getAttribute('data-agent-id'))!;
}

async function human(id: string): Promise<string> {
  const blocks = await command<{ label: string; value: string }[]>('list_blocks', { agent_id: id });
  return blocks.find((b) => b.label === 'human')!.value;
}

async function passages(id: string): Promise<string[]> {
  const page = await command<{ passages: { text: string }[] }>('list_passages', { agent_id: id, list: { offset: 0, limit: 50 } });
  return page.passages.map((p) => p.text).sort();
}

async function contents(id: string): Promise<string[]> {
  const msgs = await command<{ role: string; content: string }[]>('list_messages', { agent_id: id, limit: 100 });
  return msgs.filter((m) => m.role !== 'tool').map((m) => m.content);
}

test.beforeAll(async () => {
  await ensureProvider();
});

test('regenerate shows what it undoes and rolls back exactly the last turn', async ({ page }) => {
  await createAgent('Regen');
  await openApp(page);
  await openAgent(page, 'Regen');
  const id = await agentId(page, 'Regen');
  await scriptTurn('likes kiwi');
  await say(page, 'I like kiwi', 'Noted: likes kiwi.');
  await scriptTurn('likes mango');
  await say(page, 'I like mango', 'Noted: likes mango.');
  expect(await human(id)).toBe('likes kiwi\nlikes mango');

  await page.getByTestId('action-regenerate').click();
  const dialog = page.getByTestId('rollback-dialog');
  await expect(dialog.locator('[data-testid=rollback-block][data-label=human]')).toBeVisible();
  await expect(dialog.getByTestId('rollback-passage')).toHaveText(/fact: likes mango/);
  await expect(dialog.getByTestId('rollback-passage')).toHaveCount(1);
  await page.screenshot({ path: 'test-results/chat-actions.png' });
  await scriptTurn('likes papaya');
  await dialog.getByTestId('rollback-confirm').click();
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('Noted: likes papaya.');
  await expect(page.getByTestId('stop')).toBeHidden();

  // The engine holds exactly the first turn and the regenerated one.
  expect(await human(id)).toBe('likes kiwi\nlikes papaya');
  expect(await passages(id)).toEqual(['fact: likes kiwi', 'fact: likes papaya']);
  const texts = await contents(id);
  expect(texts.filter((t) => t.includes('mango') && !t.startsWith('I like'))).toEqual([]);
  expect(texts.filter((t) => t === 'I like mango')).toHaveLength(1);
  await expect(page.getByTestId('block-human').getByTestId('block-value')).toHaveText('likes kiwi\nlikes papaya');
  await expect(page.locator('[data-testid=message]', { hasText: 'Noted: likes mango.' })).toHaveCount(0);
});

test('edit & resend rolls back from the edited message', async ({ page }) => {
  await createAgent('Resend');
  await openApp(page);
  await openAgent(page, 'Resend');
  const id = await agentId(page, 'Resend');
  await scriptTurn('likes kiwi');
  await say(page, 'I like kiwi', 'Noted: likes kiwi.');
  await scriptTurn('likes mango');
  await say(page, 'I like mango', 'Noted: likes mango.');

  const first = page.locator('[data-testid=message][data-role=user]').first();
  await first.getByTestId('action-edit').click();
  await first.getByTestId('edit-text').fill('I like figs');
  await first.getByTestId('edit-send').click();
  const dialog = page.getByTestId('rollback-dialog');
  await expect(dialog.getByTestId('rollback-passage')).toHaveCount(2);
  await scriptTurn('likes figs');
  await dialog.getByTestId('rollback-confirm').click();
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('Noted: likes figs.');
  await expect(page.getByTestId('stop')).toBeHidden();

  expect(await human(id)).toBe('likes figs');
  expect(await passages(id)).toEqual(['fact: likes figs']);
  expect((await contents(id))[0]).toBe('I like figs');
  await expect(page.locator('[data-testid=message][data-role=user]')).toHaveCount(1);
});

test('a turn whose block was edited by hand since is refused, and nothing is lost', async ({ page }) => {
  await createAgent('Guarded');
  await openApp(page);
  await openAgent(page, 'Guarded');
  const id = await agentId(page, 'Guarded');
  await scriptTurn('likes kiwi');
  await say(page, 'I like kiwi', 'Noted: likes kiwi.');
  await command('update_block', { agent_id: id, label: 'human', patch: { value: 'checked by hand' } });
  await page.getByTestId('action-regenerate').click();
  await expect(page.getByTestId('rollback-conflict')).toContainText('human');
  await expect(page.getByTestId('rollback-confirm')).toBeDisabled();
  await page.getByTestId('rollback-cancel').click();
  expect(await human(id)).toBe('checked by hand');
  expect(await passages(id)).toEqual(['fact: likes kiwi']);
});

test('memory diffs sit under the call that made them, the same after a reload', async ({ page }) => {
  await createAgent('Diffs');
  await createAgent('Diffs Elsewhere');
  await openApp(page);
  await openAgent(page, 'Diffs');
  await script([
    {
      type: 'tool_calls',
      calls: [
        { name: 'core_memory_append', arguments: { label: 'human', content: 'Name: Ann' } },
        { name: 'core_memory_append', arguments: { label: 'human', content: 'Likes tea' } },
      ],
    },
    { type: 'text', text: 'Hello Ann.' },
  ]);
  await say(page, 'I am Ann and I like tea', 'Hello Ann.');

  async function shown(): Promise<{ diffs: string[]; usage: string }> {
    const calls = page.locator('[data-testid=tool-call][data-tool=core_memory_append]');
    await expect(calls).toHaveCount(2);
    const diffs: string[] = [];
    for (const call of await calls.all()) {
      await call.locator('summary').click();
      // Each part of the word diff as `ins:…`, `del:…` or `span:…`.
      diffs.push(
        await call
          .getByTestId('diff')
          .evaluate((el) => [...el.children].map((c) => `${c.tagName.toLowerCase()}:${c.textContent}`).join('|')),
      );
    }
    // The usage line is read back after the run's steps; wait for it rather than read it once.
    const usage = page.getByTestId('run-usage').last();
    await expect(usage).toHaveText(/\d/);
    return { diffs, usage: (await usage.textContent())!.trim() };
  }
  const live = await shown();
  // Two edits in one step: each call shows only its own insertion.
  expect(live.diffs[0]).toBe('ins:Name: Ann');
  expect(live.diffs[1]).toBe('span:Name: Ann|ins:\nLikes tea');

  await page.reload();
  await openAgent(page, 'Diffs');
  expect(await shown()).toEqual(live);

  // An agent switch and back shows the same too.
  await openAgent(page, 'Diffs Elsewhere');
  await openAgent(page, 'Diffs');
  expect(await shown()).toEqual(live);
});

test('a model server dying mid-reply says so, keeps the partial reply, and Retry runs again', async ({ page }) => {
  await createAgent('Dropped');
  await openApp(page);
  await openAgent(page, 'Dropped');
  const id = await agentId(page, 'Dropped');
  await script([{ type: 'garbage' }]);
  await page.getByTestId('chat-input').fill('tell me something');
  await page.getByTestId('chat-input').press('Enter');
  const err = page.getByTestId('chat-error');
  await expect(err).toContainText('connection to the model server dropped');
  await expect(err).not.toContainText('cannot read');
  await expect(page.getByTestId('stop')).toBeHidden();
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('Hello');
  // The partial reply is stored, and the run's usage counts the call that was made.
  expect((await contents(id)).at(-1)).toContain('Hello');
  await expect(page.getByTestId('run-usage').last()).toContainText('1 step');
  // "0 tokens" as the whole count ("1,310 tokens" ends with "0 tokens" too).
  await expect(page.getByTestId('run-usage').last()).not.toContainText(/(^|[^\d,])0 tokens/);

  await script([{ type: 'text', text: 'Back again, all in one piece.' }]);
  await err.getByTestId('retry').click();
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('Back again');
  await expect(page.getByTestId('stop')).toBeHidden();
  expect(await contents(id)).toEqual(['tell me something', 'Back again, all in one piece.']);
});

test('copy a reply, delete a message, start a new conversation', async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: engram.url });
  await createAgent('Actions');
  await openApp(page);
  await openAgent(page, 'Actions');
  const id = await agentId(page, 'Actions');
  await script([{ type: 'text', text: 'Tulips bloom in April.' }]);
  await say(page, 'when do tulips bloom?', 'Tulips bloom in April.');
  await script([{ type: 'text', text: 'Roses in June.' }]);
  await say(page, 'and roses?', 'Roses in June.');

  const reply = page.locator('[data-testid=message][data-role=assistant]').first();
  await reply.getByTestId('action-copy').click();
  await expect(reply.getByTestId('action-copy')).toHaveAccessibleName('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('Tulips bloom in April.');

  const question = page.locator('[data-testid=message][data-role=user]', { hasText: 'and roses?' });
  await question.getByTestId('action-delete').click();
  await page.getByTestId('confirm-ok').click();
  await expect(question).toHaveCount(0);
  expect(await contents(id)).toEqual(['when do tulips bloom?', 'Tulips bloom in April.', 'Roses in June.']);

  await expect(page.getByTestId('context-meter')).not.toContainText('Messages 0');
  await page.getByTestId('new-conversation').click();
  await page.getByTestId('confirm-ok').click();
  // Seen at once, before anything is said: the divider under the old messages, and a meter
  // with no messages in the window.
  await expect(page.getByTestId('window-start')).toBeVisible();
  await expect(page.getByTestId('context-meter')).toContainText('Messages 0');
  await script([{ type: 'text', text: 'Fresh start.' }]);
  await say(page, 'hello again', 'Fresh start.');
  await expect(page.getByTestId('window-start')).toBeVisible();
  const msgs = await command<{ content: string; in_context: boolean }[]>('list_messages', { agent_id: id, limit: 100 });
  expect(msgs.filter((m) => m.in_context).map((m) => m.content)).toEqual(['hello again', 'Fresh start.']);
  // The old messages stay searchable in recall.
  const hits = await command<{ message: { content: string } }[]>('search_recall', { agent_id: id, query: 'tulips', limit: 5 });
  expect(hits.some((h) => h.message.content.includes('Tulips bloom in April.'))).toBe(true);
});
