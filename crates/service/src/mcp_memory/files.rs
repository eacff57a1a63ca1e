//! The `memory` tool's commands on blocks: `view`, `create`, `str_replace`, `insert`,
//! `delete`, `rename`, with the argument names of Anthropic's memory tool.

use super::paths::{self, Target};
use super::view::{self, ViewRange};
use super::{MemoryClient, MemoryError, MemoryGrant};
use crate::Engram;
use crate::rooms::MemoryServer;
use engram_core::{Block, BlockOp, BlockPatch, Editor, NewBlock, ReplaceCount};
use engram_store::OpOutcome;
use serde::{Deserialize, Serialize};

/// One call of the `memory` tool, as its JSON arguments read (`{"command": "view", "path": …}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case", deny_unknown_fields)]
pub enum MemoryCommand {
    /// A directory listing, or a file with line numbers (`view_range`: first and last line,
    /// from 1; `-1` ends at the last line).
    View {
        /// `/memories`, a directory under it, or a file.
        path: String,
        /// `[first, last]`.
        #[serde(default)]
        view_range: Option<ViewRange>,
    },
    /// A new file: a new block of the agent with the default limit (raised to fit the text).
    Create {
        /// `/memories/<label>.md`.
        path: String,
        /// Its text.
        file_text: String,
    },
    /// Replaces text that occurs exactly once.
    StrReplace {
        /// The file.
        path: String,
        /// The text to find, exactly.
        old_str: String,
        /// Its replacement (empty or absent deletes it).
        #[serde(default)]
        new_str: String,
    },
    /// Inserts text after line `insert_line` (0 = at the top).
    Insert {
        /// The file.
        path: String,
        /// The line after which to insert; `-1` for the end.
        insert_line: i64,
        /// The text.
        insert_text: String,
    },
    /// Removes the file from the agent's memory. The block is detached, not destroyed: it
    /// stays among the blocks (with its history) and can be attached again.
    Delete {
        /// The file.
        path: String,
    },
    /// Renames a file of one agent (its block's label).
    Rename {
        /// The file.
        old_path: String,
        /// Its new path, in the same agent's directory.
        new_path: String,
    },
}

impl MemoryCommand {
    /// Whether the command changes memory.
    pub fn writes(&self) -> bool {
        !matches!(self, Self::View { .. })
    }
}

