import { readFileSync } from 'node:fs';
import { createAgent, ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';

/**
 * Documents in the window, with real files the project did not write (Debian's libtasn1
 * manual as PDF, base-passwd's guide as HTML): a folder is made in Settings, files are picked
 * and dropped onto it, each shows what reading it gave (pages and passages, or why not), and an
 * agent is given the folder and opens a file into its context window by hand. The agent greps
 * the folder, and the citation in its reply opens the file at the cited line.
 */
const PDF = '/usr/share/doc/libtasn1-doc/libtasn1.pdf';
const HTML = '/usr/share/doc/base-passwd/users-and-groups.html';
const AGENT = 'Reader';

test.beforeAll(async () => {
  await ensureProvider();
  await createAgent(AGENT);
});

test('a folder filled by picking and dropping files, given to an agent who opens one and cites it', async ({ page }) => {
  test.setTimeout(120_000);
  await openApp(page);
  await openSettings(page, 'folders');
  await page.getByTestId('folder-name').fill('Manuals');
  await page.getByTestId('folder-create').click();
  const folder = page.locator('[data-testid=folder][data-folder-name="Manuals"]');
  await expect(folder).toBeVisible();

  // Picked: the PDF manual.
  await folder.getByTestId('folder-add-files').setInputFiles(PDF);
  // Dropped: the HTML guide and a "PDF" that is not one, together.
  const html = readFileSync(HTML).toString('base64');
  const drop = await page.evaluateHandle(
    ({ html }) => {
      const dt = new DataTransfer();
      const bytes = Uint8Array.from(atob(html), (c) => c.charCodeAt(0));
      dt.items.add(new File([bytes], 'users-and-groups.html', { type: 'text/html' }));
      dt.items.add(new File(['%PDF-1.7\nthis file was cut short'], 'broken.pdf', { type: 'application/pdf' }));
      return dt;
    },
    { html },
  );
  await folder.dispatchEvent('dragover', { dataTransfer: drop });
  await folder.dispatchEvent('drop', { dataTransfer: drop });

  // While they are read, each shows where it is; then what it gave.
  await expect(folder.getByTestId('upload-item').first()).toBeVisible();
  const file = (name: string) => folder.locator(`[data-testid=folder-file][data-file-name="${name}"]`);
  await expect(file('libtasn1.pdf')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
  await expect(file('libtasn1.pdf').getByTestId('file-outcome')).toHaveText(/\d+ pages, \d+ passages/);
  await expect(file('users-and-groups.html')).toHaveAttribute('data-status', 'completed', { timeout: 60_000 });
  await expect(file('broken.pdf')).toHaveAttribute('data-status', 'error', { timeout: 30_000 });
  await expect(file('broken.pdf').getByTestId('file-outcome')).not.toBeEmpty();
  await expect(folder.getByTestId('upload-item')).toHaveCount(0);
  await page.screenshot({ path: '../docs/screenshots/folders.png' });

  // The agent is given the folder and opens the HTML guide by hand.
  await openAgent(page, AGENT);
  await page.getByTestId('memory-tab-files').click();
  await expect(page.getByTestId('agent-files-empty')).toBeVisible();
  // Other specs' agent files may have made folders too: pick this one by name.
  await page.getByTestId('attach-folder-choice').selectOption({ label: 'Manuals' });
  await page.getByTestId('attach-folder').click();
  const mine = page.locator('[data-testid=agent-folder][data-folder-name="Manuals"]');
  await expect(mine.getByTestId('agent-file')).toHaveCount(3);
  const guide = mine.locator('[data-testid=agent-file][data-file-name="users-and-groups.html"]');
  await guide.getByTestId('open-file').click();
  await expect(guide).toHaveAttribute('data-open', 'true');

  // The opened file is in what the model reads next.
  await page.getByTestId('memory-tab-context').click();
  await expect(page.getByTestId('context-view')).toContainText('users-and-groups.html');

  // Stored, not held by the window: after a reload the file is still open.
  await page.reload();
  await openAgent(page, AGENT);
  await page.getByTestId('memory-tab-files').click();
  await expect(page.locator('[data-testid=agent-file][data-file-name="users-and-groups.html"]')).toHaveAttribute('data-open', 'true');
  await page.locator('[data-testid=agent-file][data-file-name="users-and-groups.html"]').getByTestId('close-file').click();
  await expect(page.locator('[data-testid=agent-file][data-file-name="users-and-groups.html"]')).not.toHaveAttribute('data-open', 'true');

  // The agent greps its folder; the citation in its reply opens the file at that line.
  await page.getByTestId('chat-input').fill('use tool grep_files with {"pattern": "nogroup"}');
  await page.getByTestId('send').click();
  const reply = page.locator('[data-testid=message][data-role=assistant]').last();
  const citation = reply.getByTestId('citation').first();
  await expect(citation).toHaveText(/^Manuals\/users-and-groups\.html:L\d+$/);
  const line = Number((await citation.textContent())!.split(':L')[1]);
  await citation.click();
  const viewer = page.getByTestId('file-viewer');
  await expect(viewer).toContainText('Manuals/users-and-groups.html');
  await expect(viewer.getByTestId('cited-line')).toHaveAttribute('data-line', String(line));
  await expect(viewer.getByTestId('cited-line')).toContainText('nogroup');
  await expect(viewer.getByTestId('cited-line')).toBeInViewport();
  await page.screenshot({ path: '../docs/screenshots/citation.png' });
});
