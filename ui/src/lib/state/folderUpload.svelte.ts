import { backend, BackendError } from '../backend';
import type { FileAdded } from '../backend/types';

/** One file given to a folder, from picking or dropping it to what reading it gave. */
export interface UploadItem {
  /** Its name in the folder: a dropped folder's files keep their relative path. */
  name: string;
  /** Bytes. */
  size: number;
  /** `queued` until its turn; `reading` while the engine extracts, cuts and embeds it. */
  phase: 'queued' | 'reading' | 'done' | 'failed' | 'cancelled';
  /** What the engine answered once read (a file it could not read is `done` with an error). */
  result: FileAdded | null;
  /** Why the upload itself failed (too big for the connection, folder gone…). */
  error: string | null;
  /** Cancel was asked while it was being read. */
  cancelling?: boolean;
}

/**
 * Files going into one folder, one at a time (a large PDF is read and embedded before the
 * next starts, so memory stays bounded): each shows where it is, and a file can be cancelled
 * before its turn or while it is read (then it is not in the folder). `onfile` runs after
 * each file, so the list beside it refreshes.
 */
export class UploadQueue {
  items = $state<UploadItem[]>([]);
  #files = new Map<UploadItem, File>();
  #running = false;

  constructor(
    private folderId: string,
    private onfile: () => void,
  ) {}

  /** Queues `files` (with their names in the folder) and starts if idle. */
  add(files: { file: File; name: string }[]): void {
    for (const { file, name } of files) {
      const item: UploadItem = { name, size: file.size, phase: 'queued', result: null, error: null };
      this.items.push(item);
      this.#files.set(this.items.at(-1)!, file);
    }
    void this.#run();
  }

  /** Drops a file that has not started, or asks the engine to stop reading it. */
  cancel(item: UploadItem): void {
    if (item.phase === 'queued') item.phase = 'cancelled';
    else if (item.phase === 'reading' && !item.cancelling) {
      item.cancelling = true;
      backend()
        .call('cancel_folder_file', { folder_id: this.folderId, file_name: item.name })
        .catch((e: unknown) => (item.error = BackendError.from(e).message));
    }
  }

  /** Whether a file is waiting or being read. */
  get busy(): boolean {
    return this.items.some((i) => i.phase === 'queued' || i.phase === 'reading');
  }

  async #run(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (;;) {
        const item = this.items.find((i) => i.phase === 'queued');
        if (!item) break;
        const file = this.#files.get(item)!;
        item.phase = 'reading';
        try {
          const data = await base64Of(file);
          item.result = await backend().call('upload_folder_file', {
            folder_id: this.folderId,
            file_name: item.name,
            data_base64: data,
          });
          // A read cancelled in time answers without a file; one that finished first is kept.
          item.phase = item.cancelling && item.result.file === null ? 'cancelled' : 'done';
        } catch (e) {
          item.error = BackendError.from(e).message;
          item.phase = 'failed';
        }
        this.#files.delete(item);
        this.onfile();
      }
    } finally {
      this.#running = false;
    }
  }
}

/** A file's bytes as standard padded base64 (what `upload_folder_file` takes). */
export async function base64Of(file: Blob): Promise<string> {
  const url = await new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result as string);
    reader.onerror = () => reject(reader.error ?? new Error('the file could not be read'));
    reader.readAsDataURL(file);
  });
  return url.slice(url.indexOf(',') + 1);
}

/**
 * The files of a drop, with their paths inside dropped folders (`notes/a.md`), read through
 * the drop's entries where the browser offers them; plain files otherwise.
 */
export async function droppedFiles(data: DataTransfer): Promise<{ file: File; name: string }[]> {
  const entries = [...data.items]
    .map((i) => (typeof i.webkitGetAsEntry === 'function' ? i.webkitGetAsEntry() : null))
    .filter((e): e is FileSystemEntry => !!e);
  if (entries.length === 0) return [...data.files].map((file) => ({ file, name: file.name }));
  const out: { file: File; name: string }[] = [];
  const walk = async (entry: FileSystemEntry, prefix: string): Promise<void> => {
    if (entry.isFile) {
      const file = await new Promise<File>((res, rej) => (entry as FileSystemFileEntry).file(res, rej));
      out.push({ file, name: prefix + entry.name });
    } else if (entry.isDirectory) {
      const reader = (entry as FileSystemDirectoryEntry).createReader();
      // A directory reader answers in batches until an empty one.
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
        if (batch.length === 0) break;
        for (const child of batch) await walk(child, `${prefix}${entry.name}/`);
      }
    }
  };
  for (const entry of entries) await walk(entry, '');
  return out;
}

/** What reading a file gave, in a few words: pages and passages, or why it could not be read. */
export function fileOutcome(f: { status: string; error: string | null; pages: number | null; chunks: number }): string {
  if (f.status === 'error') return f.error ?? 'could not be read';
  if (f.status !== 'completed') return f.status === 'embedding' ? 'embedding…' : 'reading…';
  const pages = f.pages ? `${f.pages} ${f.pages === 1 ? 'page' : 'pages'}, ` : '';
  return `${pages}${f.chunks} ${f.chunks === 1 ? 'passage' : 'passages'}`;
}

/** A size in bytes for people: `812 B`, `14 KB`, `3.2 MB`. */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
