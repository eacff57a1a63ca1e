//! What can be wrong with an agent file, and where.

/// Why an agent file cannot be read or imported. Every variant but [`TooLarge`] and `Report` names where the
/// problem is as a JSON path (`agents[0].messages[3].role`; `$` is the whole file).
///
/// [`TooLarge`]: AgentFileError::TooLarge
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentFileError {
    /// The file is over [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES); refused before parsing.
    #[error("the file is {size} bytes; agent files larger than {limit} bytes (64 MiB) are refused")]
    TooLarge {
        /// Size of the file, in bytes.
        size: u64,
        /// The limit, in bytes.
        limit: u64,
    },
    /// Not JSON: truncated, malformed, or nested deeper than the parser allows.
    #[error("not valid JSON at {path}: {message}")]
    Syntax {
        /// How far parsing got.
        path: String,
        /// The parser's explanation, with line and column.
        message: String,
    },
    /// JSON, but a value has the wrong type or a required field is missing.
    #[error("unexpected value at {path}: {message}")]
    Shape {
        /// Where.
        path: String,
        /// What was expected.
        message: String,
    },
    /// Not an agent file, or a version this reader does not know.
    #[error("unsupported agent file at {path}: {message}")]
    UnknownVersion {
        /// Where the version is (or should be).
        path: String,
        /// What was found.
        message: String,
    },
    /// Two entries share a file-local id.
    #[error("duplicate id {id:?} at {path}")]
    Duplicate {
        /// The second occurrence.
        path: String,
        /// The id.
        id: String,
    },
    /// A reference to a block, tool or message the file does not contain.
    #[error("{path} refers to {kind} {id:?}, which is not in the file")]
    MissingRef {
        /// The reference.
        path: String,
        /// `block`, `tool`, `message` or `agent`.
        kind: &'static str,
        /// The id (or index) referred to.
        id: String,
    },
    /// Engram's JSON export (`"format": "engram-export"`): a read-only report, not an agent
    /// file. The message says to import the `.af` export instead.
    #[error("{}", crate::people::REPORT_NOT_IMPORTABLE)]
    Report,
    /// A value of the right type that Engram cannot accept (bad label, unreadable date…).
    #[error("invalid value at {path}: {message}")]
    Invalid {
        /// Where.
        path: String,
        /// Why.
        message: String,
    },
}

impl AgentFileError {
    /// The JSON path of the problem, if it has one.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::TooLarge { .. } | Self::Report => None,
            Self::Syntax { path, .. }
            | Self::Shape { path, .. }
            | Self::UnknownVersion { path, .. }
            | Self::Duplicate { path, .. }
            | Self::MissingRef { path, .. }
            | Self::Invalid { path, .. } => Some(path),
        }
    }

    pub(crate) fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl From<AgentFileError> for engram_core::Error {
    /// Every agent-file problem is the caller's input: `invalid_input` with the path in the text.
    fn from(e: AgentFileError) -> Self {
        engram_core::Error::Invalid(format!("agent file: {e}"))
    }
}
