import { Channel, invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { getCurrentWindow } from '@tauri-apps/api/window';
import { BackendError, type Backend, type RunCommand, type RunCommands } from './backend';
import type { AttachCommandName, DialogCommandName, RunCommandName } from '../bindings/commands';
import type { FolderWatch, ImportReport, Notice, RerankerStatus, RunEvent } from './types';

/** The engine's names of the commands this file calls by hand (checked against its list). */
const ATTACH_RUN: AttachCommandName = 'attach_run';
const EXPORT_TO_FILE: DialogCommandName = 'export_to_file';
const IMPORT_FROM_FILE: DialogCommandName = 'import_from_file';
const PICK_RERANK_MODEL_DIR: DialogCommandName = 'pick_rerank_model_dir';
const PICK_WATCH_DIR: DialogCommandName = 'pick_watch_dir';

/** The app-wide notice event the shell emits. */
export const NOTICE_EVENT = 'engram://notice';

/** A command that streams a run's events over a `Channel`; resolves after `done`. */
async function stream(command: RunCommandName, args: object, onEvent: (e: RunEvent) => void): Promise<void> {
  // A channel's last messages can arrive after the command itself resolved, so the run is
  // over when both the command returned and `done` came through.
  let sawDone!: () => void;
  const done = new Promise<void>((resolve) => (sawDone = resolve));
  const channel = new Channel<RunEvent>();
  channel.onmessage = (event) => {
    onEvent(event);
    if (event.type === 'done') sawDone();
  };
  try {
    await invoke(command, { ...args, on_event: channel });
  } catch (e) {
    throw BackendError.from(e);
  }
  await done;
}

/** The desktop transport: Tauri IPC commands, a `Channel` per run, events for notices. */
export function tauriBackend(): Backend {
  function run<C extends RunCommand>(command: C, args: RunCommands[C], onEvent: (e: RunEvent) => void): Promise<void> {
    return stream(command, args, onEvent);
  }

  return {
    async call(command, ...args) {
      try {
        return await invoke(command, args[0] ?? {});
      } catch (e) {
        throw BackendError.from(e);
      }
    },

    sendMessage(args, onEvent) {
      return stream('send_message', args, onEvent);
    },

    resolveApproval(args, onEvent) {
      return stream('resolve_approval', args, onEvent);
    },

    async attachRun(args, onEvent) {
      let sawDone!: () => void;
      const done = new Promise<void>((resolve) => (sawDone = resolve));
      const channel = new Channel<RunEvent>();
      channel.onmessage = (event) => {
        onEvent(event);
        if (event.type === 'done') sawDone();
      };
      let attached: boolean;
      try {
        attached = await invoke<boolean>(ATTACH_RUN, { ...args, on_event: channel });
      } catch (e) {
        throw BackendError.from(e);
      }
      if (attached) await done;
      return attached;
    },

    run,

    onNotice(onNotice) {
      let stopped = false;
      const unlisten = listen<Notice>(NOTICE_EVENT, (e) => onNotice(e.payload));
      return () => {
        if (stopped) return;
        stopped = true;
        void unlisten.then((f) => f());
      };
    },

    async openUrl(url) {
      try {
        await invoke('plugin:opener|open_url', { url });
      } catch (e) {
        throw BackendError.from(e);
      }
    },

    onCloseRequested(mayClose) {
      let stopped = false;
      // The window closes (destroy) after the handler unless it prevents it; the handler may
      // await the person's answer first.
      const unlisten = getCurrentWindow().onCloseRequested(async (e) => {
        if (!(await mayClose())) e.preventDefault();
      });
      return () => {
        if (stopped) return;
        stopped = true;
        void unlisten.then((f) => f());
      };
    },

    async saveExport(args) {
      try {
        const path = await invoke<string | null>(EXPORT_TO_FILE, args);
        return path === null ? null : { kind: 'path', where: path };
      } catch (e) {
        throw BackendError.from(e);
      }
    },

    async importFromDialog() {
      try {
        return await invoke<ImportReport | null>(IMPORT_FROM_FILE);
      } catch (e) {
        throw BackendError.from(e);
      }
    },

    async pickRerankModelDir() {
      try {
        return await invoke<RerankerStatus | null>(PICK_RERANK_MODEL_DIR);
      } catch (e) {
        throw BackendError.from(e);
      }
    },

    async pickWatchDir(folderId) {
      try {
        return await invoke<FolderWatch | null>(PICK_WATCH_DIR, { folder_id: folderId });
      } catch (e) {
        throw BackendError.from(e);
      }
    },
  };
}
