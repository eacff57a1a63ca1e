import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import AppSettings from './AppSettings.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { ImportReport } from '../../backend/types';

afterEach(() => setBackend(null));

describe('AppSettings import', () => {
  it('lists, per agent, what was imported but is not active', async () => {
    const report: ImportReport = {
      file_name: 'ezra.af',
      agents: ['agent-1'],
      blocks: [],
      details: [],
      mcp_servers: [],
      warnings: [],
      inactive: [
        { agent: 'agent-1', agent_name: 'Ezra', kind: 'skill', name: 'pdf', reason: 'Engram does not load skills; kept for export' },
        { agent: 'agent-1', agent_name: 'Ezra', kind: 'mcp_server', name: 'linear', reason: 'not connected' },
      ],
    };
    const { calls } = useFakeBackend({ import_agent_file: () => report });
    const onimported = vi.fn();
    const onshowreport = vi.fn();
    render(AppSettings, { onimported, onshowreport });
    const file = new File(['{"agents": []}'], 'ezra.af', { type: 'application/json' });
    // jsdom's File has no text(); the browser's does.
    Object.defineProperty(file, 'text', { value: async () => '{"agents": []}' });
    await userEvent.upload(screen.getByTestId('import-file'), file);
    const list = await screen.findByTestId('import-inactive');
    const items = within(list).getAllByRole('listitem');
    expect(items).toHaveLength(2);
    expect(items[0]).toHaveTextContent('Ezra: skill pdf — Engram does not load skills');
    expect(items[1]).toHaveTextContent('Ezra: MCP server linear — not connected');
    expect(calls.some(([c]) => c === 'import_agent_file')).toBe(true);
    expect(onimported).toHaveBeenCalledWith(report);
    // The whole report (what waits for review) opens again on request.
    await userEvent.click(screen.getByTestId('import-report-open'));
    expect(onshowreport).toHaveBeenCalledWith(report);
  });
});
