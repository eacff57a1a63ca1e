import { afterEach, describe, expect, it } from 'vitest';
import { BackendError, setBackend } from '../backend';
import { useFakeBackend } from '../../test/fakeBackend';
import { UploadQueue, base64Of, fileOutcome, sizeText } from './folderUpload.svelte';

afterEach(() => setBackend(null));

const done = (name: string) => ({
  name,
  file: null,
  unchanged: false,
  skipped: null,
  notes: [],
});

describe('UploadQueue', () => {
  it('reads one file at a time, lets a waiting one be cancelled and reports a refused one', async () => {
    const started: string[] = [];
    let release: (() => void) | null = null;
    const { calls } = useFakeBackend({
      upload_folder_file: async ({ file_name, data_base64 }) => {
        started.push(file_name);
        expect(atob(data_base64)).toBe(`text of ${file_name}`);
        if (file_name === 'first.md') await new Promise<void>((r) => (release = r));
        if (file_name === 'huge.pdf') throw new BackendError('invalid_input', 'the request is too large');
        return done(file_name);
      },
    });
    let refreshed = 0;
    const queue = new UploadQueue('source-1', () => refreshed++);
    const file = (name: string) => ({ file: new File([`text of ${name}`], name), name });
    queue.add([file('first.md'), file('second.md'), file('huge.pdf')]);
    await expect.poll(() => started).toEqual(['first.md']);
    expect(queue.items.map((i) => i.phase)).toEqual(['reading', 'queued', 'queued']);

    queue.cancel(queue.items[1]!);
    release!();
    await expect.poll(() => queue.busy).toBe(false);
    expect(started).toEqual(['first.md', 'huge.pdf']);
    expect(queue.items.map((i) => i.phase)).toEqual(['done', 'cancelled', 'failed']);
    expect(queue.items[2]!.error).toBe('the request is too large');
    expect(refreshed).toBe(2);
    expect(calls.filter(([name]) => name === 'upload_folder_file').every(([, args]) => (args as { folder_id: string }).folder_id === 'source-1')).toBe(true);
  });

  it('cancels a file while it is read: the engine stops and the file is not added', async () => {
    let stop: (() => void) | null = null;
    const { calls } = useFakeBackend({
      upload_folder_file: async ({ file_name }) => {
        await new Promise<void>((r) => (stop = r));
        return { ...done(file_name), skipped: 'cancelled while it was being read: it is not in the folder' };
      },
      cancel_folder_file: () => {
        stop!();
        return true;
      },
    });
    const queue = new UploadQueue('source-1', () => {});
    queue.add([{ file: new File(['x'], 'big.pdf'), name: 'big.pdf' }]);
    await expect.poll(() => stop !== null).toBe(true);
    queue.cancel(queue.items[0]!);
    await expect.poll(() => queue.busy).toBe(false);
    expect(queue.items[0]!.phase).toBe('cancelled');
    expect(calls).toContainEqual(['cancel_folder_file', { folder_id: 'source-1', file_name: 'big.pdf' }]);
  });
});

describe('file helpers', () => {
  it('encodes bytes as padded base64 and says what a file gave', async () => {
    expect(await base64Of(new Blob([new Uint8Array([0, 255, 10])]))).toBe('AP8K');
    expect(fileOutcome({ status: 'completed', error: null, pages: 36, chunks: 89 })).toBe('36 pages, 89 passages');
    expect(fileOutcome({ status: 'completed', error: null, pages: null, chunks: 1 })).toBe('1 passage');
    expect(fileOutcome({ status: 'error', error: 'no text layer', pages: null, chunks: 0 })).toBe('no text layer');
    expect(fileOutcome({ status: 'embedding', error: null, pages: null, chunks: 3 })).toBe('embedding…');
    expect(sizeText(812)).toBe('812 B');
    expect(sizeText(20_480)).toBe('20 KB');
    expect(sizeText(3_355_443)).toBe('3.2 MB');
  });
});
