//! Engram's types in Letta's JSON shapes: `AgentState`, `Block`, `Tool`, `Passage`, `Memory`.
//!
//! Field names and required fields follow the `letta-client` models (0.1.x `types/` and 1.x
//! `types/`); fields Engram has no notion of (projects, identities, sources) are present and
//! empty so strict parsers are satisfied. Times are RFC 3339 in UTC.

use engram_core::{
    Agent, Block, LoopStyle, Passage, PassageHit, SleeptimeSettings, Timestamp, Tool, ToolLanguage,
};
use engram_service::AgentState;
use engram_service::builtin_tools::{BUILTIN_TOOLS, specs};
use serde_json::{Value, json};

/// Letta's template for compiling blocks into the prompt, shown as `memory.prompt_template`.
/// Engram compiles blocks itself (see DESIGN.md §3); this is informational.
const PROMPT_TEMPLATE: &str = "{% for block in blocks %}<{{ block.label }}>\n\
<description>{{ block.description }}</description>\n\
<metadata>chars_current={{ block.value|length }} chars_limit={{ block.limit }}</metadata>\n\
<value>{{ block.value }}</value>\n</{{ block.label }}>\n{% endfor %}";

/// A time as Letta sends it (RFC 3339, microseconds, `Z`).
pub fn time(t: &Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// Letta's `agent_type` for a loop style.
pub fn agent_type(style: LoopStyle) -> &'static str {
    match style {
        LoopStyle::Classic => "memgpt_agent",
        LoopStyle::ToolLoop => "letta_v1_agent",
    }
}

/// The loop style for a Letta `agent_type`: the MemGPT types drive the classic loop, the rest
/// (and none) the tool loop. `None` for a type Engram does not run.
pub fn loop_style(agent_type: &str) -> Option<LoopStyle> {
    match agent_type {
        "memgpt_agent" | "memgpt_v2_agent" => Some(LoopStyle::Classic),
        "letta_v1_agent" | "react_agent" => Some(LoopStyle::ToolLoop),
        _ => None,
    }
}

/// An agent's sleep-time passes as Letta's `multi_agent_group` of `manager_type` `sleeptime`.
/// Engram's passes are not a second agent, so `agent_ids` is empty; the group's id is derived
/// from the agent's (stable across reads), `manager_agent_id` is the agent itself, and
/// `turns_counter` counts the user turns waiting for the next pass.
pub fn sleeptime_group(
    state: &AgentState,
    s: &SleeptimeSettings,
    waiting: u32,
    last_processed: Option<&engram_core::MessageId>,
) -> Value {
    let a = &state.agent;
    let group = a.id.as_str().replacen("agent-", "group-", 1);
    json!({
        "id": group,
        "manager_type": "sleeptime",
        "agent_ids": [],
        "description": format!("Sleep-time passes of {}", a.name),
        "manager_agent_id": a.id,
        "shared_block_ids": state.blocks.iter().map(|b| &b.id).collect::<Vec<_>>(),
        "sleeptime_agent_frequency": s.frequency,
        "turns_counter": waiting,
        "last_processed_message_id": last_processed,
        "project_id": null,
        "template_id": null,
        "base_template_id": null,
        "deployment_id": null,
        "termination_token": null,
        "max_turns": null,
        "max_message_buffer_length": null,
        "min_message_buffer_length": null,
        "hidden": false,
    })
}

/// A block as Letta's `Block` / `BlockResponse`.
pub fn block(b: &Block) -> Value {
    json!({
        "id": b.id,
        "label": b.label,
        "value": b.value,
        "limit": b.limit,
        "description": b.description,
        "read_only": b.read_only,
        "version": b.version,
        "is_template": false,
        "template_name": null,
        "preserve_on_migration": false,
        "hidden": null,
        "metadata": {},
        "project_id": null,
        "created_by_id": null,
        "last_updated_by_id": null,
        "created_at": time(&b.created_at),
        "updated_at": time(&b.updated_at),
    })
}

/// The stable id of built-in tool `name` (UUID-shaped, derived from its position), or `None`.
pub fn tool_id(name: &str) -> Option<String> {
    BUILTIN_TOOLS
        .iter()
        .position(|t| *t == name)
        .map(|i| format!("tool-00000000-0000-4000-8000-{:012}", i + 1))
}

/// The built-in tool with id `id`, if any.
pub fn tool_name(id: &str) -> Option<&'static str> {
    BUILTIN_TOOLS
        .iter()
        .find(|t| tool_id(t).as_deref() == Some(id))
        .copied()
}

