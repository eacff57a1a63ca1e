/**
 * Every shape the UI exchanges with the engine. Most are generated from Rust by ts-rs into
 * `../bindings/`; the few the generator does not emit yet (tools, templates, the provider form)
 * are written here to mirror the Rust types, and become re-exports once they are generated.
 */
export type { Agent } from '../bindings/Agent';
export type { AgentPatch } from '../bindings/AgentPatch';
export type { AgentState } from '../bindings/AgentState';
export type { AppInfo } from '../bindings/AppInfo';
export type { Block } from '../bindings/Block';
export type { BlockEdit } from '../bindings/BlockEdit';
export type { BlockPatch } from '../bindings/BlockPatch';
export type { ContextBreakdown } from '../bindings/ContextBreakdown';
export type { Editor } from '../bindings/Editor';
export type { ErrorBody } from '../bindings/ErrorBody';
export type { ImportReport } from '../bindings/ImportReport';
export type { LlmConfig } from '../bindings/LlmConfig';
export type { LocalServer } from '../bindings/LocalServer';
export type { LoopStyle } from '../bindings/LoopStyle';
export type { Message } from '../bindings/Message';
export type { MessageHit } from '../bindings/MessageHit';
export type { ModelInfo } from '../bindings/ModelInfo';
export type { NewAgent } from '../bindings/NewAgent';
export type { NewBlock } from '../bindings/NewBlock';
export type { Notice } from '../bindings/Notice';
export type { Passage } from '../bindings/Passage';
export type { PassageHit } from '../bindings/PassageHit';
export type { PassagePage } from '../bindings/PassagePage';
export type { ProviderInfo } from '../bindings/ProviderInfo';
export type { ProviderKind } from '../bindings/ProviderKind';
export type { RestApiStatus } from '../bindings/RestApiStatus';
export type { RunEvent } from '../bindings/RunEvent';
export type { StopReason } from '../bindings/StopReason';
export type { ToolCall } from '../bindings/ToolCall';
export type { ToolStatus } from '../bindings/ToolStatus';
export type { Usage } from '../bindings/Usage';

import type { LoopStyle } from '../bindings/LoopStyle';
import type { NewBlock } from '../bindings/NewBlock';
import type { ProviderKind } from '../bindings/ProviderKind';
import type { ToolStatus } from '../bindings/ToolStatus';

/** What the provider form sends; `api_key` goes to the keychain and never comes back. */
export interface ProviderSetup {
  name: string;
  kind?: ProviderKind;
  base_url?: string;
  api_key?: string;
  default_model?: string;
  /** Seconds to wait for a response to start or a stream to continue. */
  timeout_secs?: number;
  max_retries?: number;
}

/** A starting point for a new agent (`memory`, `task-queue`, …). */
export interface Template {
  id: string;
  name: string;
  description: string;
  loop_style?: LoopStyle;
  blocks: NewBlock[];
  tools: string[];
}

/** A tool: built in, or custom Python whose schema Engram generated from its signature. */
export interface Tool {
  id: string;
  name: string;
  description: string;
  json_schema: unknown;
  source_code: string | null;
  source_type: 'python' | 'builtin';
  /** Longest result the model sees, in characters. */
  return_char_limit: number;
  available: boolean;
  unavailable_reason: string | null;
}

/** A custom tool to save; missing fields are generated from the Python source. */
export interface NewTool {
  source_code: string;
  name?: string;
  description?: string;
  json_schema?: unknown;
  return_char_limit?: number;
}

/** What a trial run of a tool did (nothing is persisted). */
export interface TryToolResult {
  status: ToolStatus;
  message: string;
  block_changes: { label: string; value: string }[];
}
