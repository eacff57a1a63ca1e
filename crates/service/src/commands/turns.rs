//! Conversation commands: reading the message list, runs (a new message, an approval
//! decision, regenerate, edit & resend) and stopping them, the message actions' previews,
//! deleting a message, a new conversation, and what stored runs left behind.

use super::{Access, AppCall, AppRun, Caller};
use crate::{Engram, MessageWindow, RunRecord, RunRequest, ToolEdit, TurnRollback, WindowAt};
use engram_core::{AgentAccess, AgentId, ApprovalDecision, Message, MessageId, Result, RunId};
use serde::Deserialize;
use std::sync::Arc;
use ts_rs::TS;

/// `list_messages`: scrolling back: the `limit` messages before `before` (the newest without
/// it), oldest first.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct ListMessagesArgs {
    agent_id: AgentId,
    before: Option<MessageId>,
    limit: usize,
}

impl AppCall for ListMessagesArgs {
    const NAME: &'static str = "list_messages";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<Message>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.recall()
            .before(&self.agent_id, self.before.as_ref(), self.limit)
            .await
    }
}

/// `message_window`: a window of the conversation at `at` (newest, start, before/after/around
/// a message, a date), at most `limit` messages, oldest first.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct MessageWindowArgs {
    agent_id: AgentId,
    at: WindowAt,
    limit: usize,
}

impl AppCall for MessageWindowArgs {
    const NAME: &'static str = "message_window";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = MessageWindow;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<MessageWindow> {
        e.recall()
            .window(&self.agent_id, &self.at, self.limit)
            .await
    }
}

/// `send_message` (a run): the agent's turn on a user message, streamed until `done`.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SendMessageArgs {
    agent_id: AgentId,
    text: String,
}

impl AppRun for SendMessageArgs {
    const NAME: &'static str = "send_message";
    fn into_run(self) -> (AgentId, RunRequest) {
        (self.agent_id, RunRequest::Message { text: self.text })
    }
}

/// `resolve_approval` (a run): approves or denies the pending tool call; the run goes on.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ResolveApprovalArgs {
    agent_id: AgentId,
    decision: ApprovalDecision,
}

impl AppRun for ResolveApprovalArgs {
    const NAME: &'static str = "resolve_approval";
    fn into_run(self) -> (AgentId, RunRequest) {
        let decisions = vec![self.decision];
        (self.agent_id, RunRequest::Approvals { decisions })
    }
}

/// `regenerate` (a run): rolls back the last turn and runs it again.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct RegenerateArgs {
    agent_id: AgentId,
}

impl AppRun for RegenerateArgs {
    const NAME: &'static str = "regenerate";
    fn into_run(self) -> (AgentId, RunRequest) {
        (self.agent_id, RunRequest::Regenerate)
    }
}

/// `edit_and_resend` (a run): replaces a user message and runs from there.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct EditAndResendArgs {
    agent_id: AgentId,
    message_id: MessageId,
    /// The message's new text.
    text: String,
}

impl AppRun for EditAndResendArgs {
    const NAME: &'static str = "edit_and_resend";
    fn into_run(self) -> (AgentId, RunRequest) {
        let request = RunRequest::EditAndResend {
            message_id: self.message_id,
            text: self.text,
        };
        (self.agent_id, request)
    }
}

/// `attach_run` (answered by each transport): joins the agent's run in flight, streaming
/// what it sent so far and then the rest.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AttachRunArgs {
    /// The agent whose run to join.
    pub agent_id: AgentId,
}

/// `cancel_run`: stops the agent's run `run_id`, or all its runs without one; what already
/// arrived stays. Answers how many runs were told to stop.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct CancelRunArgs {
    agent_id: AgentId,
    run_id: Option<RunId>,
}

impl AppCall for CancelRunArgs {
    const NAME: &'static str = "cancel_run";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = usize;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<usize> {
        Ok(e.runs()
            .cancel_agent_run(&self.agent_id, self.run_id.as_ref()))
    }
}

/// `regenerate_preview`: what regenerating the last turn would undo.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct RegeneratePreviewArgs {
    agent_id: AgentId,
}

impl AppCall for RegeneratePreviewArgs {
    const NAME: &'static str = "regenerate_preview";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = TurnRollback;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<TurnRollback> {
        e.runs().regenerate_preview(&self.agent_id).await
    }
}

/// `rollback_preview`: what editing and resending `message_id` would undo.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct RollbackPreviewArgs {
    agent_id: AgentId,
    message_id: MessageId,
}

impl AppCall for RollbackPreviewArgs {
    const NAME: &'static str = "rollback_preview";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = TurnRollback;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<TurnRollback> {
        e.runs()
            .rollback_preview(&self.agent_id, &self.message_id)
            .await
    }
}

/// `delete_message`: deletes a message (an assistant message with its tool results);
/// answers the ids removed.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteMessageArgs {
    agent_id: AgentId,
    message_id: MessageId,
}

impl AppCall for DeleteMessageArgs {
    const NAME: &'static str = "delete_message";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = Vec<MessageId>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.recall().delete(&self.agent_id, &self.message_id).await
    }
}

/// `reset_messages`: a new conversation: the context window restarts, recall keeps every
/// message. Answers how many messages left the context window.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ResetMessagesArgs {
    agent_id: AgentId,
}

impl AppCall for ResetMessagesArgs {
    const NAME: &'static str = "reset_messages";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = usize;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<usize> {
        e.recall().reset(&self.agent_id).await
    }
}

/// `run_records`: how the agent's runs ended.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct RunRecordsArgs {
    agent_id: AgentId,
    /// Only these runs; every run of the agent when absent.
    run_ids: Option<Vec<RunId>>,
}

impl AppCall for RunRecordsArgs {
    const NAME: &'static str = "run_records";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<RunRecord>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.runs()
            .records(&self.agent_id, self.run_ids.as_deref())
            .await
    }
}

/// `run_edits`: the block edits the tool calls of `run_ids` made, from stored history.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct RunEditsArgs {
    agent_id: AgentId,
    /// The runs; none when absent.
    run_ids: Option<Vec<RunId>>,
}

impl AppCall for RunEditsArgs {
    const NAME: &'static str = "run_edits";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<ToolEdit>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.runs()
            .edits(&self.agent_id, self.run_ids.as_deref().unwrap_or_default())
            .await
    }
}
