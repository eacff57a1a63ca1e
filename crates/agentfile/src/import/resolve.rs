//! Resolving a v1 or v2 file into one shape: blocks and agents with their references checked.

use crate::errors::AgentFileError;
use crate::extension::Extension;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

use super::{parts::AgentIn, parts::BlockIn, parts::Resolved, parts::Shared};

pub(super) fn resolve_v1(f: &crate::v1::AgentFileV1) -> Result<Resolved<'_>, AgentFileError> {
    let blocks = f
        .core_memory
        .iter()
        .enumerate()
        .map(|(i, b)| BlockIn {
            path: format!("core_memory[{i}]"),
            block: b,
            ext: None,
            created_at: b.extra.get("created_at").and_then(Value::as_str),
            updated_at: b.extra.get("updated_at").and_then(Value::as_str),
        })
        .collect();
    let mut seen = HashSet::new();
    for (k, &i) in f.in_context_message_indices.iter().enumerate() {
        let path = format!("in_context_message_indices[{k}]");
        if i >= f.messages.len() {
            return Err(AgentFileError::MissingRef {
                path,
                kind: "message",
                id: format!("#{i} (the file has {} messages)", f.messages.len()),
            });
        }
        if !seen.insert(i) {
            return Err(AgentFileError::Duplicate {
                path,
                id: i.to_string(),
            });
        }
    }
    let agent = AgentIn {
        path: String::new(),
        local_id: "agent-0".into(),
        format: "letta-v1",
        name: f.name.as_deref(),
        description: f.description.as_deref(),
        system: f.system.as_deref(),
        agent_type: Some(f.agent_type.as_deref().unwrap_or("memgpt_agent")),
        llm: f.llm_config.as_ref(),
        embedding: f.embedding_config.as_ref(),
        tags: &f.tags,
        tool_rules: &f.tool_rules,
        blocks: (0..f.core_memory.len()).collect(),
        tools: f.tools.iter().collect(),
        messages: &f.messages,
        in_context: f.in_context_message_indices.clone(),
        created_at: f.created_at.as_deref(),
        updated_at: f.updated_at.as_deref(),
        ext: None,
        extra: &f.extra,
    };
    Ok((blocks, vec![agent], Shared::default()))
}

fn unique<'a>(
    ids: impl Iterator<Item = (String, Option<&'a str>)>,
    what: &str,
) -> Result<HashMap<&'a str, usize>, AgentFileError> {
    let mut map = HashMap::new();
    for (i, (path, id)) in ids.enumerate() {
        let id =
            id.ok_or_else(|| AgentFileError::invalid(&path, format!("a {what} needs an id")))?;
        if map.insert(id, i).is_some() {
            return Err(AgentFileError::Duplicate {
                path: format!("{path}.id"),
                id: id.to_owned(),
            });
        }
    }
    Ok(map)
}

