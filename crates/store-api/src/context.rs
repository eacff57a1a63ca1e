//! What the runtime keeps beside recall memory to build each context window: which messages
//! are in the window, the recursive summary of those folded out of it (compactions), the
//! compiled system prompt it last built, and how each run ended.

use async_trait::async_trait;
use engram_core::{Agent, AgentId, Message, MessageId, Result, RunId, RunRecord};

/// The context window's bookkeeping, on any backend.
///
/// Guarantees, beyond each method's docs:
/// - **A compaction is one transaction**: the agent's new summary, its messages taken out of
///   the window and the record of where it happened are stored together, or nothing is (an id
///   that is not one of the agent's messages changes nothing). Evicted messages stay in recall
///   memory: listed, counted and searched as before.
/// - **A cache is not a setting**: writing the system-prompt cache leaves the agent's
///   `updated_at` as it was.
#[async_trait]
pub trait ContextStore: Send + Sync {
    /// The messages in the agent's context window, by `seq`. Errors: `NotFound("agent")`.
    async fn in_context_messages(&self, agent: &AgentId) -> Result<Vec<Message>>;

    /// Takes `ids` out of the agent's context window and stores `summary` as its recursive
    /// summary, with a compaction record at the newest of them (where the chat shows a
    /// divider), in one transaction. MemGPT's recursive summary (Packer et al., 2023): the
    /// new summary covers everything folded so far.
    ///
    /// Errors: `NotFound("agent")`; `NotFound("message", id)` for an id that is not one of the
    /// agent's messages (nothing changes then).
    async fn evict_messages(&self, agent: &AgentId, ids: &[MessageId], summary: &str)
    -> Result<()>;

    /// The agent as stored, with its cached compiled system prompt: `(key it was built from,
    /// prompt)`, or `None` before the first. Read together because the runtime needs both
    /// before every step (one statement on a database server). Errors: `NotFound("agent")`.
    async fn agent_with_system_cache(
        &self,
        agent: &AgentId,
    ) -> Result<(Agent, Option<(String, String)>)>;

    /// Caches the compiled system prompt and the memory section it was built from.
    /// Errors: `NotFound("agent")`.
    async fn set_system_cache(
        &self,
        agent: &AgentId,
        memory_section: &str,
        prompt: &str,
    ) -> Result<()>;

    /// What the agent's memory holds beyond its window, for the `<memory_metadata>` of the
    /// system prompt: `(messages, passages)`, every message of recall memory (in the window or
    /// not) and every passage stored, superseded ones included. Errors: `NotFound("agent")`.
    async fn memory_counts(&self, agent: &AgentId) -> Result<(u64, u64)>;

    /// Records how a run ended, replacing an earlier record of the same run (a run resumed
    /// after an approval ends again). Errors: `NotFound("agent")`.
    async fn record_run(&self, run: &RunRecord) -> Result<()>;

    /// The agent's finished runs whose id is in `ids` (all when `None`), oldest first (end
    /// time, then id). Errors: `NotFound("agent")`.
    async fn list_runs(&self, agent: &AgentId, ids: Option<&[RunId]>) -> Result<Vec<RunRecord>>;
}
