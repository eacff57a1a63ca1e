import { Channel, invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { BackendError, type Backend, type RunCommand, type RunCommands } from './backend';
import type { Notice, RunEvent } from './types';

/** The app-wide notice event the shell emits. */
export const NOTICE_EVENT = 'engram://notice';

/** The desktop transport: Tauri IPC commands, a `Channel` per run, events for notices. */
export function tauriBackend(): Backend {
  async function run<C extends RunCommand>(
    command: C,
    args: RunCommands[C],
    onEvent: (e: RunEvent) => void,
  ): Promise<void> {
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

  return {
    async call(command, ...args) {
      try {
        return await invoke(command, args[0] ?? {});
      } catch (e) {
        throw BackendError.from(e);
      }
    },

    sendMessage(args, onEvent) {
      return run('send_message', args, onEvent);
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
  };
}
