import { BackendError, isErrorBody, type Backend, type RunCommand, type RunCommands } from './backend';
import { readSse } from './sse';
import type { CommandName } from '../bindings/commands';
import type { ExportFile, Notice, RunEvent } from './types';

const TOKEN_KEY = 'engram.token';

export interface HttpOptions {
  /** Where the engine answers, e.g. `http://127.0.0.1:8283`. */
  base: string;
  /** The bearer token, or `null` for a server started with `--no-auth`. */
  token: string | null;
  fetch?: typeof fetch;
  /** How long to wait before reconnecting the notice stream, by attempt (ms). */
  retryDelay?: (attempt: number) => number;
}

/**
 * The bearer token: taken once from the URL fragment `#token=…` (the address `engram serve`
 * prints), then kept for this tab in sessionStorage and removed from the address bar so it is
 * not bookmarked or shared by accident. A view's address may carry it too
 * (`#/agent/…?token=…`); the view stays in the address, only the token goes.
 */
export function takeToken(loc: Location = location, store: Storage = sessionStorage): string | null {
  const hash = loc.hash.replace(/^#/, '');
  const q = hash.indexOf('?');
  const [path, query] = !hash.startsWith('/') ? ['', hash] : q >= 0 ? [hash.slice(0, q), hash.slice(q + 1)] : [hash, ''];
  const params = new URLSearchParams(query);
  const fromUrl = params.get('token');
  if (fromUrl) {
    store.setItem(TOKEN_KEY, fromUrl);
    params.delete('token');
    const rest = params.toString();
    const fragment = path ? path + (rest ? `?${rest}` : '') : rest;
    history.replaceState(history.state, '', loc.pathname + loc.search + (fragment ? `#${fragment}` : ''));
    return fromUrl;
  }
  return store.getItem(TOKEN_KEY);
}

/**
 * Hands a run's events from an SSE body to `onEvent` until `done`; frames that are not events
 * are skipped. `false` when the stream ended before `done` (the connection dropped).
 */
function readRunEvents(body: ReadableStream<Uint8Array>, onEvent: (e: RunEvent) => void): Promise<boolean> {
  return readSse(body, (data) => {
    const event = safeJson(data) as RunEvent | undefined;
    if (!event || typeof event !== 'object' || !('type' in event)) return;
    onEvent(event);
    if (event.type === 'done') return false;
  });
}

/** The browser transport: `POST {base}/app/{command}`, SSE for runs and notices. */
export function httpBackend(opts: HttpOptions): Backend {
  const doFetch = opts.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  const retryDelay = opts.retryDelay ?? ((n: number) => Math.min(500 * 2 ** n, 10_000));

  function headers(accept: string): Record<string, string> {
    const h: Record<string, string> = { Accept: accept, 'Content-Type': 'application/json' };
    if (opts.token) h.Authorization = `Bearer ${opts.token}`;
    return h;
  }

  async function post(command: CommandName, args: unknown, accept = 'application/json'): Promise<Response> {
    let res: Response;
    try {
      res = await doFetch(`${opts.base}/app/${command}`, {
        method: 'POST',
        headers: headers(accept),
        body: JSON.stringify(args ?? {}),
      });
    } catch (e) {
      throw new BackendError(
        'backend_unreachable',
        `Engram is not answering (${e instanceof Error ? e.message : String(e)}). Is it still running?`,
      );
    }
    if (!res.ok) throw await errorOf(res, command);
    return res;
  }

  /** A command answered as a run's events (SSE), until `done`. */
  async function run<C extends RunCommand>(
    command: C,
    args: RunCommands[C],
    onEvent: (e: RunEvent) => void,
  ): Promise<void> {
    const res = await post(command, args, 'text/event-stream');
    if (!res.headers.get('content-type')?.includes('text/event-stream') || !res.body) {
      // The run did not start; the server answered with a plain result or error.
      const text = await res.text();
      const parsed = safeJson(text);
      throw isErrorBody(parsed)
        ? BackendError.from(parsed)
        : new BackendError('internal', 'The reply stream did not start.');
    }
    const ended = await readRunEvents(res.body, onEvent);
    if (!ended) {
      throw new BackendError(
        'backend_unreachable',
        'The connection to Engram dropped before the reply finished. The run may still be going; reload to see it.',
      );
    }
  }

  return {
    async call(command, ...args) {
      const res = await post(command, args[0]);
      const text = await res.text();
      return text === '' ? null : JSON.parse(text);
    },

    sendMessage(args, onEvent) {
      return run('send_message', args, onEvent);
    },

    resolveApproval(args, onEvent) {
      return run('resolve_approval', args, onEvent);
    },

    async attachRun(args, onEvent) {
      const res = await post('attach_run', args, 'text/event-stream');
      if (!res.headers.get('content-type')?.includes('text/event-stream') || !res.body) {
        // `null`: the agent is not running.
        await res.text();
        return false;
      }
      const ended = await readRunEvents(res.body, onEvent);
      if (!ended) {
        throw new BackendError('backend_unreachable', 'The connection to Engram dropped while following the run; reload to see it.');
      }
      return true;
    },

    run,

    onNotice(onNotice) {
      const ctrl = new AbortController();
      void (async () => {
        let attempt = 0;
        while (!ctrl.signal.aborted) {
          try {
            const res = await doFetch(`${opts.base}/app/notices`, {
              headers: headers('text/event-stream'),
              signal: ctrl.signal,
            });
            if (res.ok && res.body) {
              if (attempt > 0) {
                // Notices may have been missed while away: have listeners re-read everything.
                onNotice({ type: 'agents_changed' });
              }
              attempt = 0;
              await readSse(
                res.body,
                (data) => {
                  const n = safeJson(data) as Notice | undefined;
                  if (n && typeof n === 'object' && 'type' in n) onNotice(n);
                },
                ctrl.signal,
              );
            }
          } catch {
            // Dropped or refused: try again below.
          }
          if (ctrl.signal.aborted) break;
          await sleep(retryDelay(attempt++), ctrl.signal);
        }
      })();
      return () => ctrl.abort();
    },

    async openUrl(url) {
      window.open(url, '_blank', 'noopener,noreferrer');
    },

    // A browser tab asks through `beforeunload` (App.svelte); nothing to hook here.
    onCloseRequested() {
      return () => {};
    },
    async saveExport(args) {
      const file = (await (await post('export_agents', args)).json()) as ExportFile;
      const type = file.file_name.endsWith('.md') ? 'text/markdown' : 'application/json';
      const url = URL.createObjectURL(new Blob([file.contents], { type }));
      const link = document.createElement('a');
      link.href = url;
      link.download = file.file_name;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
      return { kind: 'download', where: file.file_name };
    },

    importFromDialog: null,
    pickRerankModelDir: null,
    pickWatchDir: null,
  };
}

async function errorOf(res: Response, command: string): Promise<BackendError> {
  const body = safeJson(await res.text().catch(() => ''));
  if (isErrorBody(body)) return BackendError.from(body);
  if (res.status === 401) {
    return new BackendError('unauthorized', 'Engram refused the token. Open the address `engram serve --show-token` printed.');
  }
  if (res.status === 404) {
    return new BackendError('not_supported', `This Engram does not offer "${command}" yet.`);
  }
  return new BackendError('internal', `Engram answered ${res.status} ${res.statusText}.`.trim());
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}
