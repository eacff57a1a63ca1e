//! Message actions on a conversation: regenerate the last turn, edit & resend a user
//! message, delete a message — and what a turn left behind for the chat to show after a reload
//! (how each run ended, the memory edits under each tool call).
//!
//! Regenerate and edit & resend are a rollback (`MessageRows::rollback_from`: the replaced turns'
//! messages, steps, usage, passages and memory edits, in one transaction, refused when someone
//! else changed one of those blocks since) followed by a new run. Everything a new run checks
//! before writing is checked before the rollback too, so a refusal loses nothing. The check,
//! the rollback and the new run all hold the agent's turn — the runtime's per-agent lock that
//! every run holds — so no other run can start or write between them (a rewrite is refused
//! while anyone holds or waits for the turn, rather than waiting and rolling back what that
//! run wrote).

use crate::rooms::{Recall, Runs};
use crate::{Engram, Notice, RunRequest};
use engram_agent::{Claim, EventSink, LeaseHold, RunOutcome, Turn};
use engram_core::{
    AgentId, Error, Message, MessageId, MessageKind, NewMessage, Result, Role, RunId,
};
use engram_store::{RunRecord, ToolEdit, TurnRollback};
use tokio_util::sync::CancellationToken;

impl Engram {
    /// The agent's turn for a run that rewrites the conversation first (regenerate, edit &
    /// resend), taken with the run's `claim`: refused while another run of the agent is in
    /// flight or queued, or a tool call waits for approval. The check, the rollback and the
    /// new run all happen under this one turn, the lock every run of the agent holds, so no
    /// run can slip in between them.
    pub(crate) async fn turn_for_rewrite(&self, claim: Claim) -> Result<Turn> {
        let agent = claim.agent().clone();
        let turn = claim.turn_alone().ok_or_else(busy)?;
        self.refuse_while_waiting(&agent).await?;
        Ok(turn)
    }

    /// The agent's lease for a change to its conversation made in `turn` (a delete, a reset):
    /// on a database shared by replicas, a run on another replica holds it while it works, so
    /// the change waits for that run (up to the lease wait, then `agent_busy`) instead of
    /// cutting into it. On this machine's own database the turn alone decides.
    pub(crate) async fn lease_for_change(&self, turn: &Turn) -> Result<LeaseHold> {
        self.runtime.lease_for(turn, &RunId::default()).await
    }

    /// Refuses to change the conversation while a tool call waits for approval: rolling back
    /// or deleting then would strand the waiting call.
    async fn refuse_while_waiting(&self, agent: &AgentId) -> Result<()> {
        if let Some(p) = self.backend.pending_approval(agent).await? {
            return Err(Error::Conflict(format!(
                "the call to '{}' waits for your approval; approve or deny it first",
                p.tool_call.name
            )));
        }
        Ok(())
    }

    pub(crate) async fn last_user_message(&self, agent: &AgentId) -> Result<Message> {
        self.backend
            .last_user_message(agent)
            .await?
            .ok_or_else(|| Error::invalid("there is no message of yours to answer again"))
    }

    /// Checks that `message` is one of the agent's messages that a person wrote.
    pub(crate) async fn check_resendable(
        &self,
        agent: &AgentId,
        message: &MessageId,
    ) -> Result<()> {
        let m = self.recall().get(agent, message).await?;
        if m.role != Role::User || m.kind != MessageKind::Chat {
            return Err(Error::invalid(
                "only a message you wrote can be edited and resent",
            ));
        }
        Ok(())
    }

    /// Rolls back from `from` and runs `input`, all in `turn`, refusing first whatever would
    /// make the new run fail to start, so a refusal loses nothing.
    pub(crate) async fn resend(
        &self,
        turn: &Turn,
        from: &MessageId,
        input: NewMessage,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let agent = turn.agent();
        self.check_pending_endpoints(agent).await?;
        self.runtime.preflight(agent).await?;
        // The lease is taken before the rollback and kept by the new run, so no run on
        // another replica can come in between them.
        let run_id = input.run_id.clone().unwrap_or_default();
        let hold = self.runtime.lease_for(turn, &run_id).await?;
        let undone = self
            .backend
            .rollback_from(Some(hold.lease()), agent, from)
            .await?;
        self.announce_rollback(&undone).await;
        let input = NewMessage {
            run_id: Some(run_id),
            ..input
        };
        self.runtime
            .run_held(turn, hold, input, events, cancel)
            .await
    }