/// Text as a file says it and as a block holds it: one final newline is the file's, not the
/// block's.
pub(super) fn block_text(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

impl Engram {
    fn memory_view(
        &self,
        client: &MemoryClient,
        path: &str,
        range: Option<ViewRange>,
    ) -> Result<String, MemoryError> {
        match paths::parse(client, path)? {
            Target::Root => {
                let mut files = Vec::new();
                for grant in &client.grants {
                    for block in self.store.blocks().of_agent(&grant.agent_id)? {
                        files.push((paths::file_path(client, grant, &block.label), block.chars()));
                    }
                }
                Ok(view::dir(paths::ROOT, &files))
            }
            Target::Dir { grant, prefix } => self.view_dir(client, grant, &prefix, path),
            Target::File {
                grant,
                label,
                explicit,
            } => match self.store.blocks().by_label(&grant.agent_id, &label) {
                Ok(block) => view::file(&paths::file_path(client, grant, &label), &block, range),
                Err(engram_core::Error::NotFound { .. }) if !explicit => {
                    self.view_dir(client, grant, &format!("{label}/"), path)
                }
                Err(engram_core::Error::NotFound { .. }) => {
                    Err(MemoryError::NoSuchFile(path.trim().to_owned()))
                }
                Err(e) => Err(e.into()),
            },
        }
    }

    fn view_dir(
        &self,
        client: &MemoryClient,
        grant: &MemoryGrant,
        prefix: &str,
        path: &str,
    ) -> Result<String, MemoryError> {
        let files: Vec<(String, usize)> = self
            .store
            .blocks()
            .of_agent(&grant.agent_id)?
            .iter()
            .filter(|b| b.label.starts_with(prefix))
            .map(|b| (paths::file_path(client, grant, &b.label), b.chars()))
            .collect();
        if files.is_empty() && !prefix.is_empty() {
            return Err(MemoryError::NoSuchFile(path.trim().to_owned()));
        }
        let dir = format!("{}{prefix}", paths::dir_path(client, grant));
        Ok(view::dir(dir.trim_end_matches('/'), &files))
    }

    /// A file path the client may write: its agent's grant and the label.
    pub(super) fn writable_file<'c>(
        &self,
        client: &'c MemoryClient,
        path: &str,
    ) -> Result<(&'c MemoryGrant, String), MemoryError> {
        let (grant, label) = match paths::parse(client, path)? {
            Target::File { grant, label, .. } => (grant, label),
            _ => {
                return Err(MemoryError::BadPath {
                    path: path.to_owned(),
                    reason: "name a file, e.g. /memories/notes.md".into(),
                });
            }
        };
        if !grant.write {
            return Err(MemoryError::ReadOnly {
                client: client.name.clone(),
                agent: grant.dir.clone(),
            });
        }
        Ok((grant, label))
    }

    /// A rename the client may make: the block at `old_path`, its agent's grant and the new
    /// label, checked (same agent's directory, no file there yet) before anything changes.
    pub(super) fn rename_target<'c>(
        &self,
        client: &'c MemoryClient,
        old_path: &str,
        new_path: &str,
    ) -> Result<(&'c MemoryGrant, Block, String), MemoryError> {
        let (grant, block) = self.writable_block(client, old_path)?;
        let (to_grant, label) = self.writable_file(client, new_path)?;
        if to_grant.agent_id != grant.agent_id {
            return Err(MemoryError::BadPath {
                path: new_path.to_owned(),
                reason: "a file can only be renamed within its agent's directory".into(),
            });
        }
        if self
            .store
            .blocks()
            .by_label(&grant.agent_id, &label)
            .is_ok()
        {
            return Err(MemoryError::Exists(new_path.trim().to_owned()));
        }
        Ok((grant, block, label))
    }

    /// An existing block the client may write.
    pub(super) fn writable_block<'c>(
        &self,
        client: &'c MemoryClient,
        path: &str,
    ) -> Result<(&'c MemoryGrant, Block), MemoryError> {
        let (grant, label) = self.writable_file(client, path)?;
        match self.store.blocks().by_label(&grant.agent_id, &label) {
            Ok(block) => Ok((grant, block)),
            Err(engram_core::Error::NotFound { .. }) => {
                Err(MemoryError::NoSuchFile(path.trim().to_owned()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `str_replace` and `insert`: the block operation an agent's tool would queue, applied to
    /// the value as stored now.
    async fn memory_op(
        &self,
        client: &MemoryClient,
        path: &str,
        op: BlockOp,
    ) -> Result<String, MemoryError> {
        let (grant, block) = self.writable_block(client, path)?;
        let file = paths::file_path(client, grant, &block.label);
        match self
            .store
            .blocks()
            .apply_op(&block.id, &op, &editor(client))?
        {
            OpOutcome::Changed(block) => {
                self.notify_block(&block.id).await;
                Ok(format!(
                    "Edited {file}; it is now version {} ({} of {} characters).",
                    block.version,
                    block.chars(),
                    block.limit
                ))
            }
            OpOutcome::Unchanged(_) => Ok(format!("{file} already holds that; nothing changed.")),
            OpOutcome::Refused { error, .. } => Err(MemoryError::Refused { path: file, error }),
        }
    }
}

impl MemoryServer<'_> {
    /// Runs one `memory` command for `client` and returns the text for the tool result.
    /// Writes are recorded in the block's history with the client's name as author.
    ///
    /// Errors: a [`MemoryError`] saying what to change (bad path, no such file, read-only
    /// client, text not found or found N times, over the limit by how much, line out of
    /// range); [`MemoryError::Engine`] when Engram itself fails.
    pub async fn command(
        self,
        client: &MemoryClient,
        command: &MemoryCommand,
    ) -> Result<String, MemoryError> {
        match command {
            MemoryCommand::View { path, view_range } => {
                self.engram.memory_view(client, path, *view_range)
            }
            MemoryCommand::Create { path, file_text } => {
                let (grant, label) = self.engram.writable_file(client, path)?;
                let new = NewBlock::new(label.clone(), block_text(file_text));
                if self
                    .engram
                    .store
                    .blocks()
                    .by_label(&grant.agent_id, &label)
                    .is_ok()
                {
                    return Err(MemoryError::Exists(path.trim().to_owned()));
                }
                let block = self.engram.store.blocks().create_for_agent_as(
                    &grant.agent_id,
                    &new,
                    &editor(client),
                )?;
                self.engram.notify_block(&block.id).await;
                Ok(format!(
                    "Created {} ({} of {} characters).",
                    paths::file_path(client, grant, &label),
                    block.chars(),
                    block.limit
                ))
            }
            MemoryCommand::StrReplace {
                path,
                old_str,
                new_str,
            } => {
                self.engram
                    .memory_op(
                        client,
                        path,
                        BlockOp::Replace {
                            old: old_str.clone(),
                            new: new_str.clone(),
                            count: ReplaceCount::Once,
                        },
                    )
                    .await
            }
            MemoryCommand::Insert {
                path,
                insert_line,
                insert_text,
            } => {
                self.engram
                    .memory_op(
                        client,
                        path,
                        BlockOp::Insert {
                            line: *insert_line,
                            text: block_text(insert_text).to_owned(),
                        },
                    )
                    .await
            }
            MemoryCommand::Delete { path } => {
                let (grant, block) = self.engram.writable_block(client, path)?;
                self.engram
                    .store
                    .blocks()
                    .detach(&grant.agent_id, &block.id)?;
                self.engram.notify(crate::Notice::MemoryChanged {
                    agent_id: grant.agent_id.clone(),
                });
                Ok(format!(
                    "Deleted {} from the agent's memory (the block is kept, detached, with its history).",
                    paths::file_path(client, grant, &block.label)
                ))
            }
            MemoryCommand::Rename { old_path, new_path } => {
                let (grant, block, label) =
                    self.engram.rename_target(client, old_path, new_path)?;
                let patch = BlockPatch {
                    label: Some(label.clone()),
                    ..BlockPatch::default()
                };
                let renamed =
                    self.engram
                        .store
                        .blocks()
                        .update(&block.id, &patch, &editor(client))?;
                self.engram.notify_block(&renamed.id).await;
                Ok(format!(
                    "Renamed {} to {}.",
                    paths::file_path(client, grant, &block.label),
                    paths::file_path(client, grant, &renamed.label)
                ))
            }
        }
    }
}

/// The history author of `client`'s writes.
pub(crate) fn editor(client: &MemoryClient) -> Editor {
    Editor::Client {
        name: client.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_read_as_anthropic_s_memory_tool_sends_them() {
        let c: MemoryCommand = serde_json::from_value(
            json!({"command": "view", "path": "/memories", "view_range": [1, -1]}),
        )
        .unwrap();
        assert_eq!(
            c,
            MemoryCommand::View {
                path: "/memories".into(),
                view_range: Some((1, -1))
            }
        );
        let c: MemoryCommand = serde_json::from_value(
            json!({"command": "insert", "path": "/memories/a.md", "insert_line": 2, "insert_text": "x\n"}),
        )
        .unwrap();
        assert!(c.writes());
        assert!(
            serde_json::from_value::<MemoryCommand>(json!({"command": "format", "path": "/"}))
                .is_err()
        );
    }
}
