//! Writes that wait for the user's approval: a client set so (`--approve-writes`, or per agent)
//! does not change memory at once. Its write is checked against memory as it is (so a write that
//! cannot apply is refused at once, as without approval), stored as a
//! [`PendingClientWrite`] the window shows, and the client's request waits for the decision:
//!
//! - approve: the window's process replays the write with the client's name as author, against
//!   the block as it is then (an edit made meanwhile that conflicts refuses it, never overwritten)
//!   and stores the tool result, which the waiting request returns;
//! - deny: the request returns a tool error saying the user declined;
//! - no answer within the client's `approval_timeout`: the write is withdrawn and the request
//!   returns a tool error saying so.
//!
//! The waiting request only polls the row, so other requests and clients, and the agents' runs,
//! go on meanwhile. When the request goes away (the client cancels, the server stops) the row is
//! withdrawn; a server killed outright stops showing life and its row is dropped from the list
//! after [`SILENT`], so an approval never applies a write nobody waits for.

use super::files::block_text;
use super::paths;
use super::{MemoryClient, MemoryCommand, MemoryError, MemoryGrant};
use crate::Engram;
use crate::rooms::MemoryServer;
use engram_core::client_write::declined_message;
use engram_core::{
    Applied, BlockOp, ClientWriteId, ClientWriteOutcome, Error, PendingClientWrite, ReplaceCount,
    Result,
};
use engram_store::{ClientWriteState, Store};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::time::Instant;

/// How long a write waits for the user unless the server was told otherwise.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// How often a waiting request looks for the decision.
const POLL: Duration = Duration::from_millis(200);
/// How often a waiting request shows it still waits.
const HEARTBEAT: Duration = Duration::from_secs(2);
/// A waiting request silent this long is taken to be gone (its server was killed).
const SILENT: Duration = Duration::from_secs(10);
/// How long a request waits for an approved write that is being applied to finish.
const APPLYING_GRACE: Duration = Duration::from_secs(60);

/// A write as stored for replay.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case")]
pub(crate) enum ClientWrite {
    /// A `memory` command that writes.
    Memory {
        /// The command.
        command: MemoryCommand,
    },
    /// `add_memory`.
    AddMemory {
        /// The note.
        text: String,
        /// Its tags.
        tags: Vec<String>,
        /// Which agent, as the client named it.
        agent: Option<String>,
    },
}

/// The stored call: who asked, and what.
#[derive(Serialize, Deserialize)]
struct Call {
    client: MemoryClient,
    write: ClientWrite,
}

/// What the user is shown for a write.
pub(crate) struct Preview {
    action: String,
    path: String,
    label: Option<String>,
    summary: String,
    before: Option<String>,
    after: Option<String>,
}

/// Withdraws the row when the waiting request goes away before an outcome was read.
struct Withdraw {
    store: Store,
    id: ClientWriteId,
    armed: bool,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.store.client_writes().settle(&self.id, "withdrawn", "");
            let _ = self.store.client_writes().delete(&self.id);
        }
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 60;
    let one_line = text.replace('\n', "⏎");
    if one_line.chars().count() <= MAX {
        one_line
    } else {
        format!("{}…", one_line.chars().take(MAX).collect::<String>())
    }
}

impl Engram {
    /// What `command` would change, checked against memory now: `None` when it would change
    /// nothing. Errors: the refusal the write itself would give.
    fn preview(
        &self,
        client: &MemoryClient,
        command: &MemoryCommand,
    ) -> Result<Option<Preview>, MemoryError> {
        let edit = |path: &str, op: BlockOp, action: &str, summary: String| {
            let (grant, block) = self.writable_block(client, path)?;
            let file = paths::file_path(client, grant, &block.label);
            match op.apply(&block, false) {
                Ok(Applied::Changed(after)) => Ok(Some(Preview {
                    action: action.into(),
                    path: file,
                    label: Some(block.label.clone()),
                    summary,
                    before: Some(block.value),
                    after: Some(after),
                })),
                Ok(Applied::Unchanged) => Ok(None),
                Err(error) => Err(MemoryError::Refused { path: file, error }),
            }
        };
        match command {
            MemoryCommand::View { .. } => Ok(None),
            MemoryCommand::Create { path, file_text } => {
                let (grant, label) = self.writable_file(client, path)?;
                if self
                    .store
                    .blocks()
                    .by_label(&grant.agent_id, &label)
                    .is_ok()
                {
                    return Err(MemoryError::Exists(path.trim().to_owned()));
                }
                Ok(Some(Preview {
                    action: "create".into(),
                    path: paths::file_path(client, grant, &label),
                    label: Some(label),
                    summary: "create a new file".into(),
                    before: None,
                    after: Some(block_text(file_text).to_owned()),
                }))
            }
            MemoryCommand::StrReplace {
                path,
                old_str,
                new_str,
            } => edit(
                path,
                BlockOp::Replace {
                    old: old_str.clone(),
                    new: new_str.clone(),
                    count: ReplaceCount::Once,
                },
                "str_replace",
                format!(
                    "replace \"{}\" with \"{}\"",
                    shorten(old_str),
                    shorten(new_str)
                ),
            ),
            MemoryCommand::Insert {
                path,
                insert_line,
                insert_text,
            } => edit(
                path,
                BlockOp::Insert {
                    line: *insert_line,
                    text: block_text(insert_text).to_owned(),
                },
                "insert",
                match insert_line {
                    0 => "insert text at the top".to_owned(),
                    -1 => "insert text at the end".to_owned(),
                    n => format!("insert text after line {n}"),
                },
            ),
            MemoryCommand::Delete { path } => {
                let (grant, block) = self.writable_block(client, path)?;
                Ok(Some(Preview {
                    action: "delete".into(),
                    path: paths::file_path(client, grant, &block.label),
                    label: Some(block.label),
                    summary: "remove the file from the agent's memory (the block is kept, \
                              detached, with its history)"
                        .into(),
                    before: Some(block.value),
                    after: None,
                }))
            }
            MemoryCommand::Rename { old_path, new_path } => {
                let (grant, block, label) = self.rename_target(client, old_path, new_path)?;
                Ok(Some(Preview {
                    action: "rename".into(),
                    path: paths::file_path(client, grant, &block.label),
                    label: Some(block.label),
                    summary: format!("rename to {}", paths::file_path(client, grant, &label)),
                    before: None,
                    after: None,
                }))
            }
        }
    }

