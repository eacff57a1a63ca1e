//! Engram agents → an Agent File v2 that Letta can read (its field names, file-local ids), plus
//! the `engram` extension that makes the round trip back into Engram lossless.
//!
//! Letta's part holds, per agent, a system message with the instructions, a summary alert when
//! there is a summary (Letta keeps its summary as such a message), and the in-context messages;
//! the extension holds the whole history. Custom tools and tool rules kept by an earlier import
//! go back into `tools` and `tool_rules`. Nothing secret is written: Engram keeps keys only in
//! the OS keychain, and an import never keeps a file's secrets or environment variables.

use crate::export_sections::Sections;
use crate::extension::{
    AgentExt, BlockExt, EXTENSION_VERSION, EditExt, Extension, MessageExt, PassageExt, StepExt,
    SupersededExt, encode_vector,
};
use crate::model::{
    BlockAf, ContentAf, EmbeddingConfigAf, FunctionAf, LlmConfigAf, MessageAf, PartAf, RoleAf,
    ToolAf, ToolCallAf, ToolReturnAf,
};
use crate::snapshot::AgentSnapshot;
use crate::time::show;
use crate::v2::{AgentFileV2, AgentV2};
use engram_core::agent::split_handle;
use engram_core::{Editor, LoopStyle, Message, Role, SleeptimeSettings, Timestamp};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

/// Letta's schema revision the written files follow (that of its newest fixtures).
const REVISION_ID: &str = "066857381578";

/// What the exporter needs from the rest of Engram.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// Built-in tool schemas by name: `{name, description, parameters}` as the model sees them.
    pub tool_schemas: BTreeMap<String, Value>,
    /// The user tools the agents use, by name (written as Letta `custom` Python tools, or
    /// `external_mcp` tools for tools of MCP servers).
    pub user_tools: BTreeMap<String, engram_core::Tool>,
    /// The MCP servers of those tools, by server id (written to `mcp_servers` in Letta's
    /// shape, without environment values or tokens).
    pub mcp_servers: BTreeMap<String, engram_core::McpServer>,
    /// The file's `created_at`.
    pub now: Timestamp,
}

/// A server as Letta's agent-file `MCPServer`: how to reach it, never its secrets (environment
/// values and tokens stay in the keychain; the names of the variables are kept).
fn mcp_server_af(s: &engram_core::McpServer) -> Value {
    match &s.transport {
        engram_core::McpTransport::Stdio {
            command,
            args,
            env_keys,
        } => json!({
            "server_name": s.name,
            "server_type": "stdio",
            "stdio_config": {"server_name": s.name, "type": "stdio", "command": command, "args": args},
            "metadata_": {"engram_env_keys": env_keys},
        }),
        engram_core::McpTransport::StreamableHttp { url, .. } => json!({
            "server_name": s.name,
            "server_type": "streamable_http",
            "server_url": url,
        }),
    }
}

fn letta_tool_type(name: &str) -> &'static str {
    match name {
        "core_memory_append" | "core_memory_replace" => "letta_memory_core",
        "memory_insert" | "memory_replace" | "memory_rethink" => "letta_sleeptime_core",
        _ => "letta_core",
    }
}

/// Letta's `model_endpoint_type` values (its `LLMConfig` accepts only these).
const LETTA_ENDPOINT_TYPES: &[&str] = &[
    "openai",
    "anthropic",
    "google_ai",
    "google_vertex",
    "azure",
    "groq",
    "ollama",
    "webui",
    "webui-legacy",
    "lmstudio",
    "lmstudio-legacy",
    "lmstudio-chatcompletions",
    "llamacpp",
    "koboldcpp",
    "vllm",
    "hugging-face",
    "minimax",
    "mistral",
    "together",
    "bedrock",
    "deepseek",
    "xai",
    "zai",
    "openrouter",
    "chatgpt_oauth",
];

/// The `model_endpoint_type` Letta accepts for an Engram provider: its own name when Letta
/// knows it, else `openai` (every other Engram provider speaks the OpenAI API). The provider's
/// own name goes in `provider_name`, and the `engram` extension keeps the exact handle.
fn endpoint_type(provider: &str) -> &str {
    if LETTA_ENDPOINT_TYPES.contains(&provider) {
        provider
    } else {
        "openai"
    }
}

