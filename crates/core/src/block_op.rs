//! Block edits as *operations* on the current value, not as whole new values.
//!
//! A memory tool yields a [`BlockOp`]; the store re-applies it to the block's value as stored
//! at commit time (inside the step's transaction), so whatever was written meanwhile — a hand
//! edit, another agent on a shared block, a second process on the same file — is kept. An
//! operation that no longer applies is refused with an [`OpError`] the model can read, never a
//! silent overwrite (DESIGN.md §8b; Letta loses such edits because its tools write whole values
//! computed from the step's snapshot).
//!
//! Whole-value writes ([`BlockOp::Rewrite`]) name the version they were based on and are
//! refused when the block has moved on. Lengths and limits are in **characters**.

use crate::Block;
use crate::memory::{LimitExceeded, check_limit};
use serde::{Deserialize, Serialize};

/// How many occurrences a [`BlockOp::Replace`] changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplaceCount {
    /// Every occurrence (`core_memory_replace`).
    All,
    /// The text must occur exactly once (`memory_replace`).
    Once,
}

/// One edit of a block's value, applied to whatever the value is when it commits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum BlockOp {
    /// `value + "\n" + text` (just `text` when empty). A line already present is not added
    /// again, so a model repeating itself does not bloat memory (`core_memory_append`).
    Append {
        /// The line(s) to add.
        text: String,
    },
    /// Replaces `old` by `new` (`new` empty deletes). Fails when `old` is absent, and for
    /// [`ReplaceCount::Once`] when it occurs more than once (`core_memory_replace`,
    /// `memory_replace`).
    Replace {
        /// Text to find, exactly.
        old: String,
        /// Its replacement.
        new: String,
        /// All occurrences or exactly one.
        count: ReplaceCount,
    },
    /// Inserts `text` after line `line` (0 = at the top, -1 = at the end; `memory_insert`).
    Insert {
        /// Line number after which to insert.
        line: i64,
        /// The text (may span lines).
        text: String,
    },
    /// Sets the whole value, refused unless the block is still at `based_on_version`
    /// (`memory_rethink`, user tools, hand edits).
    Rewrite {
        /// The new value.
        value: String,
        /// The block's version the writer read.
        based_on_version: u64,
    },
}

/// Why an operation does not apply to a block's current value. The text is written for the
/// model (it comes back as a `Failed` tool result) and for people.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    /// Agents may not edit read-only blocks.
    #[error("The '{label}' block is read-only; it cannot be edited.")]
    ReadOnly {
        /// The block's label.
        label: String,
    },
    /// Nothing to append or insert.
    #[error("The text to add is empty; nothing to change.")]
    Empty,
    /// `Replace` with an empty `old`.
    #[error("The text to replace is empty; say which text to replace.")]
    EmptyOld,
    /// `Replace`: `old` is not in the value (any more).
    #[error(
        "The text '{old}' was not found in the '{label}' block; copy it exactly as it appears."
    )]
    NotFound {
        /// The block's label.
        label: String,
        /// The text looked for.
        old: String,
    },
    /// `Replace` once: `old` occurs `count` times.
    #[error(
        "The text '{old}' occurs {count} times in the '{label}' block; include more surrounding text so it matches exactly once."
    )]
    Ambiguous {
        /// The block's label.
        label: String,
        /// The text looked for.
        old: String,
        /// How often it occurs.
        count: usize,
    },
    /// `Insert`: no such line.
    #[error(
        "insert_line {line} is out of range: the '{label}' block has {lines} lines (use 0 for the top, -1 for the end)."
    )]
    LineOutOfRange {
        /// The block's label.
        label: String,
        /// The line asked for.
        line: i64,
        /// How many lines there are.
        lines: usize,
    },
    /// `Rewrite`: the block changed since the version the writer read.
    #[error(
        "The '{label}' block changed since you read it (you read version {based_on}, it is now version {current}); nothing was written. Base your rewrite on its current value."
    )]
    Stale {
        /// The block's label.
        label: String,
        /// The version the writer read.
        based_on: u64,
        /// The version now stored.
        current: u64,
    },
    /// The result would not fit the block's limit.
    #[error("{0}")]
    Limit(LimitExceeded),
}

