//! User tools: Python functions, in the form Letta's tutorials write them, run safely.
//!
//! A user tool is the source of a Python function whose signature and Google-style docstring
//! give its schema ([`PythonRunner::schema`]; an explicit schema set by the user overrides it —
//! that choice is the caller's). It runs ([`PythonRunner::run`]) in a separate `python3` process
//! inside the sandbox of `engram-sandbox` (no view of Engram's process, environment, keyring or
//! session bus; a scratch directory as the only writable place; CPU, memory and process limits;
//! network only when the tool is allowed it), with a timeout and an output cap. Where no sandbox
//! exists, a call fails with the reason unless the tool was allowed to run unsandboxed. The
//! process gets an `agent_state` with `id`, `name` and a `memory` offering `get_block(label)`
//! (`.value`, `.limit`, `.label`) and `update_block_value(label, value)`; the block changes come
//! back in [`ToolOutcome::block_updates`], already checked against the blocks' limits, for the
//! engine to apply in the same transaction as the tool result.
//!
//! This crate knows nothing of the store or the agent loop; it only runs Python.

mod capture;
mod room;
mod runner;

pub use engram_sandbox::{Bridge, Limits, Sandbox};
pub use runner::PythonRunner;

use serde::{Deserialize, Serialize};

/// Why Python tools cannot run here; shown next to the tool so the user can fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Python tools are unavailable: {reason}")]
pub struct Unavailable {
    /// What went wrong, and what to do about it (e.g. "python3 was not found on PATH…").
    pub reason: String,
}

/// Why a tool's schema could not be generated from its source.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The source did not parse, has no such function, or is ambiguous; the message is
    /// Python's error line (e.g. `SyntaxError: invalid syntax (<tool>, line 3)`).
    #[error("{0}")]
    Source(String),
    /// The interpreter did not answer within the runner's timeout (seconds).
    #[error("Reading the tool's schema did not finish within {0} s.")]
    Timeout(u64),
    /// The interpreter could not be started or talked to.
    #[error("Could not run python3: {0}")]
    Io(#[from] std::io::Error),
    /// The interpreter answered something that is not a harness result.
    #[error("The Python harness gave no usable answer: {0}")]
    Protocol(String),
}

/// A tool's schema in the shape LLM providers take (OpenAI's `function` object).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The function's name.
    pub name: String,
    /// The docstring's text before its first section (`Args:`, `Returns:`, …).
    pub description: String,
    /// A JSON Schema object: `{"type": "object", "properties": {...}, "required": [...]}`.
    /// `agent_state` is never listed; parameters with defaults or `Optional[...]` are not
    /// required; descriptions come from the docstring's `Args:` section.
    pub parameters: serde_json::Value,
}

/// One call of a user tool.
#[derive(Clone, Debug)]
pub struct ToolRun {
    /// The tool's Python source (one or more definitions; module-level code runs too).
    pub source: String,
    /// The function to call.
    pub name: String,
    /// The model's arguments: a JSON object, passed as keyword arguments.
    pub arguments: serde_json::Value,
    /// `agent_state.id`.
    pub agent_id: String,
    /// `agent_state.name`.
    pub agent_name: String,
    /// The agent's core-memory blocks, as `agent_state.memory` shows them.
    pub blocks: Vec<engram_core::Block>,
    /// Whether the tool may use the host's network (the user's per-tool setting; default off).
    pub network: bool,
    /// Whether the tool may run without a sandbox when none is available here (the user's
    /// per-tool setting; default off, and then such a call fails saying why).
    pub allow_unsandboxed: bool,
    /// Engram's local API, reachable from the tool at `127.0.0.1:<port>` even with the
    /// network off (for tools that call Engram, such as the tutorial's task queue over
    /// `letta_client`). The socket's server scopes what the connection may do.
    pub bridge: Option<Bridge>,
}

/// Whether the tool returned or failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The function returned; its value is the message.
    Ok,
    /// The function raised, timed out, or broke a rule; the message says how.
    Failed,
}

/// What a tool call produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    /// Returned or failed.
    pub status: ToolStatus,
    /// For the model: the return value as a string (non-strings JSON-encoded, `None` → `"None"`),
    /// or one error line such as `ValueError: boom`. When the tool's output was cut to the
    /// runner's cap, a last line says `[output truncated …]`.
    pub message: String,
    /// `(label, new value)` for each block the tool changed, in first-change order, each checked
    /// against its block's limit (characters) and read-only flag. Empty when `status` is
    /// `Failed`: a failed call changes nothing.
    pub block_updates: Vec<(String, String)>,
    /// What the tool printed to stdout (lossy UTF-8), within the output cap.
    pub stdout: String,
    /// What the tool printed to stderr (lossy UTF-8), within the output cap.
    pub stderr: String,
    /// True when stdout and stderr together exceeded the cap and were cut.
    pub output_truncated: bool,
}

impl ToolOutcome {
    fn failed(message: impl Into<String>) -> Self {
        ToolOutcome {
            status: ToolStatus::Failed,
            message: message.into(),
            block_updates: Vec::new(),
            stdout: String::new(),
            stderr: String::new(),
            output_truncated: false,
        }
    }
}
