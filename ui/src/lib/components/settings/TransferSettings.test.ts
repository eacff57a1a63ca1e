import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import TransferSettings from './TransferSettings.svelte';
import { setBackend } from '../../backend';
import { agent, useFakeBackend } from '../../../test/fakeBackend';
import type { ImportReport } from '../../backend/types';

afterEach(() => setBackend(null));

describe('TransferSettings import', () => {
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
    render(TransferSettings, { agents: [], onimported, onshowreport });
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

function upload(name: string, text: string) {
  const file = new File([text], name, { type: 'application/json' });
  Object.defineProperty(file, 'text', { value: async () => text });
  return userEvent.upload(screen.getByTestId('import-file'), file);
}

describe('TransferSettings errors', () => {
  it('shows an import error beside the picker, naming the file', async () => {
    useFakeBackend({
      import_agent_file: () => {
        throw Object.assign(new Error('agent file: unexpected value at agents[0].messages[3].role'), { code: 'invalid_input' });
      },
    });
    render(TransferSettings, { agents: [], onimported: vi.fn() });
    await upload('broken.af', '{}');
    const err = await screen.findByTestId('import-error');
    expect(err).toHaveTextContent('Could not import broken.af: agent file: unexpected value at agents[0].messages[3].role');
    // Right after the picker, not at the top of the page.
    expect(screen.getByTestId('import-file').nextElementSibling).toBe(err);
  });
});

describe('TransferSettings export', () => {
  it('exports the chosen agent in the chosen format and says where it went', async () => {
    const { backend } = useFakeBackend({});
    backend.saveExport = vi.fn(async () => ({ kind: 'path' as const, where: '/home/me/Sam.md' }));
    render(TransferSettings, { agents: [agent({ id: 'agent-1', name: 'Sam' }), agent({ id: 'agent-2', name: 'Kim' })], onimported: vi.fn() });
    await userEvent.selectOptions(screen.getByTestId('export-scope'), 'agent-1');
    await userEvent.selectOptions(screen.getByTestId('export-format'), 'markdown');
    await userEvent.click(screen.getByTestId('export-save'));
    expect(await screen.findByTestId('export-result')).toHaveTextContent('Saved to /home/me/Sam.md');
    expect(backend.saveExport).toHaveBeenCalledWith({ agent_ids: ['agent-1'], format: 'markdown' });
  });

  it('exports every agent by default and says nothing when the dialog was cancelled', async () => {
    const { backend } = useFakeBackend({});
    backend.saveExport = vi.fn(async () => null);
    render(TransferSettings, { agents: [agent()], onimported: vi.fn() });
    await userEvent.click(screen.getByTestId('export-save'));
    expect(backend.saveExport).toHaveBeenCalledWith({ agent_ids: undefined, format: 'af' });
    expect(screen.queryByTestId('export-result')).toBeNull();
    expect(screen.queryByTestId('export-error')).toBeNull();
  });

  it('imports through the native dialog when the backend has one', async () => {
    const { backend } = useFakeBackend({});
    const report: ImportReport = { file_name: 'sam.af', agents: ['agent-9'], blocks: [], details: [], mcp_servers: [], warnings: [], inactive: [] };
    backend.importFromDialog = vi.fn(async () => report);
    const onimported = vi.fn();
    render(TransferSettings, { agents: [], onimported });
    expect(screen.queryByTestId('import-file')).toBeNull();
    await userEvent.click(screen.getByTestId('import-open'));
    expect(await screen.findByTestId('import-report')).toHaveTextContent('Imported 1 agent from sam.af');
    expect(onimported).toHaveBeenCalledWith(report);
  });
});
