//! The built-in tools: their schemas for the model and their execution.
//!
//! Names and arguments follow Letta's SDK and agent files (DESIGN.md §4), so imported agents and
//! existing prompts keep working; descriptions are Engram's own. Every failure the *model* caused
//! (unknown tool, malformed JSON, missing block, read-only block, over-limit edit, text not found)
//! comes back as a `Failed` result for the model to read — never as an error of the run.

mod archival;
mod args;
mod context;
mod custom;
mod file_search;
mod files;
mod memory;
mod recall;
pub mod sleeptime;

pub use context::ToolContext;
pub use custom::{Trial, awaits_approval, cut as cut_result, trial};
pub use file_search::{GREP_PAGE, MAX_CONTEXT_LINES, MAX_PATTERN_CHARS};
pub use files::{DEFAULT_WINDOW_LINES, MAX_OPEN_FILES, MAX_WINDOW_LINES};

use args::Args;
use engram_core::{LoopStyle, Tool, ToolCall, ToolId, ToolLanguage, ToolReturn};
use engram_providers::ToolSpec;
use serde_json::{Value, json};

/// Names of every built-in tool.
pub const BUILTIN_TOOLS: &[&str] = &[
    "send_message",
    "core_memory_append",
    "core_memory_replace",
    "memory_insert",
    "memory_replace",
    "memory_rethink",
    "archival_memory_insert",
    "archival_memory_search",
    "conversation_search",
    "open_files",
    "grep_files",
    "semantic_search_files",
];

/// The tools a new agent of `style` gets when none are chosen.
pub fn default_tools(style: LoopStyle) -> Vec<String> {
    let names: &[&str] = match style {
        LoopStyle::Classic => &[
            "send_message",
            "core_memory_append",
            "core_memory_replace",
            "archival_memory_insert",
            "archival_memory_search",
            "conversation_search",
        ],
        LoopStyle::ToolLoop => &[
            "core_memory_append",
            "memory_replace",
            "memory_insert",
            "memory_rethink",
            "archival_memory_insert",
            "archival_memory_search",
            "conversation_search",
        ],
    };
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// The schemas of the named built-in tools, in order; other names are skipped. In the classic
/// loop every tool but `send_message` gains the `request_heartbeat` argument.
pub fn specs(names: &[String], style: LoopStyle) -> Vec<ToolSpec> {
    specs_with(names, &[], style)
}

/// The schemas of the named tools, built-in or among `custom` (user tools), in order; names
/// that are neither are skipped. Classic loop: `request_heartbeat` is added as in [`specs`].
pub fn specs_with(names: &[String], custom: &[Tool], style: LoopStyle) -> Vec<ToolSpec> {
    names
        .iter()
        .filter_map(|name| {
            let (description, mut parameters) = match schema(name) {
                Some((d, p)) => (d.to_owned(), p),
                None => {
                    let tool = custom.iter().find(|t| &t.name == name)?;
                    let mut parameters = tool.json_schema["parameters"].clone();
                    if !parameters.is_object() {
                        parameters = object(json!({}), &[]);
                    }
                    // Letta stores `request_heartbeat` in some schemas; the loop adds it itself.
                    strip_heartbeat(&mut parameters);
                    (tool.description.clone(), parameters)
                }
            };
            if style == LoopStyle::Classic && name != "send_message" {
                add_heartbeat(&mut parameters);
            }
            Some(ToolSpec {
                name: name.clone(),
                description,
                parameters,
            })
        })
        .collect()
}

/// The names among `names` that are not built-ins: the user tools a context needs the rows
/// of (a built-in's schema and code are the runtime's own, whatever rows are named alike).
pub fn user_tool_names(names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|n| schema(n).is_none())
        .cloned()
        .collect()
}

/// Every built-in tool as a [`Tool`] (id `tool-builtin-<name>`, tool-loop schema), so built-ins
/// are listed, attached and shown like user tools.
pub fn builtin_tools() -> Vec<Tool> {
    BUILTIN_TOOLS
        .iter()
        .filter_map(|n| builtin_tool(n))
        .collect()
}

/// The built-in tool `name` as a [`Tool`], if there is one.
pub fn builtin_tool(name: &str) -> Option<Tool> {
    let (description, parameters) = schema(name)?;
    let epoch = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    Some(Tool {
        id: ToolId::from(format!("tool-builtin-{name}")),
        name: name.to_owned(),
        description: description.to_owned(),
        json_schema: json!({"name": name, "description": description, "parameters": parameters}),
        source_code: None,
        language: ToolLanguage::Builtin,
        return_char_limit: engram_core::DEFAULT_RETURN_CHAR_LIMIT,
        tags: Vec::new(),
        network: false,
        allow_unsandboxed: false,
        available: true,
        unavailable_reason: None,
        origin: engram_core::ToolOrigin::User,
        trusted_hash: None,
        source_hash: None,
        trusted: true,
        mcp: None,
        created_at: epoch,
        updated_at: epoch,
    })
}

