import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import FolderSettings from './FolderSettings.svelte';
import { BackendError, setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { Folder, FolderFile, FolderWatch, Notice } from '../../backend/types';

afterEach(() => setBackend(null));

const desk: Folder = {
  id: 'source-1',
  name: 'desk',
  description: '',
  instructions: '',
  embedding: null,
  created_at: '2026-11-21T10:00:00Z',
  updated_at: '2026-11-21T10:00:00Z',
};

describe('FolderSettings', () => {
  it('links a folder to a typed directory, shows a refused one, and stops following', async () => {
    let watches: FolderWatch[] = [];
    const { calls } = useFakeBackend({
      list_folders: () => [desk],
      folder_files: () => [],
      folder_watches: () => watches,
      watch_folder: ({ folder_id, path }) => {
        if (path === '/nowhere') throw new BackendError('invalid_input', 'cannot watch /nowhere: No such file or directory');
        const w: FolderWatch = { folder_id, path, state: 'linked', error: null, synced_at: null };
        watches = [w];
        return w;
      },
      unwatch_folder: () => {
        watches = [];
        return true;
      },
    });
    render(FolderSettings);
    await userEvent.click(await screen.findByTestId('folder-watch'));
    await userEvent.type(screen.getByTestId('folder-watch-path'), '/nowhere');
    await userEvent.click(screen.getByTestId('folder-watch-submit'));
    expect(await screen.findByRole('alert')).toHaveTextContent('cannot watch /nowhere');

    await userEvent.clear(screen.getByTestId('folder-watch-path'));
    await userEvent.type(screen.getByTestId('folder-watch-path'), ' /home/me/notes ');
    await userEvent.click(screen.getByTestId('folder-watch-submit'));
    const state = await screen.findByTestId('folder-watch-state');
    expect(state).toHaveTextContent('Follows /home/me/notes');
    expect(state).toHaveAttribute('data-state', 'linked');
    expect(calls).toContainEqual(['watch_folder', { folder_id: 'source-1', path: '/home/me/notes' }]);

    await userEvent.click(screen.getByTestId('folder-unwatch'));
    expect(await screen.findByTestId('folder-watch')).toBeInTheDocument();
    expect(screen.queryByTestId('folder-watch-state')).toBeNull();
    expect(calls).toContainEqual(['unwatch_folder', { folder_id: 'source-1' }]);
  });

  it('follows a directory picked in the native dialog, and does nothing when it is cancelled', async () => {
    let watches: FolderWatch[] = [];
    const { backend } = useFakeBackend({
      list_folders: () => [desk],
      folder_files: () => [],
      folder_watches: () => watches,
    });
    const picked: string[] = [];
    let answer: FolderWatch | null = null;
    backend.pickWatchDir = vi.fn(async (folderId: string) => {
      picked.push(folderId);
      if (answer) watches = [answer];
      return answer;
    });
    render(FolderSettings);
    await userEvent.click(await screen.findByTestId('folder-watch'));
    expect(picked).toEqual(['source-1']);
    expect(screen.queryByTestId('folder-watch-path')).toBeNull();
    expect(screen.queryByTestId('folder-watch-state')).toBeNull();

    answer = { folder_id: 'source-1', path: '/home/me/notes', state: 'linked', error: null, synced_at: null };
    await userEvent.click(screen.getByTestId('folder-watch'));
    const state = await screen.findByTestId('folder-watch-state');
    expect(state).toHaveTextContent('Follows /home/me/notes');
  });

  it('shows a missing directory with its reason', async () => {
    useFakeBackend({
      list_folders: () => [desk],
      folder_files: () => [],
      folder_watches: () => [
        {
          folder_id: 'source-1',
          path: '/mnt/usb/notes',
          state: 'missing',
          error: 'the directory /mnt/usb/notes is gone or unreadable',
          synced_at: '2026-11-21T10:00:00Z',
        },
      ],
    });
    render(FolderSettings);
    const state = await screen.findByTestId('folder-watch-state');
    expect(state).toHaveTextContent('directory missing');
    expect(state).toHaveTextContent('is gone or unreadable');
  });

  it('keeps the newest state of a file when an older answer arrives last', async () => {
    const broken = (status: FolderFile['status']): FolderFile => ({
      id: 'file-1',
      folder_id: 'source-1',
      name: 'broken.pdf',
      mime: 'application/pdf',
      size: 32,
      sha256: 'ab',
      status,
      error: status === 'error' ? 'cannot read it: not a readable PDF' : null,
      pages: null,
      lines: 0,
      chunks: 0,
      created_at: '2026-11-21T10:00:00Z',
      updated_at: '2026-11-21T10:00:00Z',
    });
    // Each answer waits until the test lets it go, so the two can cross.
    const answers: ((files: FolderFile[]) => void)[] = [];
    const { backend } = useFakeBackend({
      list_folders: () => [desk],
      folder_files: () => new Promise<FolderFile[]>((resolve) => answers.push(resolve)),
      folder_watches: () => [],
    });
    let notify: (n: Notice) => void = () => {};
    vi.mocked(backend.onNotice).mockImplementation((f) => {
      notify = f;
      return () => {};
    });
    render(FolderSettings);
    await vi.waitFor(() => expect(answers).toHaveLength(1));
    answers[0]!([broken('parsing')]);
    const file = await screen.findByTestId('folder-file');
    expect(file).toHaveAttribute('data-status', 'parsing');

    notify({ type: 'folder_changed', folder_id: 'source-1' });
    notify({ type: 'folder_changed', folder_id: 'source-1' });
    await vi.waitFor(() => expect(answers).toHaveLength(3));
    answers[2]!([broken('error')]);
    await vi.waitFor(() => expect(screen.getByTestId('folder-file')).toHaveAttribute('data-status', 'error'));
    answers[1]!([broken('parsing')]);
    await new Promise((r) => setTimeout(r, 20));
    expect(screen.getByTestId('folder-file')).toHaveAttribute('data-status', 'error');
  });
});
