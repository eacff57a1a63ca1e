//! Engram's Model Context Protocol client, on the official Rust SDK (`rmcp`).
//!
//! A [`Hub`] keeps one connection per configured server, shared by every agent: stdio servers
//! (a command with arguments and environment) start on first use and stop after an idle
//! period; streamable-HTTP servers are reached at their URL, with an optional bearer token
//! sent to that server only. A call that fails because the server is down, crashed or took too
//! long drops the connection, so the next use starts it again.
//!
//! The test server in [`mock`] (also the `mock-mcp` binary) is written with rmcp's server side.

pub mod hub;
pub mod mock;
pub mod names;
pub mod url_secrets;

pub use hub::{CallOutcome, Hub, Launch, McpError, RemoteTool};