/// Local ids handed out while writing one file.
#[derive(Default)]
struct Ids {
    blocks: HashMap<String, String>,
    tools: HashMap<String, String>,
    edits: HashMap<String, String>,
    agents: HashMap<String, String>,
    messages: usize,
}

impl Ids {
    fn message(&mut self) -> String {
        let id = format!("message-{}", self.messages);
        self.messages += 1;
        id
    }
}

fn text_parts(text: &str) -> Option<ContentAf> {
    Some(ContentAf::Parts(vec![PartAf {
        kind: "text".into(),
        text: Some(text.to_owned()),
        ..PartAf::default()
    }]))
}

fn letta_message(id: String, agent: &str, role: RoleAf, at: Timestamp) -> MessageAf {
    let mut extra = Map::new();
    for key in [
        "otid",
        "sender_id",
        "batch_item_id",
        "group_id",
        "approve",
        "approval_request_id",
        "denial_reason",
    ] {
        extra.insert(key.into(), Value::Null);
    }
    extra.insert("agent_id".into(), json!(agent));
    MessageAf {
        kind: Some("message".into()),
        id: Some(id),
        role,
        content: None,
        name: None,
        model: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        tool_returns: Vec::new(),
        created_at: Some(show(at)),
        approvals: Vec::new(),
        extra,
    }
}

fn to_letta(m: &Message, id: String, agent: &str, model: &str) -> MessageAf {
    let role = match m.role {
        Role::System => RoleAf::System,
        Role::User => RoleAf::User,
        Role::Assistant => RoleAf::Assistant,
        Role::Tool => RoleAf::Tool,
    };
    let mut out = letta_message(id, agent, role, m.created_at);
    let mut parts = Vec::new();
    if let Some(r) = &m.reasoning {
        let mut extra = Map::new();
        extra.insert("is_native".into(), json!(false));
        extra.insert("signature".into(), Value::Null);
        parts.push(PartAf {
            kind: "reasoning".into(),
            reasoning: Some(r.clone()),
            extra,
            ..PartAf::default()
        });
    }
    if !m.content.is_empty() || parts.is_empty() {
        parts.push(PartAf {
            kind: "text".into(),
            text: Some(m.content.clone()),
            ..PartAf::default()
        });
    }
    out.content = Some(ContentAf::Parts(parts));
    if m.role == Role::Assistant {
        out.model = Some(model.to_owned());
    }
    out.tool_calls = m
        .tool_calls
        .iter()
        .map(|c| ToolCallAf {
            id: c.id.clone(),
            kind: Some("function".into()),
            function: FunctionAf {
                name: c.name.clone(),
                arguments: Value::String(c.arguments.clone()),
            },
        })
        .collect();
    if m.role == Role::Tool {
        out.name.clone_from(&m.tool_name);
        out.tool_call_id.clone_from(&m.tool_call_id);
        let failed = serde_json::from_str::<Value>(&m.content)
            .ok()
            .and_then(|v| {
                v.get("status")
                    .and_then(Value::as_str)
                    .map(|s| s == "Failed")
            })
            .unwrap_or(false);
        let mut extra = Map::new();
        extra.insert("stdout".into(), Value::Null);
        extra.insert("stderr".into(), Value::Null);
        out.tool_returns = vec![ToolReturnAf {
            tool_call_id: m.tool_call_id.clone(),
            status: Some(if failed { "error" } else { "success" }.into()),
            func_response: Some(Value::String(m.content.clone())),
            extra,
        }];
    }
    out
}

fn editor_out(e: &Editor, ids: &Ids) -> Editor {
    match e {
        Editor::Agent {
            agent_id,
            tool_call_id,
        } => Editor::Agent {
            agent_id: ids
                .agents
                .get(agent_id.as_str())
                .map_or_else(|| agent_id.clone(), |s| s.as_str().into()),
            tool_call_id: tool_call_id.clone(),
        },
        Editor::Undo { edit_id } => Editor::Undo {
            edit_id: ids
                .edits
                .get(edit_id.as_str())
                .map_or_else(|| edit_id.clone(), |s| s.as_str().into()),
        },
        other => other.clone(),
    }
}