    /// `add_memory` for an agent whose writes wait for approval.
    pub(crate) async fn ask_to_add_memory(
        &self,
        client: &MemoryClient,
        grant: &MemoryGrant,
        text: &str,
        tags: Vec<String>,
        agent: Option<&str>,
    ) -> Result<String, MemoryError> {
        let summary = if tags.is_empty() {
            "save a note to archival memory".to_owned()
        } else {
            format!("save a note to archival memory, tagged {}", tags.join(", "))
        };
        let preview = Preview {
            action: "add_memory".into(),
            path: "archival memory".into(),
            label: None,
            summary,
            before: None,
            after: Some(text.to_owned()),
        };
        let write = ClientWrite::AddMemory {
            text: text.to_owned(),
            tags,
            agent: agent.map(str::to_owned),
        };
        self.ask_user(client, grant, preview, write).await
    }

    /// Stores the write for the user and waits for the outcome.
    async fn ask_user(
        &self,
        client: &MemoryClient,
        grant: &MemoryGrant,
        preview: Preview,
        write: ClientWrite,
    ) -> Result<String, MemoryError> {
        let timeout = client.approval_timeout;
        let now = chrono::Utc::now();
        let tool = match write {
            ClientWrite::Memory { .. } => "memory",
            ClientWrite::AddMemory { .. } => "add_memory",
        };
        let pending = PendingClientWrite {
            id: ClientWriteId::new(),
            client: client.name.clone(),
            agent_id: grant.agent_id.clone(),
            agent_name: self
                .store
                .agents()
                .get(&grant.agent_id)
                .map_or_else(|_| grant.dir.clone(), |a| a.name),
            tool: tool.into(),
            action: preview.action,
            path: preview.path,
            label: preview.label,
            summary: preview.summary,
            before: preview.before,
            after: preview.after,
            requested_at: now,
            expires_at: now + timeout,
        };
        let call = Call {
            client: client.clone(),
            write,
        };
        let call = serde_json::to_string(&call)
            .map_err(|e| Error::Internal(format!("a client write: {e}")))?;
        self.store.client_writes().insert(&pending, &call)?;
        self.notify(crate::Notice::ClientWritesChanged);
        let mut guard = Withdraw {
            store: self.store.clone(),
            id: pending.id.clone(),
            armed: true,
        };
        let outcome = self.wait_for_decision(&pending.id, timeout).await;
        guard.armed = false;
        let _ = self.store.client_writes().delete(&pending.id);
        self.notify(crate::Notice::ClientWritesChanged);
        outcome
    }

    async fn wait_for_decision(
        &self,
        id: &ClientWriteId,
        timeout: Duration,
    ) -> Result<String, MemoryError> {
        let deadline = Instant::now() + timeout;
        let mut beat = Instant::now();
        loop {
            tokio::time::sleep(POLL).await;
            match self.store.client_writes().state(id)? {
                None => return Err(MemoryError::Withdrawn),
                Some(ClientWriteState::Pending) => {
                    if Instant::now() >= deadline {
                        if self.store.client_writes().settle(id, "timed_out", "")? {
                            return Err(MemoryError::TimedOut {
                                secs: timeout.as_secs(),
                            });
                        }
                        // Decided at the last moment: read the outcome next time round.
                        continue;
                    }
                    if beat.elapsed() >= HEARTBEAT {
                        self.store.client_writes().alive(id)?;
                        beat = Instant::now();
                    }
                }
                Some(ClientWriteState::Applying) => {
                    if Instant::now() >= deadline + APPLYING_GRACE {
                        return Err(MemoryError::Withdrawn);
                    }
                }
                Some(ClientWriteState::Done { status, message }) => {
                    return match status.as_str() {
                        "applied" => Ok(message),
                        "refused" => Err(MemoryError::RefusedAfterApproval(message)),
                        "denied" => Err(MemoryError::Declined(message)),
                        _ => Err(MemoryError::Withdrawn),
                    };
                }
            }
        }
    }

