import type {
  Agent,
  AgentEndpoints,
  AgentPatch,
  AgentState,
  AppInfo,
  ApprovalDecision,
  Block,
  BlockEdit,
  BlockPatch,
  ChatModel,
  ContextBreakdown,
  ContextView,
  EndpointKind,
  ErrorBody,
  ExportFile,
  ExportFormat,
  ImportReport,
  LocalServer,
  Message,
  MessageHit,
  MessageWindow,
  ModelInfo,
  ModelWindow,
  ModelPrice,
  NewAgent,
  NewBlock,
  NewTool,
  Notice,
  Passage,
  PassageHit,
  PassageList,
  PassagePage,
  PendingApproval,
  ProviderInfo,
  ProviderSetup,
  RerankerStatus,
  RestApiStatus,
  RunEvent,
  SharedBlock,
  TagMatch,
  RunRecord,
  McpServer,
  NewMcpServer,
  Template,
  Tool,
  ToolEdit,
  ToolPython,
  TryToolResult,
  WindowAt,
  UndoPlan,
  TurnRollback,
  UsageCost,
} from './types';
import type { CallCommandName, RunCommandName } from '../bindings/commands';

type AgentArg = { agent_id: string };

/**
 * Every command the engine answers: its arguments (snake_case, identical on both transports)
 * and its result. `send_message` and `resolve_approval` are not here: they stream, see
 * {@link Backend.sendMessage} and {@link Backend.resolveApproval}.
 */
export interface Commands {
  app_info: [undefined, AppInfo];
  set_rest_api: [{ enabled: boolean }, RestApiStatus];
  list_providers: [undefined, ProviderInfo[]];
  set_provider: [{ setup: ProviderSetup }, ProviderInfo];
  delete_provider: [{ name: string }, null];
  test_provider: [{ name: string }, ModelInfo[]];
  detect_local_providers: [undefined, LocalServer[]];
  get_default_model: [undefined, string];
  set_default_model: [{ handle: string }, null];
  reranker_status: [undefined, RerankerStatus];
  /** A folder's full path, or `null` to remove it; refused when it lacks a cross-encoder's files. */
  set_rerank_model_dir: [{ dir: string | null }, RerankerStatus];
  set_rerank_enabled: [{ enabled: boolean }, RerankerStatus];
  list_agents: [undefined, Agent[]];
  get_agent: [AgentArg, AgentState];
  list_templates: [undefined, Template[]];
  create_agent: [{ new: NewAgent; template?: string }, AgentState];
  update_agent: [AgentArg & { patch: AgentPatch }, Agent];
  clone_agent: [AgentArg & { name?: string }, AgentState];
  delete_agent: [AgentArg, null];
  list_messages: [AgentArg & { before?: string; limit: number }, Message[]];
  message_window: [AgentArg & { at: WindowAt; limit: number }, MessageWindow];
  cancel_run: [AgentArg & { run_id?: string }, number];
  pending_approval: [AgentArg, PendingApproval | null];
  set_tool_approval: [AgentArg & { tool: string; on: boolean }, Agent];
  list_blocks: [AgentArg, Block[]];
  update_block: [AgentArg & { label: string; patch: BlockPatch }, Block];
  block_history: [AgentArg & { label: string }, BlockEdit[]];
  undo_block_edit: [{ edit_id: string; version?: number }, Block];
  list_passages: [AgentArg & { list: PassageList }, PassagePage];
  search_archival: [
    AgentArg & { query: string; tags?: string[]; tag_match?: TagMatch; start?: string; end?: string; top_k?: number },
    PassageHit[],
  ];
  add_passage: [AgentArg & { text: string; tags: string[] }, Passage];
  edit_passage: [AgentArg & { passage_id: string; text?: string; tags?: string[] }, Passage];
  delete_passage: [AgentArg & { passage_id: string }, null];
  search_recall: [AgentArg & { query: string; limit: number }, MessageHit[]];
  context_window: [AgentArg, ContextBreakdown];
  export_agent: [AgentArg, string];
  import_agent_file: [{ contents: string; file_name?: string }, ImportReport];
  list_tools: [undefined, Tool[]];
  agent_tools: [AgentArg, Tool[]];
  upsert_tool: [{ new: NewTool }, Tool];
  attach_tool: [AgentArg & { tool_id: string }, Tool[]];
  detach_tool: [AgentArg & { tool_id: string }, Tool[]];
  delete_tool: [{ tool_id: string }, null];
  try_tool: [{ tool_id: string; agent_id?: string; args: Record<string, unknown> }, TryToolResult];
  trust_tool: [{ tool: string; expected_hash: string }, Tool];
  untrust_tool: [{ tool: string }, Tool];
  agent_endpoints: [AgentArg, AgentEndpoints];
  set_agent_base_url: [AgentArg & { kind: EndpointKind; base_url: string | null }, AgentEndpoints];
  accept_endpoint: [AgentArg & { kind?: EndpointKind }, AgentEndpoints];
  dismiss_endpoint: [AgentArg & { kind?: EndpointKind }, AgentEndpoints];
  tool_python: [undefined, ToolPython];
  set_up_tool_python: [{ requirement?: string }, ToolPython];
  create_agent_block: [AgentArg & { new: NewBlock }, Block];
  shared_blocks: [undefined, SharedBlock[]];
  attach_block: [AgentArg & { block_id: string }, AgentState];
  detach_block: [AgentArg & { block_id: string }, AgentState];
  delete_block: [{ block_id: string }, null];
  block_undo_plan: [{ edit_id: string }, UndoPlan];
  restore_block_edit: [{ edit_id: string; version?: number }, Block];
  context_view: [AgentArg, ContextView];
  chat_models: [{ name: string }, ChatModel[]];
  model_windows: [undefined, ModelWindow[]];
  set_model_window: [{ handle: string; context_window: number }, null];
  regenerate_preview: [AgentArg, TurnRollback];
  rollback_preview: [AgentArg & { message_id: string }, TurnRollback];
  delete_message: [AgentArg & { message_id: string }, string[]];
  reset_messages: [AgentArg, number];
  run_records: [AgentArg & { run_ids?: string[] }, RunRecord[]];
  run_edits: [AgentArg & { run_ids: string[] }, ToolEdit[]];
  model_prices: [undefined, ModelPrice[]];
  set_model_price: [{ price: ModelPrice }, null];
  delete_model_price: [{ model: string }, boolean];
  usage_cost: [AgentArg & { run_id?: string }, UsageCost];
  export_agents: [ExportArgs, ExportFile];
  list_mcp_servers: [undefined, McpServer[]];
  add_mcp_server: [{ server: NewMcpServer }, McpServer];
  remove_mcp_server: [{ server: string }, null];
  set_mcp_server_active: [{ server: string; active: boolean }, McpServer];
  import_mcp_servers: [{ text: string; source?: string }, McpServer[]];
  list_mcp_tools: [{ server: string }, Tool[]];
  stored_mcp_tools: [{ server: string }, Tool[]];
}

