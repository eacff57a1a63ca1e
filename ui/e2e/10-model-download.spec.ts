import { command, engram, expect, openApp, openSettings, test } from './fixtures';

// Downloading a catalogue model in Settings, from a stand-in for Hugging Face serving the real
// SmolLM2 GGUF (global-setup's mirror): progress, cancel, resume with a Range request, the
// verified model registered and made the default; and a damaged file refused with its reason.

const NAME = 'smollm2-135m-instruct-q4_1';

async function mirror(path: string): Promise<string> {
  return (await fetch(`${engram.llmMirror}${path}`, { method: path === '/_ranges' ? 'GET' : 'POST' })).text();
}

test.afterEach(async () => {
  await mirror('/_throttle?bytes=0');
  await mirror('/_corrupt?on=0');
});

test('a catalogue model downloads with progress, is cancelled, resumes and is used', async ({ page }) => {
  expect(process.env.ENGRAM_TEST_GGUF, 'ENGRAM_TEST_GGUF names the SmolLM2 GGUF (tests/run.sh fetches it)').toBeTruthy();
  // 64 kB per 10 ms: about 6 MB/s, so the bar is seen moving before the cancel.
  await mirror('/_throttle?bytes=65536');
  const before = await command<string>('get_default_model');
  await openApp(page);
  await openSettings(page, 'models');
  const row = page.getByTestId(`catalogue-${NAME}`);
  await expect(row).toContainText('98 MB');
  await expect(row).toContainText('Apache-2.0');
  await expect(row).toContainText('tool calling: poor');
  await expect(row).toHaveAttribute('data-state', 'absent');
  await row.getByTestId('catalogue-download').click();

  const text = row.getByTestId('catalogue-progress-text');
  await expect(text).toContainText('of 98 MB');
  await expect(async () => {
    const pct = Number(/\((\d+)%\)/.exec((await text.textContent()) ?? '')?.[1] ?? 0);
    expect(pct).toBeGreaterThanOrEqual(3);
  }).toPass({ timeout: 20_000 });
  await row.getByTestId('catalogue-cancel').click();
  await expect(row).toHaveAttribute('data-state', 'partial');
  await expect(row.getByTestId('catalogue-partial')).toContainText('downloaded so far');
  await expect(row.getByTestId('catalogue-error')).toHaveCount(0);

  // Resumed at full speed: the mirror is asked for the rest only.
  await mirror('/_throttle?bytes=0');
  await row.getByTestId('catalogue-resume').click();
  await expect(row).toHaveAttribute('data-state', 'downloaded', { timeout: 30_000 });
  const ranges = JSON.parse(await mirror('/_ranges')) as (string | null)[];
  expect(ranges.at(-1)).toMatch(/^bytes=[1-9]\d*-$/);

  // Registered: listed among the built-in models, and one click makes it the default.
  await expect(page.getByTestId(`builtin-model-${NAME}`)).toContainText(`local/${NAME}`);
  await row.getByTestId('catalogue-use').click();
  await expect(row).toContainText('default for new agents');
  expect(await command<string>('get_default_model')).toBe(`local/${NAME}`);
  expect(await command('check_model', { handle: `local/${NAME}` })).toBeNull();

  // Deleted: the file and its registration go.
  await row.getByTestId('catalogue-delete').click();
  await expect(row).toHaveAttribute('data-state', 'absent');
  await expect(page.getByTestId(`builtin-model-${NAME}`)).toHaveCount(0);
  await command('set_default_model', { handle: before });
});

test('a damaged download is refused with its reason and nothing is kept', async ({ page }) => {
  await mirror('/_corrupt?on=1');
  await openApp(page);
  await openSettings(page, 'models');
  const row = page.getByTestId(`catalogue-${NAME}`);
  await row.getByTestId('catalogue-download').click();
  const error = row.getByTestId('catalogue-error');
  await expect(error).toContainText('damaged', { timeout: 30_000 });
  await expect(error).toContainText('deleted');
  await expect(row).toHaveAttribute('data-state', 'absent');
  const entries = await command<{ model: { name: string }; partial_bytes: number; registered: boolean }[]>('model_catalogue');
  const entry = entries.find((e) => e.model.name === NAME)!;
  expect(entry.partial_bytes).toBe(0);
  expect(entry.registered).toBe(false);
});