/// A built-in tool as Letta's `Tool`, with its schema as the tool loop shows it; `None` for a
/// name that is not a built-in tool.
pub fn tool(name: &str) -> Option<Value> {
    let spec = specs(&[name.to_owned()], LoopStyle::ToolLoop).pop()?;
    let tool_type = if name.contains("memory_") && !name.starts_with("archival") {
        "letta_memory_core"
    } else {
        "letta_core"
    };
    Some(json!({
        "id": tool_id(name)?,
        "name": spec.name,
        "description": spec.description,
        "tool_type": tool_type,
        "source_type": "python",
        "source_code": null,
        "json_schema": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
        "args_json_schema": null,
        "tags": [tool_type],
        "return_char_limit": 50000,
        "pip_requirements": null,
        "npm_requirements": null,
        "default_requires_approval": null,
        "enable_parallel_execution": false,
        "metadata_": {},
        "created_by_id": null,
        "last_updated_by_id": null,
    }))
}

/// Any tool as Letta's `Tool`: built-ins keep their stable ids; user tools are `custom`
/// Python tools with their source.
pub fn any_tool(t: &Tool) -> Value {
    if t.language == ToolLanguage::Builtin
        && let Some(v) = tool(&t.name)
    {
        return v;
    }
    let (tool_type, source_type, mcp) = match &t.mcp {
        Some(m) => (
            "external_mcp",
            "mcp",
            json!({"server_id": m.server_id, "server_name": m.server_name, "tool_name": m.tool_name}),
        ),
        None => ("custom", "python", Value::Null),
    };
    json!({
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "tool_type": tool_type,
        "source_type": source_type,
        "source_code": t.source_code,
        "json_schema": t.json_schema,
        "args_json_schema": null,
        "tags": t.tags,
        "return_char_limit": t.return_char_limit,
        "pip_requirements": null,
        "npm_requirements": null,
        "default_requires_approval": null,
        "enable_parallel_execution": false,
        "metadata_": {"available": t.available, "unavailable_reason": t.unavailable_reason, "mcp": mcp},
        "created_by_id": null,
        "last_updated_by_id": null,
        "created_at": time(&t.created_at),
        "updated_at": time(&t.updated_at),
    })
}

/// Every built-in tool as Letta `Tool`s.
pub fn all_tools() -> Vec<Value> {
    BUILTIN_TOOLS.iter().filter_map(|n| tool(n)).collect()
}

/// The endpoint type Letta shows for a model handle's provider.
fn endpoint_type(provider: &str) -> &str {
    match provider {
        "anthropic" | "ollama" | "groq" | "together" | "vllm" | "lmstudio" => provider,
        _ => "openai",
    }
}

fn llm_config(a: &Agent) -> Value {
    json!({
        "model": a.llm.model_name(),
        "handle": a.llm.model,
        "model_endpoint_type": endpoint_type(a.llm.provider()),
        "model_endpoint": a.llm.base_url,
        "context_window": a.llm.context_window,
        "max_tokens": a.llm.max_tokens,
        "temperature": a.llm.temperature,
        "put_inner_thoughts_in_kwargs": false,
        "enable_reasoner": false,
    })
}

/// A model Engram knows ([`engram_service::KnownModel`]) as Letta's `LLMConfig`; a built-in
/// GGUF is served by Engram's own llama.cpp worker.
///
/// Both SDK generations' fields: 1.x's `Model` (`name`, `display_name`, `provider_type`,
/// `max_context_window`) extends the older `LLMConfig`.
pub fn known_llm_config(m: &engram_service::KnownModel) -> Value {
    let (provider, model) = engram_core::agent::split_handle(&m.handle);
    let kind = if m.built_in {
        "llamacpp"
    } else {
        endpoint_type(provider)
    };
    json!({
        "model": model,
        "name": model,
        "display_name": model,
        "handle": m.handle,
        "model_endpoint_type": kind,
        "provider_type": kind,
        "model_endpoint": m.base_url,
        "provider_name": provider,
        "provider_category": "base",
        "context_window": m.size,
        "max_context_window": m.size,
        "put_inner_thoughts_in_kwargs": false,
        "enable_reasoner": false,
    })
}

/// An embedding model Engram knows as Letta's `EmbeddingConfig`.
pub fn known_embedding_config(m: &engram_service::KnownModel) -> Value {
    let (provider, model) = engram_core::agent::split_handle(&m.handle);
    json!({
        "embedding_model": model,
        "name": model,
        "display_name": model,
        "handle": m.handle,
        "embedding_endpoint_type": endpoint_type(provider),
        "provider_type": endpoint_type(provider),
        "provider_name": provider,
        "embedding_endpoint": m.base_url,
        "embedding_dim": m.size.unwrap_or_else(|| engram_dims(model)),
        "embedding_chunk_size": 300,
    })
}

fn embedding_config(a: &Agent) -> Value {
    embedding_config_of(a.embedding.as_ref())
}

/// Letta's `embedding_config` for an embedding model (`None`: words alone).
pub fn embedding_config_of(e: Option<&engram_core::EmbeddingConfig>) -> Value {
    match e {
        Some(e) => {
            let (provider, model) = engram_core::agent::split_handle(&e.model);
            json!({
                "embedding_model": model,
                "handle": e.model,
                "embedding_endpoint_type": endpoint_type(provider),
                "embedding_endpoint": e.base_url,
                "embedding_dim": engram_dims(model),
                "embedding_chunk_size": 300,
            })
        }
        // Letta requires the object; Engram without an embedding model searches by BM25 only.
        None => json!({
            "embedding_model": "none",
            "handle": null,
            "embedding_endpoint_type": "openai",
            "embedding_endpoint": null,
            "embedding_dim": 0,
            "embedding_chunk_size": 300,
        }),
    }
}

