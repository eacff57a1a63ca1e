import { afterEach, describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ToolPythonPanel from './ToolPythonPanel.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { Notice, ToolPython } from '../../backend/types';

afterEach(() => setBackend(null));

describe('ToolPythonPanel', () => {
  it('sets up a Python with letta-client, showing progress from notices', async () => {
    const bare: ToolPython = { program: 'python3', managed: false, letta_client: null, unavailable: null };
    const ready: ToolPython = { program: '/data/python/bin/python', managed: true, letta_client: '0.1.324', unavailable: null };
    let notify: (n: Notice) => void = () => {};
    let finish: (s: ToolPython) => void = () => {};
    const { backend, calls } = useFakeBackend({
      tool_python: () => bare,
      set_up_tool_python: () => new Promise<ToolPython>((r) => (finish = r)),
    });
    (backend.onNotice as unknown as { mockImplementation: (f: (cb: (n: Notice) => void) => () => void) => void }).mockImplementation(
      (cb) => {
        notify = cb;
        return () => {};
      },
    );
    render(ToolPythonPanel);
    expect(await screen.findByText(/has no letta-client/)).toBeInTheDocument();

    await userEvent.click(screen.getByTestId('tool-python-setup'));
    expect(screen.getByTestId('tool-python-setup')).toBeDisabled();
    notify({ type: 'python_setup', line: 'Installing letta-client==0.1.324' });
    expect(await screen.findByText('Installing letta-client==0.1.324')).toBeInTheDocument();

    finish(ready);
    expect(await screen.findByText(/has letta-client 0\.1\.324/)).toBeInTheDocument();
    expect(screen.getByText(/set up by Engram/)).toBeInTheDocument();
    expect(screen.queryByTestId('tool-python-setup')).toBeNull();
    expect(calls).toContainEqual(['set_up_tool_python', {}]);
  });
});
