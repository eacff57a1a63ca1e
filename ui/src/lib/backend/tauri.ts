import { Channel, invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { BackendError, type Backend } from './backend';
import type { ImportReport, Notice, RunEvent } from './types';

/** The app-wide notice event the shell emits. */
export const NOTICE_EVENT = 'engram://notice';

/** The desktop transport: Tauri IPC commands, a `Channel` per run, events for notices. */
export function tauriBackend(): Backend {
  return {
    async call(command, ...args) {
      try {
        return await invoke(command, args[0] ?? {});
      } catch (e) {
        throw BackendError.from(e);
      }
    },

    async sendMessage(args, onEvent) {
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
        await invoke('send_message', { ...args, on_event: channel });
      } catch (e) {
        throw BackendError.from(e);
      }
      await done;
    },

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

    async saveExport(args) {
      try {
        const path = await invoke<string | null>('export_to_file', args);
        return path === null ? null : { kind: 'path', where: path };
      } catch (e) {
        throw BackendError.from(e);
      }
    },

    async importFromDialog() {
      try {
        return await invoke<ImportReport | null>('import_from_file');
      } catch (e) {
        throw BackendError.from(e);
      }
    },
  };
}