    async fn announce_rollback(&self, undone: &TurnRollback) {
        let agent_id = undone.agent_id.clone();
        for b in &undone.blocks {
            self.notify_block(&b.block_id).await;
        }
        if !undone.passages.is_empty() {
            self.notify(Notice::ArchivalChanged {
                agent_id: agent_id.clone(),
            });
        }
        self.notify(Notice::MessagesChanged { agent_id });
    }
}

impl Runs<'_> {
    /// What regenerating the agent's last turn would undo: everything from its last user
    /// message on. Nothing changes.
    ///
    /// Errors: `not_found` (agent); `invalid_input` when there is no user message to
    /// regenerate from.
    pub async fn regenerate_preview(self, agent: &AgentId) -> Result<TurnRollback> {
        let last = self.engram.last_user_message(agent).await?;
        self.engram.backend.rollback_preview(agent, &last.id).await
    }

    /// What editing and resending user message `from` would undo: that message and everything
    /// after it. Nothing changes. Blocks with `changed_later` set would refuse the rollback.
    ///
    /// Errors: `not_found` (agent or message).
    pub async fn rollback_preview(self, agent: &AgentId, from: &MessageId) -> Result<TurnRollback> {
        self.engram.backend.rollback_preview(agent, from).await
    }

    /// Re-runs the agent's last turn: rolls back everything from its last user message on (see
    /// [`rollback_preview`](Self::rollback_preview)), then sends the same text again, streaming
    /// the new run into `events` ([`RunRequest::Regenerate`]). Also "retry" after a run that
    /// failed.
    ///
    /// Errors (nothing changed): `not_found`; `invalid_input` without a user message;
    /// `conflict` while a run of the agent is in flight or a call waits for approval, or
    /// naming the blocks someone else changed after the turn's edits; the configuration errors
    /// of [`send_message`](Self::send_message).
    pub async fn regenerate(
        self,
        agent: &AgentId,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome> {
        self.request(agent, RunRequest::Regenerate, events, cancel)
            .await
    }

    /// Replaces user message `message` with `text` and runs the agent again from there: rolls
    /// back that message and everything after it, then sends `text`, streaming into `events`
    /// ([`RunRequest::EditAndResend`]).
    ///
    /// Errors (nothing changed): `invalid_input` for an empty text or a message that is not
    /// one a person wrote; otherwise as [`regenerate`](Self::regenerate).
    pub async fn edit_and_resend(
        self,
        agent: &AgentId,
        message: &MessageId,
        text: &str,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome> {
        let request = RunRequest::EditAndResend {
            message_id: message.clone(),
            text: text.to_owned(),
        };
        self.request(agent, request, events, cancel).await
    }

    /// How the agent's runs ended (stop reason, error, usage), oldest first; only those in
    /// `runs` when given. Errors: `not_found`.
    pub async fn records(self, agent: &AgentId, runs: Option<&[RunId]>) -> Result<Vec<RunRecord>> {
        self.engram.backend.list_runs(agent, runs).await
    }

    /// The block edits the agent's tool calls made in `runs`, oldest first, from the stored
    /// history: what the chat shows as a diff under each tool call.
    /// Errors: `not_found`.
    pub async fn edits(self, agent: &AgentId, runs: &[RunId]) -> Result<Vec<ToolEdit>> {
        self.engram.backend.tool_edits(agent, runs).await
    }
}

impl Recall<'_> {
    /// Deletes one of the agent's messages (an assistant message takes its tool results
    /// along). Memory edits and passages stay; returns the ids removed.
    ///
    /// Errors: `not_found`; `invalid_input` for a tool result; `conflict` while a run of the
    /// agent is in flight here; `agent_busy` while one on another replica goes on past the
    /// lease wait.
    pub async fn delete(self, agent: &AgentId, id: &MessageId) -> Result<Vec<MessageId>> {
        // Holding the agent's turn and lease: no run can start while the message goes.
        let turn = self.engram.runtime.try_turn(agent)?.ok_or_else(busy)?;
        self.engram.refuse_while_waiting(agent).await?;
        let hold = self.engram.lease_for_change(&turn).await?;
        let removed = self
            .engram
            .backend
            .delete_message(Some(hold.lease()), agent, id)
            .await;
        hold.release().await;
        drop(turn);
        let removed = removed?;
        self.engram.notify(Notice::MessagesChanged {
            agent_id: agent.clone(),
        });
        Ok(removed)
    }
}