fn strip_heartbeat(parameters: &mut Value) {
    if let Some(props) = parameters["properties"].as_object_mut() {
        props.remove("request_heartbeat");
    }
    if let Some(required) = parameters["required"].as_array_mut() {
        required.retain(|r| r != "request_heartbeat");
    }
}

fn add_heartbeat(parameters: &mut Value) {
    if let Some(props) = parameters["properties"].as_object_mut() {
        props.insert(
            "request_heartbeat".into(),
            json!({"type": "boolean", "description": "true to take another step after this tool returns"}),
        );
    }
    if let Some(required) = parameters["required"].as_array_mut() {
        required.push("request_heartbeat".into());
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// Description and JSON schema of a built-in tool.
fn schema(name: &str) -> Option<(&'static str, Value)> {
    let label = json!({"type": "string", "description": "block label, e.g. human"});
    Some(match name {
        "send_message" => (
            "Send a message to the user; the only way they hear you.",
            object(json!({"message": {"type": "string"}}), &["message"]),
        ),
        "core_memory_append" => (
            "Append a line to a core memory block.",
            object(
                json!({"label": label, "content": {"type": "string"}}),
                &["label", "content"],
            ),
        ),
        "core_memory_replace" => (
            "Replace text in a core memory block (all occurrences); empty new_content deletes it.",
            object(
                json!({"label": label, "old_content": {"type": "string"}, "new_content": {"type": "string"}}),
                &["label", "old_content", "new_content"],
            ),
        ),
        "memory_insert" => (
            "Insert text into a block after line insert_line (0 = top, -1 = end).",
            object(
                json!({"label": label, "new_str": {"type": "string"}, "insert_line": {"type": "integer", "default": -1}}),
                &["label", "new_str"],
            ),
        ),
        "memory_replace" => (
            "Replace text that occurs exactly once in a block; empty new_str deletes it.",
            object(
                json!({"label": label, "old_str": {"type": "string"}, "new_str": {"type": "string"}}),
                &["label", "old_str", "new_str"],
            ),
        ),
        "memory_rethink" => (
            "Rewrite a whole block, e.g. to reorganise or condense it.",
            object(
                json!({"label": label, "new_memory": {"type": "string"}}),
                &["label", "new_memory"],
            ),
        ),
        "archival_memory_insert" => (
            "Save a passage to archival memory (long-term, searchable).",
            object(
                json!({"content": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}),
                &["content"],
            ),
        ),
        "archival_memory_search" => (
            "Search archival memory; include_superseded adds facts that were replaced. Dates are ISO 8601.",
            object(
                json!({
                    "query": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "tag_match_mode": {"type": "string", "enum": ["any", "all"]},
                    "top_k": {"type": "integer"},
                    "start_datetime": {"type": "string"},
                    "end_datetime": {"type": "string"},
                    "include_superseded": {"type": "boolean"}
                }),
                &["query"],
            ),
        ),
        "conversation_search" => (
            "Search past messages, including those out of view. Dates are ISO 8601.",
            object(
                json!({
                    "query": {"type": "string"},
                    "roles": {"type": "array", "items": {"type": "string", "enum": ["user", "assistant", "tool"]}},
                    "limit": {"type": "integer"},
                    "start_date": {"type": "string"},
                    "end_date": {"type": "string"}
                }),
                &["query"],
            ),
        ),
        "open_files" => (
            "Open files of your folders: each shows a window of numbered lines in your context \
             until closed. offset is the first line (1-based), length the number of lines. At \
             most 5 stay open; opening more closes the least recently used.",
            object(
                json!({
                    "file_requests": {"type": "array", "items": {"type": "object", "properties": {
                        "file_name": {"type": "string", "description": "folder/file as listed in your context"},
                        "offset": {"type": "integer", "description": "first line to show, 1-based"},
                        "length": {"type": "integer", "description": "lines to show"}
                    }, "required": ["file_name"]}},
                    "close_all_others": {"type": "boolean", "description": "close every other open file first"}
                }),
                &["file_requests"],
            ),
        ),
        "grep_files" => (
            "Find lines matching a regular expression in the files of your folders, with line \
             numbers (and pages of PDFs); 20 matches a call, offset pages on.",
            object(
                json!({
                    "pattern": {"type": "string", "description": "regular expression"},
                    "include": {"type": "string", "description": "only files whose name matches this glob, e.g. *.md"},
                    "context_lines": {"type": "integer", "description": "lines shown around each match (0-5)"},
                    "offset": {"type": "integer", "description": "matches to skip, for the next page"}
                }),
                &["pattern"],
            ),
        ),
        "semantic_search_files" => (
            "Search the files of your folders by meaning; each passage comes with where it is \
             (file:page or file:line).",
            object(
                json!({"query": {"type": "string"}, "limit": {"type": "integer"}}),
                &["query"],
            ),
        ),
        _ => return None,
    })
}

/// What one tool call produced.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// The result envelope stored as the tool message.
    pub result: ToolReturn,
    /// Classic loop: the model asked for another step (`request_heartbeat`).
    pub heartbeat: bool,
    /// For `send_message`: the text the user should see.
    pub reply: Option<String>,
}

/// Runs one tool call. Never fails: problems become `Failed` results.
pub async fn execute(ctx: &mut ToolContext<'_>, call: &ToolCall) -> ToolOutput {
    let now = ctx.now;
    let mut heartbeat = false;
    let mut reply = None;
    let outcome = match Args::parse(&call.arguments) {
        Err(e) => Err(e),
        Ok(args) => {
            heartbeat = args.heartbeat();
            let attached = ctx.agent.tools.iter().any(|t| t == &call.name);
            let custom = ctx.custom.iter().find(|t| t.name == call.name).cloned();
            if !attached || (schema(&call.name).is_none() && custom.is_none()) {
                Err(format!(
                    "Unknown tool '{}'. Available tools: {}.",
                    call.name,
                    ctx.agent.tools.join(", ")
                ))
            } else if let Some(tool) = custom.filter(|_| schema(&call.name).is_none()) {
                if tool.language == ToolLanguage::Mcp {
                    mcp_call(ctx, &tool, &args).await
                } else {
                    custom::run(ctx, &tool, &call.id, &args).await
                }
            } else {
                dispatch(ctx, call, &args, &mut reply)
                    .await
                    .map_err(|e| with_argument_hint(e, &call.name, &args))
            }
        }
    };
    let result = match outcome {
        Ok(message) => ToolReturn::ok(message, now),
        Err(message) => ToolReturn::failed(message, now),
    };
    ToolOutput {
        result,
        heartbeat,
        reply,
    }
}

/// A missing argument is most often a misspelled one (small models write `msg` for `message`,
/// `text` for `content`): the error then names what was given and what the tool takes, so the
/// model can correct the call. Other errors are returned as they are.
fn with_argument_hint(error: String, tool: &str, args: &Args) -> String {
    if !error.starts_with("Missing required argument") {
        return error;
    }
    let Some((_, schema)) = schema(tool) else {
        return error;
    };
    let takes: Vec<&str> = schema["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let given = args.names();
    let unknown: Vec<&str> = given
        .iter()
        .copied()
        .filter(|g| !takes.contains(g))
        .collect();
    let quote = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if unknown.is_empty() {
        format!("{error} {tool} takes: {}.", quote(&takes))
    } else {
        format!(
            "{error} {tool} takes: {}; {} is not one of them.",
            quote(&takes),
            quote(&unknown)
        )
    }
}

/// Runs a tool of an MCP server: its arguments (without `request_heartbeat`) go to the server
/// as they are; the result is cut to the tool's `return_char_limit`.
async fn mcp_call(ctx: &ToolContext<'_>, tool: &Tool, args: &Args) -> Result<String, String> {
    let Some(source) = tool.mcp.as_ref() else {
        return Err(format!("Tool '{}' names no MCP server.", tool.name));
    };
    let Some(mcp) = ctx.mcp else {
        return Err(format!(
            "Tool '{}' is on MCP server '{}', which this Engram process cannot reach.",
            tool.name, source.server_name
        ));
    };
    let arguments = match args.without_heartbeat() {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let text = mcp
        .call(&ctx.agent.id, source, arguments)
        .await
        .map_err(|e| e.to_string())?;
    Ok(custom::cut(text, tool.return_char_limit))
}

async fn dispatch(
    ctx: &mut ToolContext<'_>,
    call: &ToolCall,
    args: &Args,
    reply: &mut Option<String>,
) -> Result<String, String> {
    let tool_call_id = call.id.as_str();
    match call.name.as_str() {
        "send_message" => {
            let message = args.str("message")?;
            *reply = Some(message.to_owned());
            Ok("Sent message successfully.".into())
        }
        "core_memory_append" => memory::append(ctx, tool_call_id, args).await,
        "core_memory_replace" => memory::replace_all(ctx, tool_call_id, args).await,
        "memory_insert" => memory::insert(ctx, tool_call_id, args).await,
        "memory_replace" => memory::replace_once(ctx, tool_call_id, args).await,
        "memory_rethink" => memory::rethink(ctx, tool_call_id, args).await,
        "archival_memory_insert" => archival::insert(ctx, args).await,
        "archival_memory_search" => archival::search(ctx, args).await,
        "conversation_search" => recall::search(ctx, args).await,
        "open_files" => files::open(ctx, args).await,
        "grep_files" => file_search::grep(ctx, args).await,
        "semantic_search_files" => file_search::semantic(ctx, args).await,
        other => Err(format!(
            "Tool '{other}' cannot run in this version of Engram."
        )),
    }
}
