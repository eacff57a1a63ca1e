import type { Backend } from './backend';
import { httpBackend, takeToken } from './http';
import { tauriBackend } from './tauri';

export { BackendError } from './backend';
export type { Backend, Command, ResultOf } from './backend';

let current: Backend | null = null;

/** The backend for this window: Tauri IPC inside the desktop shell, HTTP in a browser. */
export function backend(): Backend {
  current ??=
    '__TAURI_INTERNALS__' in window
      ? tauriBackend()
      : httpBackend({ base: location.origin, token: takeToken() });
  return current;
}

/** Replaces the backend (tests, previews). */
export function setBackend(b: Backend | null): void {
  current = b;
}
