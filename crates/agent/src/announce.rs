//! What the loop tells a run's listeners once something is committed: a step's changes, or a
//! tool call that now waits for a person. Both the fresh step and the continuation after an
//! approval decision announce through here.

use crate::EventSink;
use engram_core::{AgentId, RunEvent, Usage};
use engram_store_api::StepStore;

/// Emits what a committed step changed: every block change in commit order (two edits of one
/// block in one step are two events, each naming its own tool call), messages, usage.
pub(crate) fn step(
    events: &EventSink,
    agent_id: &AgentId,
    committed: &engram_store::CommittedStep,
    usage: Usage,
) {
    for change in &committed.blocks {
        let _ = events.send(RunEvent::MemoryChanged {
            agent_id: agent_id.clone(),
            block: change.block.clone(),
            tool_call_id: change.tool_call_id.clone(),
        });
    }
    for m in &committed.messages {
        let _ = events.send(RunEvent::Message { message: m.clone() });
    }
    if usage.step_count > 0 {
        let _ = events.send(RunEvent::Usage { usage });
    }
}

/// Emits [`RunEvent::ApprovalRequested`] for the agent's pending call, as stored.
pub(crate) async fn pending(store: &dyn StepStore, events: &EventSink, agent_id: &AgentId) {
    match store.pending_approval(agent_id).await {
        Ok(Some(approval)) => {
            let _ = events.send(RunEvent::ApprovalRequested { approval });
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(%agent_id, error = %e, "reading the pending approval failed"),
    }
}
