//! Agent Files (`.af`): Letta's portable format for agents, read and written by Engram.
//!
//! - [`parse`] reads v1 (Letta 0.6–0.10: one flat agent) and v2 (agents, blocks, tools with
//!   file-local ids), including files double-encoded as a JSON string, refusing files over
//!   [`MAX_FILE_BYTES`]; every error names the JSON path where the problem is.
//! - [`to_bundle`] maps a parsed file onto Engram's model with fresh ids, ready for
//!   `Store::import_bundle` (one transaction).
//! - [`export_v2`] writes agents as a v2 file Letta can read, plus an `engram` extension
//!   ([`extension`]) with what Letta's format leaves out (full history, passages, block
//!   history, loop style), so Engram → .af → Engram is lossless. Secrets are never written.
//! - [`markdown`] and [`people`] export agents for people to read.

pub mod errors;
mod export;
mod export_sections;
pub mod extension;
mod import;
pub mod markdown;
pub mod model;
mod parse;
pub mod people;
mod sleeptime;
mod snapshot;
mod time;
pub mod v1;
pub mod v2;

pub use errors::AgentFileError;
pub use export::{ExportOptions, export_v2};
pub use import::{Conversion, FileMcpTool, ImportOptions, Inactive, InactiveKind, to_bundle};
pub use parse::{AgentFile, MAX_FILE_BYTES, parse};
pub use snapshot::{AgentSnapshot, snapshot};
