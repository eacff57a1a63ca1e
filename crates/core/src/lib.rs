//! Engram's ground floor: the shared vocabulary of the engine.
//!
//! Everything here is plain data — no IO, no async — so every other crate (store, providers,
//! agent loop, service, transports) can depend on it. Terms follow MemGPT/Letta: an *agent*
//! has core memory made of *blocks*, archival memory made of *passages*, and recall memory
//! (its whole message history). A user message starts a *run* of *steps*.

pub mod agent;
pub mod approval;
pub mod block_op;
pub mod client_write;
pub mod commands;
pub mod error;
pub mod folder;
pub mod ids;
pub mod mcp;
pub mod memory;
pub mod message;
mod new_block;
pub mod paging;
pub mod passage;
pub mod price;
pub mod run;
pub mod sleeptime;
pub mod tool;
pub mod trust;
pub mod user;

pub use agent::{Agent, AgentPatch, EmbeddingConfig, LlmConfig, LoopStyle, NewAgent};
pub use approval::{ApprovalDecision, PendingApproval};
pub use block_op::{Applied, BlockOp, OpError, OpOutcome, ReplaceCount};
pub use client_write::{ClientWriteOutcome, PendingClientWrite};
pub use error::{Error, ErrorBody, Result};
pub use folder::{
    AgentFile, ChunkHit, FileChunk, FileStatus, Folder, FolderFile, FolderWatch, NewFolder,
    Provenance, WatchState,
};
pub use ids::{
    AgentId, BlockId, ClientWriteId, EditId, FileId, FolderId, McpServerId, MessageId, PassId,
    PassageId, RunId, StepId, ToolId, UserId,
};
pub use mcp::{McpServer, McpToolSource, McpTransport, NewMcpServer, NewMcpTransport};
pub use memory::{Block, BlockEdit, BlockPatch, DEFAULT_BLOCK_LIMIT, Editor, NewBlock};
pub use message::{Message, MessageHit, MessageKind, NewMessage, Role, ToolCall};
pub use passage::{NewPassage, Passage, PassageHit, SupersedeKind, Supersession, TagMatch};
pub use price::{ModelPrice, PriceSource, UsageCost};
pub use run::{RunEvent, RunRecord, Step, StopReason, ToolReturn, ToolStatus, Usage};
pub use sleeptime::{
    PassChange, PassChangeKind, PassStatus, PassTrigger, PassUsage, SleeptimeBudget, SleeptimePass,
    SleeptimeSettings,
};
pub use tool::{DEFAULT_RETURN_CHAR_LIMIT, NewTool, Tool, ToolLanguage, ToolRule};
pub use trust::{EndpointKind, PendingEndpoint, ToolOrigin, source_hash};
pub use user::{AgentAccess, User, valid_user_name};

/// Timestamps are UTC everywhere; they serialize as RFC 3339.
pub type Timestamp = chrono::DateTime<chrono::Utc>;
