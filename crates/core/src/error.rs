//! The engine's error type and its wire shape `{code, message, details?}`.
//!
//! Every transport (Tauri IPC, REST, CLI) reports errors through [`ErrorBody`], so a UI can act on
//! `code` and show `message`. Errors a *model* caused (bad tool arguments, text not found) are not
//! errors here: they go back to the model as `Failed` tool results.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Shorthand for results carrying [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong talking to a model provider; decides retries and the advice shown to users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum ProviderFault {
    /// The key is missing, wrong or revoked (HTTP 401/403).
    Auth,
    /// HTTP 429 after all retries.
    RateLimited,
    /// Connection refused, DNS failure, TLS failure.
    Unreachable,
    /// No answer within the configured timeout.
    Timeout,
    /// The prompt does not fit the model's context window.
    ContextLength,
    /// The provider rejected the request (HTTP 400/404/422) for another reason.
    BadRequest,
    /// HTTP 5xx after all retries.
    Server,
    /// The provider answered with something we cannot parse.
    BadResponse,
    /// No provider is configured for the model's `provider/` prefix, or it has no key.
    NotConfigured,
}

/// An engine error. Variants are the cases a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No such agent / block / message / passage / provider.
    #[error("{what} not found: {id}")]
    NotFound {
        /// The kind of thing looked up, e.g. `"agent"`.
        what: &'static str,
        /// The id or label that was not found.
        id: String,
    },
    /// The caller's input is invalid (empty name, over-limit value, unknown option…).
    #[error("{0}")]
    Invalid(String),
    /// The request conflicts with what exists (duplicate label, agent busy…).
    #[error("{0}")]
    Conflict(String),
    /// A whole-value write named a block version that is no longer current (someone else —
    /// an agent, another window, another process — changed the block since it was read).
    /// Nothing was written; `current` is the block as stored now, for a conflict choice.
    #[error(
        "the '{label}' block changed since version {based_on} (it is now version {version}); \
         nothing was written. Its current value is:\n{value}",
        label = current.label, version = current.version, value = current.value
    )]
    StaleVersion {
        /// The version the writer read.
        based_on: u64,
        /// The block as stored now.
        current: Box<crate::Block>,
    },
    /// A write under an agent's lease (a step's commit, a renewal) came from a holder whose
    /// lease is no longer current: it expired, or another holder has taken it since (a newer
    /// fencing token). Nothing was written; the holder must stop working on the agent.
    #[error("the lease on agent {agent} (token {token}) is no longer held; nothing was written")]
    LeaseLost {
        /// The agent.
        agent: String,
        /// The fencing token of the lease the holder had.
        token: u64,
    },
    /// Another holder (a run on another replica) has held the agent's lease for as long as a
    /// new run was willing to wait; nothing was written. Try again when that run has ended.
    #[error(
        "agent {agent} is busy: {holder} is running it (waited {waited_ms} ms); nothing was written"
    )]
    AgentBusy {
        /// The agent.
        agent: String,
        /// Who holds its lease.
        holder: String,
        /// How long the new run waited for it, in milliseconds.
        waited_ms: u64,
    },
    /// A model provider failed; `message` says what to do about it.
    #[error("{message}")]
    Provider {
        /// The kind of failure.
        fault: ProviderFault,
        /// A one-line explanation for the user.
        message: String,
    },
    /// The model's context window cannot hold what this agent sends on every call (its
    /// instructions, core memory, tool schemas and a bounded summary) with room to talk. Raised
    /// at agent creation, on a model change and when a message is sent, before anything is
    /// written, instead of a run that compacts without end. All figures are **tokens**.
    #[error(
        "this agent needs at least {needed} tokens of context; {model} offers {offered} — raise the \
         server's context length (e.g. Ollama `num_ctx`) or choose another model"
    )]
    ContextWindowTooSmall {
        /// The model handle, e.g. `ollama/llama3.2`.
        model: String,
        /// The smallest context window this agent works in.
        needed: u32,
        /// The context window configured for the model.
        offered: u32,
    },
    /// The OS keychain failed.
    #[error("keychain: {0}")]
    Secrets(String),
    /// SQLite failed (disk full, corrupt file, locked…).
    #[error("database: {0}")]
    Storage(String),
    /// The run was cancelled by the user.
    #[error("run cancelled")]
    Cancelled,
    /// The call exists but not on this kind of deployment yet (a shared server on
    /// PostgreSQL serves part of the API); the message names what is missing.
    #[error("{0}")]
    NotAvailable(String),
    /// A bug: something that should not happen.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Shorthand for [`Error::NotFound`].
    pub fn not_found(what: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound {
            what,
            id: id.into(),
        }
    }

    /// Shorthand for [`Error::Invalid`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    /// Shorthand for [`Error::Provider`].
    pub fn provider(fault: ProviderFault, message: impl Into<String>) -> Self {
        Self::Provider {
            fault,
            message: message.into(),
        }
    }

    /// The stable machine-readable code of this error, e.g. `"not_found"`, `"rate_limited"`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::Invalid(_) => "invalid_input",
            Self::Conflict(_) => "conflict",
            Self::StaleVersion { .. } => "stale_version",
            Self::LeaseLost { .. } => "lease_lost",
            Self::AgentBusy { .. } => "agent_busy",
            Self::Provider { fault, .. } => match fault {
                ProviderFault::Auth => "provider_auth",
                ProviderFault::RateLimited => "rate_limited",
                ProviderFault::Unreachable => "provider_unreachable",
                ProviderFault::Timeout => "provider_timeout",
                ProviderFault::ContextLength => "context_length_exceeded",
                ProviderFault::BadRequest => "provider_bad_request",
                ProviderFault::Server => "provider_error",
                ProviderFault::BadResponse => "provider_bad_response",
                ProviderFault::NotConfigured => "provider_not_configured",
            },
            Self::ContextWindowTooSmall { .. } => "context_window_too_small",
            Self::Secrets(_) => "secrets",
            Self::Storage(_) => "storage",
            Self::Cancelled => "cancelled",
            Self::NotAvailable(_) => "not_available",
            Self::Internal(_) => "internal",
        }
    }
}