/// The refusal while the agent runs.
fn busy() -> Error {
    Error::Conflict("the agent is answering; stop the run first".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::{LlmConfig, NewAgent, NewMessage};
    use std::time::Duration;

    /// An agent with one user message, on a model nothing answers (nothing here calls it).
    async fn agent_with_a_message(
        dir: &std::path::Path,
    ) -> (std::sync::Arc<Engram>, AgentId, MessageId) {
        let e = Engram::open_for_test(dir);
        let mut llm = LlmConfig::new("openai/mock-small");
        llm.base_url = Some("http://127.0.0.1:9/v1".into());
        llm.context_window = 32_000;
        let agent = e
            .agents()
            .create(NewAgent {
                name: "Sam".into(),
                llm: Some(llm),
                ..NewAgent::default()
            })
            .await
            .unwrap()
            .agent
            .id;
        let m = e
            .store
            .messages()
            .append(&agent, &[NewMessage::user("hello")])
            .unwrap();
        (e, agent, m[0].id.clone())
    }

    /// The moment the race leaves open: a run took the agent's turn after the "is it running"
    /// check passed. Neither a rollback, a delete, a reset nor a text edit may go on under it.
    #[tokio::test]
    async fn no_conversation_change_happens_while_a_run_holds_the_agents_turn() {
        let dir = tempfile::tempdir().unwrap();
        let (e, agent, message) = agent_with_a_message(dir.path()).await;
        let turn = e
            .runtime
            .try_turn(&agent)
            .unwrap()
            .expect("the turn is free");

        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let regenerated = tokio::time::timeout(
            Duration::from_secs(5),
            e.runs().regenerate(&agent, &tx, CancellationToken::new()),
        )
        .await;
        assert!(
            matches!(regenerated, Ok(Err(Error::Conflict(_)))),
            "{regenerated:?}"
        );
        let deleted = e.recall().delete(&agent, &message).await;
        assert!(matches!(deleted, Err(Error::Conflict(_))), "{deleted:?}");
        let reset = e.recall().reset(&agent).await;
        assert!(matches!(reset, Err(Error::Conflict(_))), "{reset:?}");
        let edited = e
            .recall()
            .edit(&agent, &message, Some("rewritten mid-run"), None)
            .await;
        assert!(matches!(edited, Err(Error::Conflict(_))), "{edited:?}");
        assert_eq!(
            e.store.messages().in_context(&agent).unwrap().len(),
            e.store.messages().list(&agent, None, 10).unwrap().len(),
            "the context window was not emptied"
        );
        let kept: Vec<String> = e
            .store
            .messages()
            .list(&agent, None, 10)
            .unwrap()
            .into_iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content)
            .collect();
        assert_eq!(kept, ["hello"], "nothing was rolled back or deleted");

        // Once the run is done, the same edit and delete go through.
        drop(turn);
        let edited = e
            .recall()
            .edit(&agent, &message, Some("rewritten after"), None)
            .await
            .unwrap();
        assert_eq!(edited.content, "rewritten after");
        assert_eq!(
            e.recall().delete(&agent, &message).await.unwrap(),
            [message]
        );
    }
}
