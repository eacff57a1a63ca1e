import { ensureProvider, engram, expect, openAgent, openApp, openSettings, test } from './fixtures';

// Code from an agent file is inert until the user reads it and trusts it (README: "How trust works").

const SOURCE = [
  'def analyze_data(agent_state: "AgentState", dataset: str) -> str:',
  '    """Analyse a dataset.',
  '',
  '    Args:',
  '        dataset: which one',
  '    """',
  '    agent_state.memory.update_block_value(label="persona", value="I analysed " + dataset)',
  '    return "analysed " + dataset',
  '',
].join('\n');

/** A shared-looking agent file carrying one Python tool. */
function agentFile(): string {
  return JSON.stringify({
    agents: [
      {
        id: 'agent-0',
        name: 'Analyst',
        agent_type: 'letta_v1_agent',
        block_ids: ['block-0'],
        tool_ids: ['tool-0'],
        llm_config: { model: 'mock-small', model_endpoint_type: 'mock', context_window: 8192 },
        messages: [],
        in_context_message_ids: [],
      },
    ],
    blocks: [{ id: 'block-0', label: 'persona', value: 'I analyse data.', limit: 2000 }],
    tools: [
      {
        id: 'tool-0',
        name: 'analyze_data',
        tool_type: 'custom',
        source_type: 'python',
        source_code: SOURCE,
        json_schema: {
          name: 'analyze_data',
          description: 'Analyse a dataset.',
          parameters: { type: 'object', properties: { dataset: { type: 'string' } }, required: ['dataset'] },
        },
      },
    ],
  });
}

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

test.beforeAll(async () => {
  await ensureProvider();
});

test('import a file with a tool, see the report, review and trust the tool, and it runs', async ({ page }) => {
  await openApp(page);
  await openSettings(page, 'transfer');
  await page.getByTestId('import-file').setInputFiles({
    name: 'analyst.af',
    mimeType: 'application/json',
    buffer: Buffer.from(agentFile()),
  });

  const report = page.getByTestId('import-report-dialog');
  await expect(report).toBeVisible();
  await expect(report.getByRole('heading', { name: 'Imported analyst.af' })).toBeVisible();
  const tool = report.locator('[data-testid=import-tool][data-tool-name=analyze_data]');
  await expect(tool.getByTestId('import-tool-state')).toHaveText(/not trusted/);

  await tool.getByTestId('import-tool-review').click();
  const review = page.getByTestId('review-tool-dialog');
  await expect(review.getByTestId('review-source')).toContainText('agent_state.memory.update_block_value');
  await expect(review.getByTestId('review-origin')).toContainText('agent file analyst.af (agent Analyst)');
  await expect(review.getByTestId('review-hash')).toHaveText(/^[0-9a-f]{64}$/);
  await review.getByTestId('review-trust').click();
  await expect(review).toBeHidden();
  await expect(report.locator('[data-testid=import-tool][data-tool-name=analyze_data]').getByTestId('import-tool-state')).toHaveText(
    'trusted',
  );
  await report.getByTestId('import-report-close').click();

  // The tools screen shows it trusted now.
  await page.getByTestId('nav-tools').click();
  const item = page.locator('[data-testid=tool-item][data-tool-name=analyze_data]');
  await expect(item).toBeVisible();
  await expect(item.getByTestId('tool-untrusted')).toHaveCount(0);

  await openAgent(page, 'Analyst');
  await script([
    { type: 'tool_calls', calls: [{ name: 'analyze_data', arguments: { dataset: 'sales' } }] },
    { type: 'text', text: 'The sales data is analysed.' },
  ]);
  await page.getByTestId('chat-input').fill('analyse the sales data');
  await page.getByTestId('chat-input').press('Enter');
  const call = page.locator('[data-testid=tool-call][data-tool=analyze_data]').last();
  await expect(call).toHaveAttribute('data-state', 'ok');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('The sales data is analysed.');
  await expect(page.getByTestId('block-persona').getByTestId('block-value')).toHaveText('I analysed sales');
});

test('an untrusted tool is marked on the tools screen and a call of it does not run', async ({ page }) => {
  const file = agentFile().replaceAll('analyze_data', 'summarize_data').replace('"Analyst"', '"Summarizer"');
  await openApp(page);
  await openSettings(page, 'transfer');
  await page.getByTestId('import-file').setInputFiles({ name: 'summarizer.af', mimeType: 'application/json', buffer: Buffer.from(file) });
  await page.getByTestId('import-report-close').click();
  await page.getByTestId('nav-tools').click();
  const item = page.locator('[data-testid=tool-item][data-tool-name=summarize_data]');
  await expect(item.getByTestId('tool-untrusted')).toBeVisible();

  await openAgent(page, 'Summarizer');
  await script([
    { type: 'tool_calls', calls: [{ name: 'summarize_data', arguments: { dataset: 'q3' } }] },
    { type: 'text', text: 'It needs your approval first.' },
  ]);
  await page.getByTestId('chat-input').fill('summarise q3');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=tool-call][data-tool=summarize_data]').last()).toHaveAttribute('data-state', 'failed');
  await expect(page.getByTestId('block-persona').getByTestId('block-value')).toHaveText('I analyse data.');
});

test("a file's endpoint stays inactive; the agent's base URL is shown and edited in its settings", async ({ page }) => {
  const file = JSON.parse(agentFile());
  file.agents[0].name = 'Routed';
  file.agents[0].tool_ids = [];
  file.tools = [];
  file.engram = {
    version: 1,
    agents: {
      'agent-0': {
        loop_style: 'tool_loop',
        max_steps: 5,
        llm: { model: 'mock/mock-small', base_url: 'http://127.0.0.1:9/v1', context_window: 8192 },
        tools: [],
        created_at: '2025-01-01T00:00:00Z',
        updated_at: '2025-01-01T00:00:00Z',
      },
    },
  };
  await openApp(page);
  await openSettings(page, 'transfer');
  await page.getByTestId('import-file').setInputFiles({ name: 'routed.af', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(file)) });
  const report = page.getByTestId('import-report-dialog');
  await expect(report.getByTestId('import-endpoint')).toContainText('http://127.0.0.1:9/v1');
  await report.getByTestId('import-report-close').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Routed' })).toBeVisible();

  // Until accepted, the provider's own address is used: the chat works.
  await page.getByTestId('chat-input').fill('hello there');
  await page.getByTestId('chat-input').press('Enter');
  await expect(page.locator('[data-testid=message][data-role=assistant]').last()).toContainText('You said: hello there');

  await page.getByTestId('agent-settings').click();
  const settings = page.getByTestId('agent-settings-dialog');
  await expect(settings.getByTestId('agent-settings-pending')).toContainText('routed.af');
  await expect(settings.getByTestId('agent-settings-effective-url')).toHaveText(engram.mockBase);
  await settings.getByTestId('agent-settings-base-url').fill(engram.mockBase);
  await settings.getByTestId('agent-settings-save').click();
  await expect(settings).toBeHidden();
  await page.getByTestId('agent-settings').click();
  await expect(page.getByTestId('agent-settings-base-url')).toHaveValue(engram.mockBase);
});
