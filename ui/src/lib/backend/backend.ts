import type { ErrorBody, FolderWatch, ImportReport, Notice, RerankerStatus, RunEvent } from './types';
import type { AttachCommands, Commands, RunCommands } from '../bindings/commands';
import type { ExportAgentsArgs } from '../bindings/args/ExportAgentsArgs';

/*
 * Every command is defined once, in the engine (`engram_service::commands`): its arguments
 * (snake_case, identical on both transports), its result, and the one function answering it.
 * `../bindings/commands.ts` is generated from that list, so a misspelt command or a wrong
 * argument fails type checking here and in every component.
 */
export type { Commands, RunCommands };
export type RunCommand = keyof RunCommands;

/** Which agents to export (every agent when `agent_ids` is absent) and as what. */
export type ExportArgs = ExportAgentsArgs;

/** Where an export went: a path the user chose (desktop) or a browser download. */
export type Saved = { kind: 'path' | 'download'; where: string };

export type Command = keyof Commands;
export type ArgsOf<C extends Command> = Commands[C][0];
export type ResultOf<C extends Command> = Commands[C][1];

/** Arguments may be omitted for commands whose arguments are all optional (or that take none). */
export type CallArgs<C extends Command> = {} extends ArgsOf<C> ? [args?: ArgsOf<C>] : [args: ArgsOf<C>];

/** The one way components reach the engine (Tauri IPC in the desktop app, HTTP in a browser). */
export interface Backend {
  /** Runs a command; rejects with a {@link BackendError}. */
  call<C extends Command>(command: C, ...args: CallArgs<C>): Promise<ResultOf<C>>;
  /**
   * Sends a user message and streams the run's events to `onEvent`; resolves after `done`.
   * Rejects with a {@link BackendError} when the run could not start.
   */
  sendMessage(args: RunCommands['send_message'], onEvent: (e: RunEvent) => void): Promise<void>;
  /**
   * Joins the agent's run in flight (after a reload, or from a second window): streams what it
   * sent so far, then the rest, to `onEvent`, and resolves `true` after `done`. Resolves `false`
   * at once when the agent is not running.
   */
  attachRun(args: AttachCommands['attach_run'][0], onEvent: (e: RunEvent) => void): Promise<boolean>;
  /**
   * Approves or denies the tool call the agent's run waits on, and streams the run that goes
   * on to `onEvent`; resolves after `done`. Rejects with a {@link BackendError} when nothing
   * waits (`not_found`) or the decision names another call (`invalid_input`).
   */
  resolveApproval(args: RunCommands['resolve_approval'], onEvent: (e: RunEvent) => void): Promise<void>;
  /**
   * Starts any run ({@link RunCommands}) and streams its events like {@link sendMessage};
   * rejects with a {@link BackendError} when it could not start (e.g. a rollback conflict).
   */
  run<C extends RunCommand>(command: C, args: RunCommands[C], onEvent: (e: RunEvent) => void): Promise<void>;
  /** Calls `onNotice` for every app-wide change until the returned function is called. */
  onNotice(onNotice: (n: Notice) => void): () => void;
  /** Opens a link outside the app (the system browser in the desktop app). */
  openUrl(url: string): Promise<void>;
  /**
   * Asks `mayClose` before the desktop window closes (it may wait for the person to choose);
   * the window stays open when it resolves `false`. Until the returned function is called.
   * In a browser the page's own `beforeunload` prompt does this job, so it is a no-op there.
   */
  onCloseRequested(mayClose: () => Promise<boolean>): () => void;
  /**
   * Saves an export: through the native save dialog in the desktop app, as a download in a
   * browser. Resolves to where it went, or `null` when the user cancelled the dialog.
   */
  saveExport(args: ExportArgs): Promise<Saved | null>;
  /**
   * Picks an agent file in the native open dialog and imports it (desktop only; `null` in a
   * browser, which uses a file input and `import_agent_file`). Resolves to the report, or
   * `null` when the user cancelled.
   */
  importFromDialog: (() => Promise<ImportReport | null>) | null;
  /**
   * Picks the reranker's weights folder in the native folder dialog and sets it (desktop
   * only; `null` in a browser, which types the path into `set_rerank_model_dir`). Resolves to
   * the new status, or `null` when the user cancelled.
   */
  pickRerankModelDir: (() => Promise<RerankerStatus | null>) | null;
  /**
   * Picks the directory a folder follows in the native folder dialog and links it, as
   * `watch_folder` does (desktop only; `null` in a browser, which types the path into
   * `watch_folder`). Resolves to the link, or `null` when the user cancelled.
   */
  pickWatchDir: ((folderId: string) => Promise<FolderWatch | null>) | null;
}

/** An engine error on any transport: a stable `code` to act on and a message for people. */
export class BackendError extends Error {
  readonly code: string;
  readonly details: unknown;

  constructor(code: string, message: string, details?: unknown) {
    super(message);
    this.name = 'BackendError';
    this.code = code;
    this.details = details ?? null;
  }

  static from(body: unknown, fallbackCode = 'internal'): BackendError {
    if (body instanceof BackendError) return body;
    if (isErrorBody(body)) return new BackendError(body.code, body.message, body.details);
    if (body instanceof Error) return new BackendError(fallbackCode, body.message);
    return new BackendError(fallbackCode, typeof body === 'string' ? body : 'Something went wrong.');
  }
}

export function isErrorBody(v: unknown): v is ErrorBody {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as ErrorBody).code === 'string' &&
    typeof (v as ErrorBody).message === 'string'
  );
}