/// What an operation did to a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The value becomes this.
    Changed(String),
    /// Nothing to do (an appended line that is already there, a rewrite to the same value).
    Unchanged,
}

/// What applying one operation to a stored block did (outside a step: a hand edit, an MCP
/// client, a replica's write).
#[derive(Clone, Debug, PartialEq)]
pub enum OpOutcome {
    /// The value changed; the block as stored now (new version).
    Changed(Block),
    /// Nothing to do (the block already holds that); the block as stored.
    Unchanged(Block),
    /// The operation does not apply to the stored value; nothing was written.
    Refused {
        /// Why, with counts (occurrences, characters over the limit, lines).
        error: OpError,
        /// The block as stored.
        current: Block,
    },
}

impl BlockOp {
    /// Applies the operation to `block`'s current value and checks the result against its
    /// limit (characters). `agent` is true for edits by an agent, which read-only blocks refuse.
    ///
    /// Errors: an [`OpError`] saying why it no longer applies; `block` is not changed.
    pub fn apply(&self, block: &Block, agent: bool) -> Result<Applied, OpError> {
        let label = || block.label.clone();
        if agent && block.read_only {
            return Err(OpError::ReadOnly { label: label() });
        }
        let value = &block.value;
        let new_value = match self {
            Self::Append { text } => {
                if text.trim().is_empty() {
                    return Err(OpError::Empty);
                }
                if value.lines().any(|line| line.trim() == text.trim()) {
                    return Ok(Applied::Unchanged);
                }
                if value.is_empty() {
                    text.clone()
                } else {
                    format!("{value}\n{text}")
                }
            }
            Self::Replace { old, new, count } => {
                if old.is_empty() {
                    return Err(OpError::EmptyOld);
                }
                match (value.matches(old.as_str()).count(), count) {
                    (0, _) => {
                        return Err(OpError::NotFound {
                            label: label(),
                            old: old.clone(),
                        });
                    }
                    (_, ReplaceCount::All) => value.replace(old.as_str(), new),
                    (1, ReplaceCount::Once) => value.replacen(old.as_str(), new, 1),
                    (n, ReplaceCount::Once) => {
                        return Err(OpError::Ambiguous {
                            label: label(),
                            old: old.clone(),
                            count: n,
                        });
                    }
                }
            }
            Self::Insert { line, text } => {
                if text.is_empty() {
                    return Err(OpError::Empty);
                }
                let mut lines: Vec<&str> = if value.is_empty() {
                    Vec::new()
                } else {
                    value.split('\n').collect()
                };
                let at = match *line {
                    -1 => lines.len(),
                    n if n >= 0 && (n as usize) <= lines.len() => n as usize,
                    n => {
                        return Err(OpError::LineOutOfRange {
                            label: label(),
                            line: n,
                            lines: lines.len(),
                        });
                    }
                };
                lines.splice(at..at, text.split('\n'));
                lines.join("\n")
            }
            Self::Rewrite {
                value: new_value,
                based_on_version,
            } => {
                if *based_on_version != block.version {
                    return Err(OpError::Stale {
                        label: label(),
                        based_on: *based_on_version,
                        current: block.version,
                    });
                }
                new_value.clone()
            }
        };
        if new_value == *value {
            return Ok(Applied::Unchanged);
        }
        check_limit(value, &new_value, block.limit).map_err(OpError::Limit)?;
        Ok(Applied::Changed(new_value))
    }
}

/// What a memory tool tells the model after its edit: the block's value as it is now (which
/// may include edits others made meanwhile).
pub fn applied_message(block: &Block) -> String {
    format!(
        "The '{}' block now holds {}/{} characters:\n{}",
        block.label,
        block.chars(),
        block.limit,
        block.value
    )
}

