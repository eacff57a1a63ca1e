//! The tools a client sees and how a call reaches the service: parse the arguments, call one
//! method, hand back its text.

use engram_service::Engram;
use engram_service::mcp_memory::{
    ConversationQuery, MemoryClient, MemoryCommand, MemoryError, MemoryQuery,
};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The four tools, with JSON schemas.
pub(crate) fn list() -> Vec<Tool> {
    let memory = Tool::new(
        "memory",
        "Long-term memory shared with Engram's agents, as files under /memories (one file per \
         memory block; with several agents, one directory per agent). Commands: view (a \
         directory, or a file with line numbers; view_range [first, last]), create (path, \
         file_text), str_replace (path, old_str that occurs exactly once, new_str), insert \
         (path, insert_line: insert after this line, 0 = top, -1 = end; insert_text), delete \
         (path), rename (old_path, new_path). Each file has a size limit in characters; view \
         shows it. Check memory before starting a task and keep it up to date.",
        schema(json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "delete", "rename"]},
                "path": {"type": "string", "description": "A path under /memories, e.g. /memories/human.md"},
                "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2, "description": "view: first and last line, from 1; -1 ends at the last line"},
                "file_text": {"type": "string", "description": "create: the new file's text"},
                "old_str": {"type": "string", "description": "str_replace: text that occurs exactly once"},
                "new_str": {"type": "string", "description": "str_replace: its replacement"},
                "insert_line": {"type": "integer", "description": "insert: the line after which to insert (0 = top, -1 = end)"},
                "insert_text": {"type": "string", "description": "insert: the text"},
                "old_path": {"type": "string", "description": "rename: the file"},
                "new_path": {"type": "string", "description": "rename: its new path"}
            },
            "required": ["command"]
        })),
    );
    let search = Tool::new(
        "search_memory",
        "Search long-term archival memory (notes saved over time) by words and meaning, best \
         match first. Optional: tags (any of), start/end (ISO 8601 dates or times), limit \
         (default 5, at most 50), agent (with several agents).",
        schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "start": {"type": "string", "description": "ISO 8601 date or time"},
                "end": {"type": "string", "description": "ISO 8601 date or time (a date includes its whole day)"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "agent": {"type": "string"}
            },
            "required": ["query"]
        })),
    )
    .annotate(ToolAnnotations::new().read_only(true));
    let add = Tool::new(
        "add_memory",
        "Save a note to long-term archival memory, optionally tagged; find it later with \
         search_memory.",
        schema(json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "agent": {"type": "string", "description": "whose memory, with several agents"}
            },
            "required": ["text"]
        })),
    );
    let conversation = Tool::new(
        "search_conversation",
        "Search the agents' past conversations (every message kept), best match first. \
         Optional: roles (user, assistant, tool), start/end (ISO 8601), limit, agent.",
        schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "roles": {"type": "array", "items": {"type": "string", "enum": ["user", "assistant", "tool"]}},
                "start": {"type": "string"},
                "end": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "agent": {"type": "string"}
            },
            "required": ["query"]
        })),
    )
    .annotate(ToolAnnotations::new().read_only(true));
    vec![memory, search, add, conversation]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddArgs {
    text: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    agent: Option<String>,
}

fn parse<T: for<'de> Deserialize<'de>>(args: Value) -> Result<T, MemoryError> {
    serde_json::from_value(args).map_err(|e| MemoryError::Arguments(e.to_string()))
}

/// Runs tool `name` for `client`. `Ok(None)` for an unknown tool.
pub(crate) async fn call(
    engram: &Engram,
    client: &MemoryClient,
    name: &str,
    args: Value,
) -> Option<Result<String, MemoryError>> {
    Some(match name {
        "memory" => match parse::<MemoryCommand>(args) {
            Ok(command) => engram.memory_server().tool(client, &command).await,
            Err(e) => Err(e),
        },
        "search_memory" => match parse::<MemoryQuery>(args) {
            Ok(q) => engram.memory_server().search(client, &q).await,
            Err(e) => Err(e),
        },
        "add_memory" => match parse::<AddArgs>(args) {
            Ok(a) => {
                engram
                    .memory_server()
                    .add_memory(client, &a.text, a.tags, a.agent.as_deref())
                    .await
            }
            Err(e) => Err(e),
        },
        "search_conversation" => match parse::<ConversationQuery>(args) {
            Ok(q) => engram.memory_server().search_conversation(client, &q).await,
            Err(e) => Err(e),
        },
        _ => return None,
    })
}
