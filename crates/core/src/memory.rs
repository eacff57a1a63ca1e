//! Core memory: labelled blocks with character limits, and the history of their edits.

use crate::{AgentId, BlockId, EditId, PassId, StepId, Timestamp};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Default block limit, in **characters** (Unicode scalar values, not bytes or tokens).
pub const DEFAULT_BLOCK_LIMIT: usize = 5_000;

/// A labelled section of core memory, compiled into every context window of every agent it is
/// attached to. A block may be shared by several agents: an edit by one is seen by all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Block {
    /// `block-<uuid>`.
    pub id: BlockId,
    /// Unique per agent, e.g. `human`, `persona`, `tasks`.
    pub label: String,
    /// The text the model sees.
    pub value: String,
    /// Maximum length of `value`, in characters.
    pub limit: usize,
    /// Tells the model what the block is for.
    pub description: String,
    /// When true, memory tools refuse to edit the block (people still can).
    pub read_only: bool,
    /// Increases by one with every committed change of the block (value or settings); a
    /// whole-value write names the version it read and is refused when it is stale. New
    /// blocks start at 1.
    #[ts(type = "number")]
    pub version: u64,
    /// When the block was created.
    pub created_at: Timestamp,
    /// When the block's value or settings last changed.
    pub updated_at: Timestamp,
}

impl Block {
    /// Length of the value in characters — the unit of `limit`.
    pub fn chars(&self) -> usize {
        self.value.chars().count()
    }
}

/// An edit refused because the value would not fit the block's limit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "Edit failed: Exceeds {limit} character limit (requested {requested}). \
     The block has {available} characters left; shorten the text or condense what is there."
)]
pub struct LimitExceeded {
    /// The block's limit, in characters.
    pub limit: usize,
    /// The length the edit asked for, in characters.
    pub requested: usize,
    /// Characters still free before the edit (never negative).
    pub available: usize,
}

/// Checks that `new_value` fits `limit` characters; `current` is the value before the edit and
/// is used only to say how much room was left.
pub fn check_limit(current: &str, new_value: &str, limit: usize) -> Result<(), LimitExceeded> {
    let requested = new_value.chars().count();
    if requested <= limit {
        return Ok(());
    }
    Err(LimitExceeded {
        limit,
        requested,
        available: limit.saturating_sub(current.chars().count()),
    })
}

/// What it takes to create a block. `None` fields get defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export, optional_fields)]
pub struct NewBlock {
    /// Label, unique per agent: plain (`human`) or path-like (`system/human/family`); see
    /// [`check_label`] for what is refused.
    pub label: String,
    /// Initial value.
    #[serde(default)]
    pub value: String,
    /// Limit in characters (default [`DEFAULT_BLOCK_LIMIT`], raised to fit `value`).
    #[serde(default)]
    pub limit: Option<usize>,
    /// What the block is for; `None` uses a default for `persona` and `human`.
    #[serde(default)]
    pub description: Option<String>,
    /// Refuse edits by the agent.
    #[serde(default)]
    pub read_only: bool,
}

impl NewBlock {
    /// A block with `label` and `value` and default settings.
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            value: value.into(),
            ..Self::default()
        }
    }
}

/// The description given to well-known blocks when none is supplied.
pub fn default_description(label: &str) -> String {
    match label {
        "persona" => "Who you are: your name, personality and how you speak. Keep it true to \
                      yourself and refine it as you grow."
            .into(),
        "human" => "What you know about the person you talk with: name, facts, preferences. \
                    Update it as soon as you learn something worth keeping."
            .into(),
        _ => String::new(),
    }
}

/// Longest block label accepted, in **characters**. Letta sets no bound; path-like labels in
/// published agent files (`system/human/family`, `corrections/ezra-mistakes`) stay far below it.
pub const MAX_LABEL_CHARS: usize = 256;

/// Why a block label cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// Empty, or only whitespace.
    #[error("a block label cannot be empty")]
    Empty,
    /// Longer than [`MAX_LABEL_CHARS`] characters.
    #[error("a block label can be at most {MAX_LABEL_CHARS} characters long (this one has {0})")]
    TooLong(usize),
    /// Starts or ends with whitespace (forms trim it, so the block could not be found again).
    #[error("a block label cannot start or end with whitespace")]
    Padded,
    /// A control character (newline, tab…) at the given character index.
    #[error("a block label cannot contain control characters (character {0})")]
    Control(usize),
    /// `<` or `>`: the label is the tag around the block in the compiled context window.
    #[error(
        "a block label cannot contain '<' or '>': it becomes the block's tag in the context window"
    )]
    AngleBracket,
}

/// Checks a block label. Labels are names, possibly path-like as Letta's memory trees use
/// them (`human`, `system/human/family`, `reference/faq`, `/note_directory`): any text of 1 to
/// [`MAX_LABEL_CHARS`] characters is kept byte for byte, except what cannot work — empty or
/// padded labels, control characters, and `<`/`>` (which would break the block's tag in the
/// compiled context window). A label is unique per agent; the store checks that.
pub fn check_label(label: &str) -> Result<(), LabelError> {
    if label.trim().is_empty() {
        return Err(LabelError::Empty);
    }
    let chars = label.chars().count();
    if chars > MAX_LABEL_CHARS {
        return Err(LabelError::TooLong(chars));
    }
    if label.trim() != label {
        return Err(LabelError::Padded);
    }
    if let Some(i) = label.chars().position(char::is_control) {
        return Err(LabelError::Control(i));
    }
    if label.contains(['<', '>']) {
        return Err(LabelError::AngleBracket);
    }
    Ok(())
}

