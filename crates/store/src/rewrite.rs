//! Edits Letta's API offers on stored rows: an agent's tags, a message's text (message
//! modify), a passage's text and tags (passage modify), and a context reset (reset messages).
//! Each is one transaction; the search indexes follow through triggers.

use crate::rooms::{AgentRows, MessageRows, PassageRows};
use crate::sql;
use crate::sql::DbResult;
use engram_core::{AgentId, Error, Message, MessageId, Passage, PassageId, Result, ToolCall};
use engram_store_api::Lease;
use rusqlite::{Connection, OptionalExtension, params};

pub(crate) fn write_tags(tx: &Connection, agent: &AgentId, tags: &[String]) -> Result<()> {
    tx.prepare_cached("DELETE FROM agent_tags WHERE agent_id = ?1")
        .db()?
        .execute([agent.as_str()])
        .db()?;
    let mut insert = tx
        .prepare_cached("INSERT INTO agent_tags (agent_id, tag, position) VALUES (?1, ?2, ?3)")
        .db()?;
    for (i, t) in engram_store_api::clean_tags(tags).into_iter().enumerate() {
        insert
            .execute(params![agent.as_str(), t, crate::sql::sat(i)])
            .db()?;
    }
    Ok(())
}

impl AgentRows<'_> {
    /// Replaces the agent's tags (kept in the given order, duplicates and blank tags dropped).
    /// Errors: `NotFound("agent")`.
    pub fn set_tags(self, agent: &AgentId, tags: &[String]) -> Result<()> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            write_tags(tx, agent, tags)
        })
    }

    /// The agent's tags in their order (empty for an unknown agent).
    pub fn tags(self, agent: &AgentId) -> Result<Vec<String>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached("SELECT tag FROM agent_tags WHERE agent_id = ?1 ORDER BY position")
                .db()?;
            let rows = stmt.query_map([agent.as_str()], |r| r.get(0)).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }
}

impl MessageRows<'_> {
    /// Sets a message's text and, when given, its reasoning and tool calls (same ids, new
    /// arguments), as the model will see them from now on; recall search follows.
    /// Errors: `NotFound("message", id)` if the agent has no such message.
    pub fn update_text(
        self,
        agent: &AgentId,
        id: &MessageId,
        content: &str,
        reasoning: Option<&str>,
        tool_calls: Option<&[ToolCall]>,
    ) -> Result<Message> {
        let calls = tool_calls.map(crate::sql::to_json).transpose()?;
        self.store.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE messages SET content = ?3, reasoning = coalesce(?4, reasoning),
                         tool_calls = coalesce(?5, tool_calls)
                     WHERE id = ?1 AND agent_id = ?2",
                )
                .db()?
                .execute(params![
                    id.as_str(),
                    agent.as_str(),
                    content,
                    reasoning,
                    calls
                ])
                .db()?;
            if n == 0 {
                return Err(Error::not_found("message", id.as_str()));
            }
            Ok(())
        })?;
        self.get(id)
    }

    /// Empties the agent's context window (Letta's reset messages): every message leaves the
    /// window but stays in recall memory, listed and searchable; the recursive summary of the
    /// old window goes too, and so does a tool call waiting for approval (it is never run).
    /// Returns how many messages left the window. With `lease`, the write is fenced by it.
    ///
    /// Errors: `LeaseLost`; `NotFound("agent")`.
    pub fn reset_context(self, lease: Option<&Lease>, agent: &AgentId) -> Result<usize> {
        let _held = lease.map(|l| self.store.hold_lease(l)).transpose()?;
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            let n = tx
                .prepare_cached(
                    "UPDATE messages SET in_context = 0 WHERE agent_id = ?1 AND in_context = 1",
                )
                .db()?
                .execute([agent.as_str()])
                .db()?;
            tx.prepare_cached("UPDATE agents SET summary = NULL WHERE id = ?1")
                .db()?
                .execute([agent.as_str()])
                .db()?;
            // A call waiting for approval left the window with its message: nothing waits now.
            tx.prepare_cached("DELETE FROM pending_approvals WHERE agent_id = ?1")
                .db()?
                .execute([agent.as_str()])
                .db()?;
            Ok(n)
        })
    }
}

impl PassageRows<'_> {
    /// Sets a passage's text and/or tags, in one transaction. A new text replaces the stored
    /// embedding with `embedding` (the new text's vector), or drops it when `None` (it
    /// described the old text). Errors: `NotFound("passage", id)` if the agent has no such
    /// passage; `Invalid` for blank text or a bad vector. Nothing changes on error.
    pub fn update(
        self,
        agent: &AgentId,
        id: &PassageId,
        text: Option<&str>,
        tags: Option<&[String]>,
        embedding: Option<&[f32]>,
    ) -> Result<Passage> {
        if text.is_some_and(|t| t.trim().is_empty()) {
            return Err(Error::invalid("a passage needs some text"));
        }
        if let Some(v) = embedding {
            crate::passages::check_vector(v)?;
        }
        self.store.write(|tx| {
            let found: Option<i64> = tx
                .prepare_cached("SELECT pk FROM passages WHERE id = ?1 AND agent_id = ?2")
                .db()?
                .query_row(params![id.as_str(), agent.as_str()], |r| r.get(0))
                .optional()
                .db()?;
            if found.is_none() {
                return Err(Error::not_found("passage", id.as_str()));
            }
            if let Some(text) = text {
                tx.prepare_cached(
                    "UPDATE passages SET text = ?2, embedding_dim = ?3, embedding = ?4
                     WHERE id = ?1",
                )
                .db()?
                .execute(params![
                    id.as_str(),
                    text,
                    embedding.map(|v| crate::sql::sat(v.len())),
                    embedding.map(crate::search::encode_vector)
                ])
                .db()?;
            }
            if let Some(tags) = tags {
                tx.prepare_cached("DELETE FROM passage_tags WHERE passage_id = ?1")
                    .db()?
                    .execute([id.as_str()])
                    .db()?;
                crate::passages::insert_tags(tx, id, &engram_store_api::clean_tags(tags))?;
            }
            Ok(())
        })?;
        self.get(id)
    }
}