pub(super) fn resolve_v2(f: &crate::v2::AgentFileV2) -> Result<Resolved<'_>, AgentFileError> {
    let ext: Option<&Extension> = f.engram.as_ref();
    unique(
        f.agents
            .iter()
            .enumerate()
            .map(|(i, a)| (format!("agents[{i}]"), Some(a.id.as_str()))),
        "agent",
    )?;
    let block_index = unique(
        f.blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (format!("blocks[{i}]"), b.id.as_deref())),
        "block",
    )?;
    let tool_index = unique(
        f.tools
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("tools[{i}]"), t.id.as_deref())),
        "tool",
    )?;
    // Message ids are file-wide; messages without an id just cannot be referred to.
    let mut message_ids = HashSet::new();
    for (i, a) in f.agents.iter().enumerate() {
        for (j, m) in a.messages.iter().enumerate() {
            if let Some(id) = m.id.as_deref()
                && !message_ids.insert(id)
            {
                return Err(AgentFileError::Duplicate {
                    path: format!("agents[{i}].messages[{j}].id"),
                    id: id.to_owned(),
                });
            }
        }
    }
    if let Some(ext) = ext {
        for key in ext.agents.keys() {
            if !f.agents.iter().any(|a| &a.id == key) {
                return Err(AgentFileError::MissingRef {
                    path: format!("engram.agents.{key}"),
                    kind: "agent",
                    id: key.clone(),
                });
            }
        }
        for key in ext.blocks.keys() {
            if !block_index.contains_key(key.as_str()) {
                return Err(AgentFileError::MissingRef {
                    path: format!("engram.blocks.{key}"),
                    kind: "block",
                    id: key.clone(),
                });
            }
        }
    }

    let mut blocks: Vec<BlockIn<'_>> = f
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| BlockIn {
            path: format!("blocks[{i}]"),
            block: b,
            ext: b
                .id
                .as_deref()
                .and_then(|id| ext.and_then(|e| e.blocks.get(id))),
            created_at: b.extra.get("created_at").and_then(Value::as_str),
            updated_at: b.extra.get("updated_at").and_then(Value::as_str),
        })
        .collect();
    let mut agents = Vec::with_capacity(f.agents.len());
    for (i, a) in f.agents.iter().enumerate() {
        let path = format!("agents[{i}].");
        let mut own_blocks = Vec::new();
        for (k, id) in a.block_ids.iter().enumerate() {
            let at = format!("{path}block_ids[{k}]");
            let &idx = block_index
                .get(id.as_str())
                .ok_or_else(|| AgentFileError::MissingRef {
                    path: at.clone(),
                    kind: "block",
                    id: id.clone(),
                })?;
            if own_blocks.contains(&idx) {
                return Err(AgentFileError::Duplicate {
                    path: at,
                    id: id.clone(),
                });
            }
            own_blocks.push(idx);
        }
        for (k, b) in a.memory_blocks.iter().enumerate() {
            own_blocks.push(blocks.len());
            blocks.push(BlockIn {
                path: format!("{path}memory_blocks[{k}]"),
                block: b,
                ext: None,
                created_at: None,
                updated_at: None,
            });
        }
        let mut tools = Vec::new();
        for (k, id) in a.tool_ids.iter().enumerate() {
            let &idx = tool_index
                .get(id.as_str())
                .ok_or_else(|| AgentFileError::MissingRef {
                    path: format!("{path}tool_ids[{k}]"),
                    kind: "tool",
                    id: id.clone(),
                })?;
            tools.push(&f.tools[idx]);
        }
        let positions: HashMap<&str, usize> = a
            .messages
            .iter()
            .enumerate()
            .filter_map(|(j, m)| m.id.as_deref().map(|id| (id, j)))
            .collect();
        let mut in_context = Vec::with_capacity(a.in_context_message_ids.len());
        for (k, id) in a.in_context_message_ids.iter().enumerate() {
            let at = format!("{path}in_context_message_ids[{k}]");
            let &j = positions
                .get(id.as_str())
                .ok_or_else(|| AgentFileError::MissingRef {
                    path: at.clone(),
                    kind: "message",
                    id: id.clone(),
                })?;
            if in_context.contains(&j) {
                return Err(AgentFileError::Duplicate {
                    path: at,
                    id: id.clone(),
                });
            }
            in_context.push(j);
        }
        agents.push(AgentIn {
            path,
            local_id: a.id.clone(),
            format: if ext.is_some() { "engram" } else { "letta-v2" },
            name: a.name.as_deref(),
            description: a.description.as_deref(),
            system: a.system.as_deref(),
            agent_type: a.agent_type.as_deref(),
            llm: a.llm_config.as_ref(),
            embedding: a.embedding_config.as_ref(),
            tags: &a.tags,
            tool_rules: &a.tool_rules,
            blocks: own_blocks,
            tools,
            messages: &a.messages,
            in_context,
            created_at: a.extra.get("created_at").and_then(Value::as_str),
            updated_at: a.extra.get("updated_at").and_then(Value::as_str),
            ext: ext.and_then(|e| e.agents.get(&a.id)),
            extra: &a.extra,
        });
    }
    let shared = Shared {
        groups: &f.groups,
        skills: &f.skills,
        files: &f.files,
        sources: &f.sources,
        mcp_servers: &f.mcp_servers,
    };
    Ok((blocks, agents, shared))
}