/// The dimension Letta would report for well-known embedding models (informational only:
/// Engram stores whatever the model returns).
fn engram_dims(model: &str) -> u32 {
    match model {
        "text-embedding-3-large" => 3072,
        "text-embedding-3-small" | "text-embedding-ada-002" => 1536,
        "all-minilm-l6-v2" => 384,
        _ => 1024,
    }
}

/// Letta's `Memory`: the blocks and the template that compiles them.
pub fn memory(style: LoopStyle, blocks: &[Block]) -> Value {
    json!({
        "agent_type": agent_type(style),
        "blocks": blocks.iter().map(block).collect::<Vec<_>>(),
        "file_blocks": [],
        "prompt_template": PROMPT_TEMPLATE,
    })
}

/// An agent as Letta's `AgentState`. `message_ids` are the ids of the messages in its context
/// window.
pub fn agent_state(state: &AgentState, message_ids: &[String], tools: Vec<Value>) -> Value {
    let a = &state.agent;
    json!({
        "id": a.id,
        "name": a.name,
        "description": a.description,
        "system": a.system,
        "agent_type": agent_type(a.loop_style),
        "model": a.llm.model,
        "embedding": a.embedding.as_ref().map(|e| &e.model),
        "llm_config": llm_config(a),
        "embedding_config": embedding_config(a),
        "memory": memory(a.loop_style, &state.blocks),
        "blocks": state.blocks.iter().map(block).collect::<Vec<_>>(),
        "tools": tools,
        "tool_rules": a.tool_rules,
        "message_ids": message_ids,
        "sources": [],
        "tags": [],
        "identity_ids": [],
        "identities": [],
        "tool_exec_environment_variables": [],
        "secrets": [],
        "metadata": null,
        "project_id": null,
        "template_id": null,
        "base_template_id": null,
        "multi_agent_group": null,
        "managed_group": null,
        "message_buffer_autoclear": false,
        "enable_sleeptime": false,
        "max_steps": a.max_steps,
        "timezone": "UTC",
        "hidden": null,
        "created_by_id": null,
        "last_updated_by_id": null,
        "created_at": time(&a.created_at),
        "updated_at": time(&a.updated_at),
    })
}

/// A passage as Letta's `Passage`.
pub fn passage(p: &Passage) -> Value {
    let mut out = json!({
        "id": p.id,
        "text": p.text,
        "agent_id": p.agent_id,
        "archive_id": null,
        "source_id": null,
        "file_id": null,
        "file_name": null,
        "tags": p.tags,
        "metadata": {},
        "embedding": null,
        "embedding_config": null,
        "is_deleted": false,
        "organization_id": null,
        "created_at": time(&p.created_at),
        "updated_at": time(&p.created_at),
    });
    if let Some(s) = &p.superseded {
        out["superseded"] = superseded(s);
    }
    out
}

/// Engram's own `superseded` field of a passage that was replaced or merged:
/// `{kind, at, by, pass_id}`.
fn superseded(s: &engram_core::Supersession) -> Value {
    json!({"kind": s.kind, "at": time(&s.at), "by": s.by, "pass_id": s.pass_id})
}

/// Archival search results as Letta's `{results: [{id, content, timestamp, tags}], count}`.
pub fn search_results(hits: &[PassageHit]) -> Value {
    let results: Vec<Value> = hits
        .iter()
        .map(|h| {
            let mut r = json!({
                "id": h.passage.id,
                "content": h.passage.text,
                "timestamp": time(&h.passage.created_at),
                "tags": h.passage.tags,
                "score": h.score,
            });
            if let Some(s) = &h.passage.superseded {
                r["superseded"] = superseded(s);
            }
            r
        })
        .collect();
    json!({"count": results.len(), "results": results})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_ids_round_trip() {
        for name in BUILTIN_TOOLS {
            let id = tool_id(name).unwrap();
            assert_eq!(id.len(), "tool-".len() + 36);
            assert_eq!(tool_name(&id), Some(*name));
            assert_eq!(tool(name).unwrap()["name"], *name);
        }
        assert_eq!(tool_name("tool-nope"), None);
    }

    #[test]
    fn agent_types_map_to_loops() {
        assert_eq!(loop_style("memgpt_v2_agent"), Some(LoopStyle::Classic));
        assert_eq!(loop_style("letta_v1_agent"), Some(LoopStyle::ToolLoop));
        assert_eq!(loop_style("sleeptime_agent"), None);
        assert_eq!(
            loop_style(agent_type(LoopStyle::Classic)),
            Some(LoopStyle::Classic)
        );
    }
}