fn agent_type(s: &AgentSnapshot) -> String {
    let kept = s
        .extras
        .as_ref()
        .and_then(|x| x["source"]["agent_type"].as_str())
        .map(str::to_owned);
    let classic = |t: &str| matches!(t, "memgpt_agent" | "memgpt_v2_agent");
    match (kept, s.agent.loop_style) {
        (Some(t), LoopStyle::Classic) if classic(&t) => t,
        (Some(t), LoopStyle::ToolLoop) if !classic(&t) => t,
        (_, LoopStyle::Classic) => "memgpt_agent".into(),
        (_, LoopStyle::ToolLoop) => "letta_v1_agent".into(),
    }
}

/// Writes `agents` as one v2 file. Blocks shared by several of them are written once; built-in
/// tools get Engram's schemas from `opts`; custom tools, tool rules and tags kept by an earlier
/// import are written back.
pub fn export_v2(agents: &[AgentSnapshot], opts: &ExportOptions) -> AgentFileV2 {
    let mut ids = Ids::default();
    for (i, s) in agents.iter().enumerate() {
        ids.agents
            .insert(s.agent.id.to_string(), format!("agent-{i}"));
        for edit in s.blocks.iter().flat_map(|b| &s.history[&b.id]) {
            let n = ids.edits.len();
            ids.edits
                .entry(edit.id.to_string())
                .or_insert_with(|| format!("edit-{n}"));
        }
    }
    let mut file = AgentFileV2 {
        metadata: Some(json!({"revision_id": REVISION_ID})),
        created_at: Some(show(opts.now)),
        ..AgentFileV2::default()
    };
    let mut ext = Extension {
        version: EXTENSION_VERSION,
        ..Extension::default()
    };
    let mut sections = Sections::new();

    for (i, s) in agents.iter().enumerate() {
        let local = format!("agent-{i}");
        let a = &s.agent;
        let mut block_ids = Vec::new();
        for b in &s.blocks {
            if let Some(id) = ids.blocks.get(b.id.as_str()) {
                block_ids.push(id.clone());
                continue;
            }
            let id = format!("block-{}", ids.blocks.len());
            ids.blocks.insert(b.id.to_string(), id.clone());
            let mut extra = Map::new();
            extra.insert("is_template".into(), json!(false));
            extra.insert("preserve_on_migration".into(), json!(false));
            file.blocks.push(BlockAf {
                id: Some(id.clone()),
                label: b.label.clone(),
                value: b.value.clone(),
                limit: Some(b.limit as u64),
                description: Some(b.description.clone()),
                read_only: b.read_only,
                metadata: Some(json!({})),
                extra,
            });
            let history = s.history[&b.id]
                .iter()
                .map(|e| EditExt {
                    id: ids.edits[e.id.as_str()].clone(),
                    editor: editor_out(&e.editor, &ids),
                    old_value: e.old_value.clone(),
                    new_value: e.new_value.clone(),
                    old_version: e.old_version,
                    new_version: e.new_version,
                    created_at: e.created_at,
                })
                .collect();
            ext.blocks.insert(
                id.clone(),
                BlockExt {
                    created_at: b.created_at,
                    updated_at: b.updated_at,
                    version: Some(b.version),
                    history,
                },
            );
            block_ids.push(id);
        }

        let mut tool_ids = Vec::new();
        let mut add_tool = |file: &mut AgentFileV2, tool: ToolAf| {
            let id = match ids.tools.get(&tool.name) {
                Some(id) => id.clone(),
                None => {
                    let id = format!("tool-{}", ids.tools.len());
                    ids.tools.insert(tool.name.clone(), id.clone());
                    file.tools.push(ToolAf {
                        id: Some(id.clone()),
                        ..tool
                    });
                    id
                }
            };
            tool_ids.push(id);
        };
        for name in &a.tools {
            if let Some((t, m)) = opts
                .user_tools
                .get(name)
                .and_then(|t| Some((t, t.mcp.as_ref()?)))
            {
                let server = opts
                    .mcp_servers
                    .get(m.server_id.as_str())
                    .and_then(|s| sections.add_mcp_server(mcp_server_af(s)));
                let mut extra = Map::new();
                extra.insert(
                    "metadata_".into(),
                    json!({"mcp": {"server_name": m.server_name, "server_id": server, "tool_name": m.tool_name}}),
                );
                add_tool(
                    &mut file,
                    ToolAf {
                        name: name.clone(),
                        description: Some(t.description.clone()),
                        tool_type: Some("external_mcp".into()),
                        json_schema: Some(t.json_schema.clone()),
                        tags: t.tags.clone(),
                        extra,
                        ..ToolAf::default()
                    },
                );
                continue;
            }
            if let Some(t) = opts.user_tools.get(name) {
                let mut extra = Map::new();
                extra.insert("return_char_limit".into(), json!(t.return_char_limit));
                add_tool(
                    &mut file,
                    ToolAf {
                        name: name.clone(),
                        description: Some(t.description.clone()),
                        tool_type: Some("custom".into()),
                        source_type: Some("python".into()),
                        source_code: t.source_code.clone(),
                        json_schema: Some(t.json_schema.clone()),
                        tags: t.tags.clone(),
                        extra,
                        ..ToolAf::default()
                    },
                );
                continue;
            }
            let schema = opts.tool_schemas.get(name).cloned();
            let description = schema
                .as_ref()
                .and_then(|s| s["description"].as_str())
                .map(str::to_owned);
            add_tool(
                &mut file,
                ToolAf {
                    name: name.clone(),
                    description,
                    tool_type: Some(letta_tool_type(name).into()),
                    source_type: Some("python".into()),
                    json_schema: schema,
                    tags: vec![letta_tool_type(name).into()],
                    ..ToolAf::default()
                },
            );
        }
        let extras = s.extras.as_ref();
        for t in extras
            .and_then(|x| x["tools"].as_array())
            .into_iter()
            .flatten()
        {
            if let Ok(tool) = serde_json::from_value::<ToolAf>(t.clone()) {
                add_tool(&mut file, tool);
            }
        }

        let (provider, model) = split_handle(&a.llm.model);
        let llm_config = LlmConfigAf {
            model: Some(model.to_owned()),
            model_endpoint_type: Some(endpoint_type(provider).to_owned()),
            model_endpoint: a.llm.base_url.clone(),
            context_window: Some(u64::from(a.llm.context_window)),
            handle: Some(a.llm.model.clone()),
            temperature: a.llm.temperature.map(f64::from),
            max_tokens: a.llm.max_tokens.map(u64::from),
            extra: Map::from_iter([
                ("put_inner_thoughts_in_kwargs".into(), json!(false)),
                ("provider_name".into(), json!(provider)),
            ]),
        };
        let embedding_config = a.embedding.as_ref().map(|e| {
            let (provider, model) = split_handle(&e.model);
            EmbeddingConfigAf {
                embedding_endpoint_type: Some(provider.to_owned()),
                embedding_model: Some(model.to_owned()),
                embedding_endpoint: e.base_url.clone(),
                handle: Some(e.model.clone()),
                ..EmbeddingConfigAf::default()
            }
        });

        let mut messages = Vec::new();
        let mut system = letta_message(ids.message(), &local, RoleAf::System, a.created_at);
        system.content = text_parts(&a.system);
        messages.push(system);
        if let Some(summary) = &a.summary {
            let at = s
                .messages
                .iter()
                .find(|m| m.in_context)
                .map_or(a.updated_at, |m| m.created_at);
            let mut m = letta_message(ids.message(), &local, RoleAf::User, at);
            let alert = json!({"type": "system_alert", "message": summary, "time": show(at)});
            m.content = text_parts(&serde_json::to_string_pretty(&alert).unwrap_or_default());
            messages.push(m);
        }
        for m in s.messages.iter().filter(|m| m.in_context) {
            messages.push(to_letta(m, ids.message(), &local, model));
        }
        let in_context_message_ids = messages.iter().filter_map(|m| m.id.clone()).collect();

        let mut extra = Map::new();
        for (key, value) in [
            ("include_base_tools", json!(false)),
            ("include_base_tool_rules", json!(false)),
            ("include_multi_agent_tools", json!(false)),
            ("memory_blocks", json!([])),
            ("files_agents", json!([])),
            ("group_ids", json!([])),
            ("metadata", Value::Null),
            ("timezone", json!("UTC")),
            ("message_buffer_autoclear", json!(false)),
        ] {
            extra.insert(key.into(), value);
        }
        sections.add_agent(extras, &local, &mut extra);
        // Live settings win over what an earlier import kept.
        extra.insert("enable_sleeptime".into(), json!(s.sleeptime.enabled));
        if s.sleeptime.enabled {
            let id = format!("group-{}", file.groups.len());
            file.groups.push(crate::sleeptime::letta_group(
                &id,
                &local,
                &a.name,
                &s.sleeptime,
            ));
            extra.insert("group_ids".into(), json!([id]));
        }
        // Rules live on the agent; files imported before they did kept them in the extras.
        let tool_rules = if a.tool_rules.is_empty() {
            extras
                .and_then(|x| x["tool_rules"].as_array())
                .cloned()
                .unwrap_or_default()
        } else {
            a.tool_rules
                .iter()
                .filter_map(|r| serde_json::to_value(r).ok())
                .collect()
        };
        let tags = s.tags.clone();
        file.agents.push(AgentV2 {
            id: local.clone(),
            name: Some(a.name.clone()),
            description: Some(a.description.clone()),
            system: Some(a.system.clone()),
            agent_type: Some(agent_type(s)),
            llm_config: Some(llm_config),
            embedding_config,
            block_ids,
            memory_blocks: Vec::new(),
            tool_ids,
            tool_rules,
            tags,
            messages,
            in_context_message_ids,
            extra,
        });

        ext.agents.insert(
            local,
            AgentExt {
                loop_style: a.loop_style,
                max_steps: a.max_steps,
                llm: a.llm.clone(),
                embedding: a.embedding.clone(),
                tools: a.tools.clone(),
                summary: a.summary.clone(),
                created_at: a.created_at,
                updated_at: a.updated_at,
                messages: s
                    .messages
                    .iter()
                    .map(|m| MessageExt {
                        role: m.role,
                        kind: m.kind,
                        content: m.content.clone(),
                        reasoning: m.reasoning.clone(),
                        tool_calls: m.tool_calls.clone(),
                        tool_call_id: m.tool_call_id.clone(),
                        tool_name: m.tool_name.clone(),
                        run_id: m.run_id.as_ref().map(ToString::to_string),
                        step_id: m.step_id.as_ref().map(ToString::to_string),
                        in_context: m.in_context,
                        created_at: m.created_at,
                    })
                    .collect(),
                passages: s
                    .passages
                    .iter()
                    .map(|p| {
                        // A vector is only worth keeping with the name of the model that made it.
                        let vector = a
                            .embedding
                            .as_ref()
                            .and_then(|e| Some((s.vectors.get(&p.id)?, &e.model)));
                        PassageExt {
                            text: p.text.clone(),
                            tags: p.tags.clone(),
                            created_at: p.created_at,
                            embedding: vector.map(|(v, _)| encode_vector(v)),
                            embedding_model: vector.map(|(_, m)| m.clone()),
                            superseded: p.superseded.as_ref().map(|h| SupersededExt {
                                kind: h.kind,
                                at: h.at,
                                by: h
                                    .by
                                    .as_ref()
                                    .and_then(|by| s.passages.iter().position(|q| &q.id == by)),
                            }),
                        }
                    })
                    .collect(),
                extras: s.extras.clone(),
                sleeptime: (s.sleeptime != SleeptimeSettings::default())
                    .then(|| s.sleeptime.clone()),
                steps: s
                    .steps
                    .iter()
                    .map(|st| StepExt {
                        id: st.id.to_string(),
                        run_id: st.run_id.to_string(),
                        index: st.index,
                        model: st.model.clone(),
                        prompt_tokens: st.prompt_tokens,
                        completion_tokens: st.completion_tokens,
                        finish_reason: st.finish_reason.clone(),
                        started_at: st.started_at,
                        llm_ms: st.llm_ms,
                        step_ms: st.step_ms,
                    })
                    .collect(),
            },
        );
    }
    sections.finish(&mut file);
    file.engram = Some(ext);
    file
}