/// Whether `label` is a usable block label (see [`check_label`]).
pub fn valid_label(label: &str) -> bool {
    check_label(label).is_ok()
}

/// The path segments of a label (`system/human/family` → `system`, `human`, `family`); empty
/// segments (a leading `/`, a doubled `//`) are skipped, as Letta's memory tree does. Used to
/// show labels as a tree; the label itself is never rewritten.
pub fn label_segments(label: &str) -> impl Iterator<Item = &str> {
    label.split('/').filter(|s| !s.is_empty())
}

/// A partial update of a block; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export, optional_fields)]
pub struct BlockPatch {
    /// New value (checked against the limit).
    pub value: Option<String>,
    /// New limit in characters (must fit the value).
    pub limit: Option<usize>,
    /// New label.
    pub label: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// New read-only flag.
    pub read_only: Option<bool>,
    /// The block's version this patch was based on: when given and the block has changed
    /// since, nothing is written and the caller gets [`Error::StaleVersion`](crate::Error)
    /// with the current block. `None` writes over whatever is there (last writer wins, as
    /// Letta's SDK expects).
    #[ts(optional, as = "Option<u32>")]
    pub version: Option<u64>,
}

/// Who changed a block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Editor {
    /// An agent, through a memory tool.
    Agent {
        /// The agent that ran the tool.
        agent_id: AgentId,
        /// The tool call that made the edit.
        tool_call_id: Option<String>,
    },
    /// A person, by hand (UI, CLI, REST).
    User,
    /// An import of an agent file.
    Import,
    /// An undo of an earlier edit.
    Undo {
        /// The edit that was undone.
        edit_id: EditId,
    },
    /// A rolled-back turn (regenerate, edit & resend): the block went back to its value
    /// before the turn's edits.
    Rollback,
    /// Another AI tool, through Engram's MCP memory server (`engram mcp serve`).
    Client {
        /// The client's name as configured (or as it introduced itself), e.g. `claude-code`.
        name: String,
    },
    /// A sleep-time pass tidying the agent's memory in the background.
    Sleeptime {
        /// The pass.
        pass_id: PassId,
    },
}

/// One recorded change of a block's value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct BlockEdit {
    /// `edit-<uuid>`.
    pub id: EditId,
    /// The block that changed.
    pub block_id: BlockId,
    /// Who changed it.
    pub editor: Editor,
    /// The value before.
    pub old_value: String,
    /// The value after.
    pub new_value: String,
    /// The block's version before the edit (`None` for edits recorded before versions were).
    #[serde(default)]
    #[ts(type = "number | null")]
    pub old_version: Option<u64>,
    /// The block's version after the edit (`None` for edits recorded before versions were).
    #[serde(default)]
    #[ts(type = "number | null")]
    pub new_version: Option<u64>,
    /// The step whose tool call made the edit, for edits by an agent.
    #[serde(default)]
    pub step_id: Option<StepId>,
    /// When.
    pub created_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_count_characters_not_bytes() {
        let five_snowmen = "☃☃☃☃☃";
        assert!(check_limit("", five_snowmen, 5).is_ok());
        let err = check_limit("☃☃", "☃☃☃☃☃☃", 5).unwrap_err();
        assert_eq!((err.limit, err.requested, err.available), (5, 6, 3));
        assert!(
            err.to_string()
                .starts_with("Edit failed: Exceeds 5 character limit (requested 6)")
        );
    }

    #[test]
    fn labels_are_checked() {
        assert!(valid_label("human"));
        assert!(valid_label("project.notes-2"));
        assert!(!valid_label(""));
        assert!(valid_label("two words"));
        for ok in [
            "system/human/family",
            "reference/faq",
            "/note_directory",
            "corrections/ezra-mistakes",
            "notes//draft",
            "Überblick/日記",
        ] {
            assert_eq!(check_label(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_label(""), Err(LabelError::Empty));
        assert_eq!(check_label("  "), Err(LabelError::Empty));
        assert_eq!(check_label(" human"), Err(LabelError::Padded));
        assert_eq!(check_label("a\nb"), Err(LabelError::Control(1)));
        assert_eq!(check_label("<human>"), Err(LabelError::AngleBracket));
        let long = "é".repeat(MAX_LABEL_CHARS);
        assert_eq!(check_label(&long), Ok(()), "the bound counts characters");
        assert_eq!(
            check_label(&format!("{long}x")),
            Err(LabelError::TooLong(MAX_LABEL_CHARS + 1))
        );
    }

    #[test]
    fn labels_split_into_path_segments() {
        let parts: Vec<_> = label_segments("/system//human/family").collect();
        assert_eq!(parts, ["system", "human", "family"]);
        assert_eq!(label_segments("human").collect::<Vec<_>>(), ["human"]);
    }
}
