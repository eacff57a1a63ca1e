//! Why a memory command or search was refused. The text is written for a model reading a tool
//! result, with the figures it needs to retry (occurrences, characters, lines).

use engram_core::{Error, OpError};

/// A refused memory command. Transports return its text as a tool error (`isError: true`);
/// only [`MemoryError::Engine`] is a failure of Engram itself.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The arguments do not make a command (unknown command, missing argument).
    #[error("Invalid arguments: {0}")]
    Arguments(String),
    /// The path is not under `/memories` or does not name a file.
    #[error("The path '{path}' cannot be used: {reason}")]
    BadPath {
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No block (or directory) at that path.
    #[error("The path {0} does not exist. View /memories to see the files.")]
    NoSuchFile(String),
    /// `create` on a file that exists.
    #[error("The file {0} already exists; change it with str_replace or insert.")]
    Exists(String),
    /// The client may only read this agent's memory.
    #[error("'{client}' may only read the memory of agent '{agent}'; nothing was written.")]
    ReadOnly {
        /// The client's name.
        client: String,
        /// The agent's directory or name.
        agent: String,
    },
    /// The edit does not apply to the block as stored (text not found or ambiguous, over the
    /// limit, line out of range, read-only block); nothing was written.
    #[error("{error} ({path}; nothing was written)")]
    Refused {
        /// The file.
        path: String,
        /// Why, with counts.
        error: OpError,
    },
    /// `view_range` outside the file.
    #[error(
        "Invalid view_range {start}..{end}: {path} has {lines} lines (lines count from 1; -1 ends at the last line)."
    )]
    ViewRange {
        /// The file.
        path: String,
        /// First line asked for.
        start: i64,
        /// Last line asked for.
        end: i64,
        /// Lines in the file.
        lines: usize,
    },
    /// The user declined the write in the window (the text says so, with their reason).
    #[error("{0}")]
    Declined(String),
    /// Nobody answered the approval in time; the write was withdrawn.
    #[error(
        "The user did not answer within {secs} seconds, so the write was withdrawn and nothing was written."
    )]
    TimedOut {
        /// How long it waited.
        secs: u64,
    },
    /// The write waiting for approval was withdrawn (its row is gone).
    #[error("The write waiting for the user's approval was withdrawn; nothing was written.")]
    Withdrawn,
    /// The user approved, but the write no longer applied to memory as it was then (another
    /// edit came first); the text says why, as the write itself would have.
    #[error("The user approved, but {0}")]
    RefusedAfterApproval(String),
    /// Engram failed (storage, embedding set-up), or refused the request (label taken, bad
    /// label).
    #[error("{0}")]
    Engine(#[from] Error),
}