/// What the model reads when its edit of `block` was refused: why, then the block's current
/// value and version, so it can retry against what is really there.
pub fn refused_message(why: &str, block: &Block) -> String {
    format!(
        "{why}\nThe '{}' block is at version {} and holds {}/{} characters:\n{}",
        block.label,
        block.version,
        block.chars(),
        block.limit,
        block.value
    )
}

/// How many characters of surrounding text the reverse operation tries, in turn, to find the
/// changed text exactly once.
const CONTEXT_STEPS: [usize; 6] = [0, 8, 24, 64, 160, 400];

/// The value `current` becomes when the change `old` → `new` (one recorded edit) is reversed
/// and everything else in `current` is kept; `None` when that change cannot be found in
/// `current` exactly once. Pure; lengths are in characters.
pub fn revert_value(old: &str, new: &str, current: &str) -> Option<String> {
    if current == new {
        return Some(old.to_owned());
    }
    if old == new {
        return Some(current.to_owned());
    }
    let old_chars: Vec<char> = old.chars().collect();
    let new_chars: Vec<char> = new.chars().collect();
    let prefix = old_chars
        .iter()
        .zip(&new_chars)
        .take_while(|(a, b)| a == b)
        .count();
    let max_suffix = old_chars.len().min(new_chars.len()) - prefix;
    let suffix = old_chars
        .iter()
        .rev()
        .zip(new_chars.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let removed: String = old_chars[prefix..old_chars.len() - suffix].iter().collect();
    let added: String = new_chars[prefix..new_chars.len() - suffix].iter().collect();
    for k in CONTEXT_STEPS {
        let before: String = new_chars[prefix.saturating_sub(k)..prefix].iter().collect();
        let after_end = (new_chars.len() - suffix + k).min(new_chars.len());
        let after: String = new_chars[new_chars.len() - suffix..after_end]
            .iter()
            .collect();
        let needle = format!("{before}{added}{after}");
        let exhausted = k >= prefix && k >= suffix;
        if !needle.is_empty() {
            match current.matches(needle.as_str()).count() {
                0 => return None,
                1 => {
                    let reversed = format!("{before}{removed}{after}");
                    return Some(current.replacen(needle.as_str(), &reversed, 1));
                }
                _ => {}
            }
        }
        if exhausted {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(value: &str, limit: usize) -> Block {
        let now = chrono::Utc::now();
        Block {
            id: "block-1".into(),
            label: "human".into(),
            value: value.into(),
            limit,
            description: String::new(),
            read_only: false,
            version: 3,
            created_at: now,
            updated_at: now,
        }
    }

    fn changed(op: &BlockOp, b: &Block) -> String {
        match op.apply(b, true).unwrap() {
            Applied::Changed(v) => v,
            Applied::Unchanged => panic!("expected a change"),
        }
    }

    #[test]
    fn appends_apply_to_the_current_value() {
        let op = BlockOp::Append {
            text: "Likes: kiwi".into(),
        };
        assert_eq!(changed(&op, &block("", 100)), "Likes: kiwi");
        assert_eq!(
            changed(&op, &block("Name: Alice\nAllergic to peanuts", 100)),
            "Name: Alice\nAllergic to peanuts\nLikes: kiwi"
        );
        assert_eq!(
            op.apply(&block("Likes: kiwi", 100), true),
            Ok(Applied::Unchanged)
        );
    }

    #[test]
    fn replace_fails_once_its_text_is_gone() {
        let op = BlockOp::Replace {
            old: "kiwi".into(),
            new: "mango".into(),
            count: ReplaceCount::Once,
        };
        assert_eq!(changed(&op, &block("Likes: kiwi", 100)), "Likes: mango");
        let err = op.apply(&block("Likes: figs", 100), true).unwrap_err();
        assert!(matches!(err, OpError::NotFound { .. }), "{err}");
        let err = op.apply(&block("kiwi kiwi", 100), true).unwrap_err();
        assert!(err.to_string().contains("occurs 2 times"), "{err}");
        let all = BlockOp::Replace {
            old: "kiwi".into(),
            new: "fig".into(),
            count: ReplaceCount::All,
        };
        assert_eq!(changed(&all, &block("kiwi kiwi", 100)), "fig fig");
    }

    #[test]
    fn insert_counts_lines_of_the_current_value() {
        let op = BlockOp::Insert {
            line: 1,
            text: "b".into(),
        };
        assert_eq!(changed(&op, &block("a\nc", 100)), "a\nb\nc");
        let err = BlockOp::Insert {
            line: 5,
            text: "x".into(),
        }
        .apply(&block("a", 100), true)
        .unwrap_err();
        assert!(matches!(err, OpError::LineOutOfRange { lines: 1, .. }));
    }

    #[test]
    fn rewrites_are_refused_when_stale() {
        let fresh = BlockOp::Rewrite {
            value: "new".into(),
            based_on_version: 3,
        };
        assert_eq!(changed(&fresh, &block("old", 100)), "new");
        let stale = BlockOp::Rewrite {
            value: "new".into(),
            based_on_version: 2,
        };
        let err = stale.apply(&block("old", 100), true).unwrap_err();
        assert_eq!(
            err,
            OpError::Stale {
                label: "human".into(),
                based_on: 2,
                current: 3
            }
        );
    }

    #[test]
    fn the_limit_is_checked_on_the_result_and_read_only_binds_agents() {
        let op = BlockOp::Append {
            text: "12345".into(),
        };
        let err = op.apply(&block("abcd", 8), true).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Edit failed: Exceeds 8 character limit (requested 10)")
        );
        let mut ro = block("x", 100);
        ro.read_only = true;
        assert!(matches!(op.apply(&ro, true), Err(OpError::ReadOnly { .. })));
        assert!(op.apply(&ro, false).is_ok());
    }

    #[test]
    fn refusals_show_the_current_value() {
        let b = block("Name: Alice", 100);
        let text = refused_message("gone", &b);
        assert!(
            text.contains("version 3") && text.ends_with("Name: Alice"),
            "{text}"
        );
    }

    #[test]
    fn the_latest_edit_reverts_to_its_old_value() {
        assert_eq!(revert_value("a", "a\nb", "a\nb").as_deref(), Some("a"));
    }

    #[test]
    fn an_older_edit_reverts_and_later_edits_stay() {
        // Edit 1 appended "likes tea"; edit 2 then appended "lives in Oslo".
        let got = revert_value(
            "Name: Bob",
            "Name: Bob\nlikes tea",
            "Name: Bob\nlikes tea\nlives in Oslo",
        );
        assert_eq!(got.as_deref(), Some("Name: Bob\nlives in Oslo"));
        // Edit 1 replaced a word; edit 2 appended on the same line.
        let got = revert_value("Name: Bob", "Name: Robert", "Name: Robert, 42");
        assert_eq!(got.as_deref(), Some("Name: Bob, 42"));
        // Edit 1 deleted a line: putting it back needs the text around it.
        let got = revert_value("a\nb\nc", "a\nc", "x\na\nc\nd");
        assert_eq!(got.as_deref(), Some("x\na\nb\nc\nd"));
    }

    #[test]
    fn a_change_rewritten_since_does_not_revert() {
        assert_eq!(revert_value("Name: Bob", "Name: Robert", "Name: Rob"), None);
        // The changed text now occurs twice, with the same context: ambiguous.
        assert_eq!(revert_value("", "tea", "tea tea"), None);
    }

    #[test]
    fn characters_not_bytes() {
        let got = revert_value("café", "cafés", "cafés et thé");
        assert_eq!(got.as_deref(), Some("café et thé"));
    }
}