/**
 * The commands that start a run and stream its events: a new message, or one of the message
 * actions that replace a turn (roll it back, then run again).
 */
export interface RunCommands {
  send_message: { agent_id: string; text: string };
  regenerate: { agent_id: string };
  edit_and_resend: { agent_id: string; message_id: string; text: string };
  resolve_approval: { agent_id: string; decision: ApprovalDecision };
}
export type RunCommand = keyof RunCommands;

/*
 * The engine lists every command once (`engram_core::commands`, generated into
 * `../bindings/commands.ts`); these fail type checking when `Commands` or `RunCommands` lacks
 * one of them or names one the engine does not answer.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
export type CommandsMatchEngine = Holds<Same<keyof Commands, CallCommandName>>;
export type RunCommandsMatchEngine = Holds<Same<keyof RunCommands, RunCommandName>>;

/** Which agents to export (every agent when `agent_ids` is absent) and as what. */
export type ExportArgs = { agent_ids?: string[]; format: ExportFormat };

/** Where an export went: a path the user chose (desktop) or a browser download. */
export type Saved = { kind: 'path' | 'download'; where: string };

export type Command = keyof Commands;
export type ArgsOf<C extends Command> = Commands[C][0];
export type ResultOf<C extends Command> = Commands[C][1];

/** Arguments are omitted for commands that take none. */
export type CallArgs<C extends Command> = ArgsOf<C> extends undefined ? [] : [args: ArgsOf<C>];

/** The one way components reach the engine (Tauri IPC in the desktop app, HTTP in a browser). */
export interface Backend {
  /** Runs a command; rejects with a {@link BackendError}. */
  call<C extends Command>(command: C, ...args: CallArgs<C>): Promise<ResultOf<C>>;
  /**
   * Sends a user message and streams the run's events to `onEvent`; resolves after `done`.
   * Rejects with a {@link BackendError} when the run could not start.
   */
  sendMessage(args: { agent_id: string; text: string }, onEvent: (e: RunEvent) => void): Promise<void>;
  /**
   * Joins the agent's run in flight (after a reload, or from a second window): streams what it
   * sent so far, then the rest, to `onEvent`, and resolves `true` after `done`. Resolves `false`
   * at once when the agent is not running.
   */
  attachRun(args: { agent_id: string }, onEvent: (e: RunEvent) => void): Promise<boolean>;
  /**
   * Approves or denies the tool call the agent's run waits on, and streams the run that goes
   * on to `onEvent`; resolves after `done`. Rejects with a {@link BackendError} when nothing
   * waits (`not_found`) or the decision names another call (`invalid_input`).
   */
  resolveApproval(
    args: { agent_id: string; decision: ApprovalDecision },
    onEvent: (e: RunEvent) => void,
  ): Promise<void>;
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
