import type {
  Agent,
  AgentEndpoints,
  AgentPatch,
  AgentState,
  AppInfo,
  Block,
  BlockEdit,
  BlockPatch,
  ContextBreakdown,
  EndpointKind,
  ErrorBody,
  ImportReport,
  LocalServer,
  Message,
  MessageHit,
  ModelInfo,
  NewAgent,
  NewTool,
  Notice,
  Passage,
  PassageHit,
  PassagePage,
  ProviderInfo,
  ProviderSetup,
  RestApiStatus,
  RunEvent,
  McpServer,
  NewMcpServer,
  Template,
  Tool,
  ToolPython,
  TryToolResult,
} from './types';

type AgentArg = { agent_id: string };

/**
 * Every command the engine answers: its arguments (snake_case, identical on both transports)
 * and its result. `send_message` is not here: it streams, see {@link Backend.sendMessage}.
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
  list_agents: [undefined, Agent[]];
  get_agent: [AgentArg, AgentState];
  list_templates: [undefined, Template[]];
  create_agent: [{ new: NewAgent; template?: string }, AgentState];
  update_agent: [AgentArg & { patch: AgentPatch }, Agent];
  clone_agent: [AgentArg & { name?: string }, AgentState];
  delete_agent: [AgentArg, null];
  list_messages: [AgentArg & { before?: string; limit: number }, Message[]];
  cancel_run: [AgentArg, number];
  list_blocks: [AgentArg, Block[]];
  update_block: [AgentArg & { label: string; patch: BlockPatch }, Block];
  block_history: [AgentArg & { label: string }, BlockEdit[]];
  undo_block_edit: [{ edit_id: string; version?: number }, Block];
  list_passages: [AgentArg & { search?: string; offset: number; limit: number }, PassagePage];
  search_archival: [AgentArg & { query: string; tags?: string[]; top_k?: number }, PassageHit[]];
  add_passage: [AgentArg & { text: string; tags: string[] }, Passage];
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
  list_mcp_servers: [undefined, McpServer[]];
  add_mcp_server: [{ server: NewMcpServer }, McpServer];
  remove_mcp_server: [{ server: string }, null];
  set_mcp_server_active: [{ server: string; active: boolean }, McpServer];
  import_mcp_servers: [{ text: string; source?: string }, McpServer[]];
  list_mcp_tools: [{ server: string }, Tool[]];
  stored_mcp_tools: [{ server: string }, Tool[]];
}

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
  /** Calls `onNotice` for every app-wide change until the returned function is called. */
  onNotice(onNotice: (n: Notice) => void): () => void;
  /** Opens a link outside the app (the system browser in the desktop app). */
  openUrl(url: string): Promise<void>;
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
