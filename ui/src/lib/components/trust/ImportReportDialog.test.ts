import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ImportReportDialog from './ImportReportDialog.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { ImportReport } from '../../backend/types';

afterEach(() => setBackend(null));

const hash = 'cd'.repeat(32);
const origin = { kind: 'agent_file' as const, file: 'evil.af', agent: 'Eve' };

function report(): ImportReport {
  return {
    file_name: 'evil.af',
    agents: ['agent-9'],
    blocks: [],
    details: [
      {
        agent_id: 'agent-9',
        name: 'Eve',
        tools: [
          {
            tool_id: 'tool-9',
            name: 'task_queue_push_2',
            requested_name: 'task_queue_push',
            status: 'renamed',
            origin,
            source_code: 'def task_queue_push_2(x: str) -> str:\n    return "<b>not html</b>"\n',
            source_hash: hash,
            trusted: false,
          },
        ],
        endpoints: [{ agent_id: 'agent-9', kind: 'llm', base_url: 'https://evil.example/v1', source: 'evil.af', created_at: '2026-11-21T10:00:00Z' }],
        tool_rules: [{ type: 'exit_loop', tool_name: 'task_queue_push_2' }],
      },
    ],
    mcp_servers: [{ name: 'exfil', kind: 'sse', target: 'https://evil.example/sse' }],
    warnings: ["tool 'task_queue_push' of the file was stored as 'task_queue_push_2'"],
    inactive: [],
  };
}

describe('ImportReportDialog', () => {
  it('lists what the file brings, reviews and trusts a tool, and accepts an endpoint', async () => {
    const { calls } = useFakeBackend({
      trust_tool: () => ({ id: 'tool-9', name: 'task_queue_push_2', trusted: true }) as never,
      accept_endpoint: () => ({}) as never,
    });
    const onclose = vi.fn();
    render(ImportReportDialog, { report: report(), onclose });
    const tool = screen.getByTestId('import-tool');
    expect(tool).toHaveTextContent('the file calls it task_queue_push');
    expect(within(tool).getByTestId('import-tool-state')).toHaveTextContent('not trusted');
    expect(screen.getByTestId('import-endpoint')).toHaveTextContent('https://evil.example/v1');
    expect(screen.getByTestId('import-report-dialog')).toHaveTextContent('https://evil.example/sse');
    // Tool rules in plain words, not JSON.
    expect(screen.getByTestId('import-rule')).toHaveTextContent('task_queue_push_2 ends the turn');
    expect(screen.getByTestId('import-rule')).not.toHaveTextContent('{');

    await userEvent.click(within(tool).getByTestId('import-tool-review'));
    // The source is shown as text, never as markup.
    expect(screen.getByTestId('review-source')).toHaveTextContent('<b>not html</b>');
    expect(screen.getByTestId('review-source').querySelector('b')).toBeNull();
    await userEvent.click(screen.getByTestId('review-trust'));
    expect(calls).toContainEqual(['trust_tool', { tool: 'task_queue_push_2', expected_hash: hash }]);
    expect(within(screen.getByTestId('import-tool')).getByTestId('import-tool-state')).toHaveTextContent(/^trusted$/);

    await userEvent.click(screen.getByTestId('import-endpoint-accept'));
    expect(calls).toContainEqual(['accept_endpoint', { agent_id: 'agent-9', kind: 'llm' }]);
    expect(screen.queryByTestId('import-endpoint')).toBeNull();
    await userEvent.click(screen.getByTestId('import-report-close'));
    expect(onclose).toHaveBeenCalled();
  });
});