/// The serializable shape of an error on every transport: `{"code", "message", "details"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ErrorBody {
    /// Stable machine-readable code (see [`Error::code`]).
    pub code: String,
    /// One line for people.
    pub message: String,
    /// Optional structured context (e.g. the JSON path of a bad import field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl From<&Error> for ErrorBody {
    /// `details` is `{"based_on": n, "current": Block}` for [`Error::StaleVersion`], else absent.
    fn from(e: &Error) -> Self {
        let details = match e {
            Error::StaleVersion { based_on, current } => {
                Some(serde_json::json!({"based_on": based_on, "current": current}))
            }
            Error::ContextWindowTooSmall {
                model,
                needed,
                offered,
            } => Some(serde_json::json!({"model": model, "needed": needed, "offered": offered})),
            _ => None,
        };
        Self {
            code: e.code().to_owned(),
            message: e.to_string(),
            details,
        }
    }
}

impl From<Error> for ErrorBody {
    fn from(e: Error) -> Self {
        Self::from(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_too_small_says_what_to_do() {
        let e = Error::ContextWindowTooSmall {
            model: "ollama/llama3.2".into(),
            needed: 2_300,
            offered: 2_048,
        };
        let body = ErrorBody::from(&e);
        assert_eq!(body.code, "context_window_too_small");
        assert_eq!(
            body.message,
            "this agent needs at least 2300 tokens of context; ollama/llama3.2 offers 2048 — raise \
             the server's context length (e.g. Ollama `num_ctx`) or choose another model"
        );
        assert_eq!(body.details.unwrap()["needed"], 2_300);
    }
}