    /// Why a write can no longer be decided.
    fn no_longer_waiting(&self, id: &ClientWriteId) -> Result<Error> {
        Ok(match self.store.client_writes().get(id)? {
            None => Error::Conflict(
                "this write no longer waits for an answer (the client timed out or stopped, or \
                 it was answered already); nothing was written"
                    .into(),
            ),
            Some(w) => Error::Conflict(format!(
                "'{}' no longer waits for this write ({} {}): it timed out, was stopped or \
                 was answered already; nothing was written",
                w.client, w.action, w.path
            )),
        })
    }
}

impl MemoryServer<'_> {
    /// Runs one `memory` command for `client` as [`command`](Self::command)
    /// does, except that a write to an agent whose writes wait for approval waits for the
    /// user's decision first (up to `client.approval_timeout`).
    ///
    /// Errors: as `memory_command`; [`MemoryError::Declined`], [`MemoryError::TimedOut`],
    /// [`MemoryError::Withdrawn`], [`MemoryError::RefusedAfterApproval`] for a write that
    /// waited.
    pub async fn tool(
        self,
        client: &MemoryClient,
        command: &MemoryCommand,
    ) -> Result<String, MemoryError> {
        if command.writes() {
            let path = match command {
                MemoryCommand::Rename { old_path, .. } => old_path,
                MemoryCommand::Create { path, .. }
                | MemoryCommand::StrReplace { path, .. }
                | MemoryCommand::Insert { path, .. }
                | MemoryCommand::Delete { path }
                | MemoryCommand::View { path, .. } => path,
            };
            let (grant, _) = self.engram.writable_file(client, path)?;
            if grant.approve {
                return match self.engram.preview(client, command)? {
                    Some(preview) => {
                        let write = ClientWrite::Memory {
                            command: command.clone(),
                        };
                        self.engram.ask_user(client, grant, preview, write).await
                    }
                    // Nothing would change: nothing to ask about.
                    None => self.command(client, command).await,
                };
            }
        }
        self.command(client, command).await
    }

    /// The clients' writes waiting for the user, oldest first (writes whose client stopped
    /// waiting are dropped). Errors: `storage`.
    pub fn pending_writes(self) -> Result<Vec<PendingClientWrite>> {
        self.engram.store.client_writes().pending(alive_since())
    }

    /// Decides a client's write waiting for approval. Approving applies it now, with the
    /// client's name as author, to memory as it is now; the client gets the tool's result
    /// (status `applied`), or, when the write no longer applies (an edit made meanwhile
    /// conflicts with it), the refusal as a tool error (status `refused`; nothing written).
    /// Denying answers the client with a tool error carrying `reason` (status `denied`).
    ///
    /// Errors: `conflict` when the client no longer waits (it timed out, was stopped, or the
    /// write was decided already) or the id is unknown.
    pub async fn decide_write(
        self,
        id: &ClientWriteId,
        approve: bool,
        reason: Option<&str>,
    ) -> Result<ClientWriteOutcome> {
        if !approve {
            let message = declined_message(reason);
            if self
                .engram
                .store
                .client_writes()
                .settle(id, "denied", &message)?
            {
                self.engram.notify(crate::Notice::ClientWritesChanged);
                return Ok(ClientWriteOutcome {
                    status: "denied".into(),
                    message,
                });
            }
            return Err(self.engram.no_longer_waiting(id)?);
        }
        let Some((_, call)) = self.engram.store.client_writes().claim(id, alive_since())? else {
            return Err(self.engram.no_longer_waiting(id)?);
        };
        let call: Call = match serde_json::from_str(&call) {
            Ok(c) => c,
            Err(e) => {
                let message = format!("the stored write cannot be read: {e}");
                self.engram
                    .store
                    .client_writes()
                    .finish(id, "refused", &message)?;
                return Err(Error::Internal(message));
            }
        };
        let mut client = call.client;
        for g in &mut client.grants {
            g.approve = false;
        }
        let result = match &call.write {
            ClientWrite::Memory { command } => self.command(&client, command).await,
            ClientWrite::AddMemory { text, tags, agent } => {
                self.add_memory(&client, text, tags.clone(), agent.as_deref())
                    .await
            }
        };
        let (status, message) = match result {
            Ok(text) => ("applied", text),
            Err(e) => ("refused", e.to_string()),
        };
        self.engram
            .store
            .client_writes()
            .finish(id, status, &message)?;
        self.engram.notify(crate::Notice::ClientWritesChanged);
        Ok(ClientWriteOutcome {
            status: status.into(),
            message,
        })
    }
}

/// Writes whose server showed life since this are still waited for.
fn alive_since() -> engram_core::Timestamp {
    chrono::Utc::now() - SILENT
}
