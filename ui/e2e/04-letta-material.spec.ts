import { fileURLToPath } from 'node:url';
import { ensureProvider, expect, openAgent, openApp, openSettings, test } from './fixtures';

// A Letta agent file shaped like today's exports: path labels, skills, documents, MCP tools.
const fixture = fileURLToPath(new URL('../../tests/fixtures/agent-files/memory_tree_skills_files.af', import.meta.url));

test.beforeAll(async () => {
  await ensureProvider();
});

test('import today’s Letta material: inactive parts are listed and path labels fold into a tree', async ({ page }) => {
  await openApp(page);
  await openSettings(page, 'transfer');
  await page.getByTestId('import-file').setInputFiles(fixture);
  await expect(page.getByTestId('import-report')).toContainText('Imported 2 agents');
  const inactive = page.getByTestId('import-inactive');
  await expect(inactive).toContainText('Ezra: skill pdf');
  await expect(inactive).toContainText('Ezra: MCP server linear');
  await expect(inactive).toContainText('Ezra-sleeptime: tool memory_finish_edits');
  await page.getByTestId('import-report-close').click();

  await openAgent(page, 'Ezra');
  const system = page.getByTestId('block-folder-system');
  await expect(system).toHaveAttribute('open', '');
  await expect(system.getByTestId('block-system/human/family').getByTestId('block-value')).toHaveText(
    'Sarah has two kids, Leo (7) and Mina (4).',
  );
  await expect(page.getByTestId('block-/note_directory')).toBeVisible();
  await system.locator('summary').first().click();
  await expect(system).not.toHaveAttribute('open', '');
  await expect(system.getByTestId('block-system/persona')).toBeHidden();
});
