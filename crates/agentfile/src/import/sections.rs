//! The newer parts of Letta's agent files: skills, documents (`files`, `sources` and the
//! agents' `files_agents`), MCP servers, `compaction_settings`, `enable_sleeptime`, and tools
//! of types Engram does not run (`letta_files_core`, `letta_sleeptime_core`, `external_mcp`…).
//!
//! Engram runs none of these, so each is kept verbatim in the agent's file extras (export
//! writes it back, see `crate::export`) and listed as [`Inactive`] so the user is told, per
//! agent, what came in but does not act. Extras keys: `skills`, `sources`, `files`,
//! `mcp_servers` (arrays of the file's objects, ids as in the file) and `agent_fields` (the
//! agent's own fields named in [`KEPT_AGENT_FIELDS`]).

use super::{parts::AgentIn, parts::Shared};
use crate::errors::AgentFileError;
use engram_core::AgentId;
use engram_store_api::ImportAgent;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Agent fields of Letta's schema that Engram does not use but keeps for export, verbatim.
/// Secrets and tool environment variables are deliberately not among them.
pub const KEPT_AGENT_FIELDS: &[&str] = &[
    "compaction_settings",
    "enable_sleeptime",
    "source_ids",
    "folder_ids",
    "files_agents",
    "max_files_open",
    "per_file_view_window_char_limit",
    "model_settings",
    "response_format",
    "timezone",
];

/// What kind of part of an agent file is kept but not active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum InactiveKind {
    /// A tool Engram cannot run (a Letta server built-in, a file or sleep-time tool, an MCP
    /// tool, a custom tool without runnable source).
    Tool,
    /// A skill (`SKILL.md` and its files, or a `source_url`).
    Skill,
    /// A folder of documents (Letta's `sources`).
    Source,
    /// A document attached to the agent (Letta's `files`).
    File,
    /// An MCP server the agent's tools came from.
    McpServer,
    /// Letta's `compaction_settings` (summariser model, prompt, mode).
    CompactionSettings,
    /// Kept for files of earlier reports: `enable_sleeptime` is live now (the agent's
    /// sleep-time passes are switched on), so an import no longer reports it.
    Sleeptime,
}

/// One part of an agent file imported but not active.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct Inactive {
    /// The new agent it belongs to.
    pub agent: AgentId,
    /// That agent's name.
    pub agent_name: String,
    /// What it is.
    pub kind: InactiveKind,
    /// Its name in the file (tool, skill, file or server name; the field name for settings).
    pub name: String,
    /// Why it does not act, in a sentence.
    pub reason: String,
}

fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Which agent keeps which file-level object: sources by the agent's `source_ids` and
/// `folder_ids`, files by their source or the agent's `files_agents`, MCP servers by the
/// agent's tools; whatever no agent claims goes with the first agent, so nothing is lost.
pub(super) struct Owners {
    sources: Vec<Vec<usize>>,
    files: Vec<Vec<usize>>,
    servers: Vec<Vec<usize>>,
}

impl Owners {
    /// Errors: `MissingRef` for a source or file id an agent names that is not in the file.
    pub(super) fn of(agents: &[AgentIn<'_>], shared: &Shared<'_>) -> Result<Self, AgentFileError> {
        let index = |list: &[Value]| -> HashMap<String, usize> {
            list.iter()
                .enumerate()
                .filter_map(|(i, v)| str_field(v, "id").map(|id| (id.to_owned(), i)))
                .collect()
        };
        let source_index = index(shared.sources);
        let file_index = index(shared.files);
        let mut owners = Owners {
            sources: vec![Vec::new(); agents.len()],
            files: vec![Vec::new(); agents.len()],
            servers: vec![Vec::new(); agents.len()],
        };
        let mut claimed = (
            vec![false; shared.sources.len()],
            vec![false; shared.files.len()],
            vec![false; shared.mcp_servers.len()],
        );
        for (i, a) in agents.iter().enumerate() {
            for key in ["source_ids", "folder_ids"] {
                for (k, id) in strings(a.extra.get(key)).into_iter().enumerate() {
                    let &s = source_index
                        .get(id)
                        .ok_or_else(|| AgentFileError::MissingRef {
                            path: format!("{}{key}[{k}]", a.path),
                            kind: "source",
                            id: id.to_owned(),
                        })?;
                    if !owners.sources[i].contains(&s) {
                        owners.sources[i].push(s);
                        claimed.0[s] = true;
                    }
                }
            }
            let own_sources: Vec<&str> = owners.sources[i]
                .iter()
                .filter_map(|&s| str_field(&shared.sources[s], "id"))
                .collect();
            for (f, file) in shared.files.iter().enumerate() {
                if str_field(file, "source_id").is_some_and(|s| own_sources.contains(&s)) {
                    owners.files[i].push(f);
                    claimed.1[f] = true;
                }
            }
            let links = a.extra.get("files_agents").and_then(Value::as_array);
            for (k, link) in links.into_iter().flatten().enumerate() {
                let Some(id) = str_field(link, "file_id") else {
                    continue;
                };
                let &f = file_index
                    .get(id)
                    .ok_or_else(|| AgentFileError::MissingRef {
                        path: format!("{}files_agents[{k}].file_id", a.path),
                        kind: "file",
                        id: id.to_owned(),
                    })?;
                if !owners.files[i].contains(&f) {
                    owners.files[i].push(f);
                    claimed.1[f] = true;
                }
            }
            for (m, server) in shared.mcp_servers.iter().enumerate() {
                let used = a.tools.iter().any(|t| {
                    let mcp = t.extra.get("metadata_").and_then(|m| m.get("mcp"));
                    mcp.is_some_and(|mcp| {
                        let same = |k: &str, sk: &str| {
                            str_field(mcp, k).is_some_and(|v| Some(v) == str_field(server, sk))
                        };
                        same("server_name", "server_name") || same("server_id", "id")
                    })
                });
                if used {
                    owners.servers[i].push(m);
                    claimed.2[m] = true;
                }
            }
        }
        if !agents.is_empty() {
            let orphans = |c: &[bool]| -> Vec<usize> {
                c.iter()
                    .enumerate()
                    .filter(|(_, c)| !**c)
                    .map(|(i, _)| i)
                    .collect()
            };
            owners.sources[0].extend(orphans(&claimed.0));
            owners.files[0].extend(orphans(&claimed.1));
            owners.servers[0].extend(orphans(&claimed.2));
        }
        Ok(owners)
    }

    /// Puts agent `i`'s share of the newer sections into its extras.
    pub(super) fn keep(
        &self,
        i: usize,
        a: &AgentIn<'_>,
        shared: &Shared<'_>,
        extras: &mut Map<String, Value>,
    ) {
        let pick = |list: &[Value], which: &[usize]| -> Value {
            Value::Array(which.iter().map(|&k| list[k].clone()).collect())
        };
        for (key, value) in [
            ("skills", Value::Array(shared.skills.to_vec())),
            ("sources", pick(shared.sources, &self.sources[i])),
            ("files", pick(shared.files, &self.files[i])),
            ("mcp_servers", pick(shared.mcp_servers, &self.servers[i])),
        ] {
            if value.as_array().is_some_and(|a| !a.is_empty()) {
                extras.insert(key.into(), value);
            }
        }
        let fields: Map<String, Value> = KEPT_AGENT_FIELDS
            .iter()
            .filter_map(|&k| {
                a.extra
                    .get(k)
                    .filter(|v| !v.is_null())
                    .map(|v| (k.to_owned(), v.clone()))
            })
            .collect();
        if !fields.is_empty() {
            extras.insert("agent_fields".into(), Value::Object(fields));
        }
    }
}

fn tool_reason(t: &Value) -> String {
    match str_field(t, "tool_type").unwrap_or("custom") {
        "letta_files_core" => {
            "a document tool: Engram does not open attached documents in the context window".into()
        }
        "letta_sleeptime_core" | "letta_voice_sleeptime_core" => {
            "a sleep-time memory tool Engram does not have".into()
        }
        "external_mcp" => "an MCP tool: its server is stored inactive; accept the server in Settings → MCP servers (or `engram mcp accept`), list its tools and attach them".into(),
        "external_composio" | "external_langchain" => {
            "a tool from an external toolkit Engram does not run".into()
        }
        "custom" => "no runnable Python source (or it runs on Letta's client side); kept with its source and schema".into(),
        other => format!("a Letta server tool ({other}) that is not built into Engram"),
    }
}

/// What an imported agent keeps but does not run, read from its extras (so a file written by
/// Engram reports the same as the Letta file it came from).
pub(super) fn inactive(ia: &ImportAgent) -> Vec<Inactive> {
    let Some(extras) = ia.extras.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut add = |kind, name: &str, reason: String| {
        out.push(Inactive {
            agent: ia.agent.id.clone(),
            agent_name: ia.agent.name.clone(),
            kind,
            name: name.to_owned(),
            reason,
        });
    };
    let list = |key: &str| extras.get(key).and_then(Value::as_array).cloned();
    for t in list("tools").into_iter().flatten() {
        add(
            InactiveKind::Tool,
            str_field(&t, "name").unwrap_or("?"),
            tool_reason(&t),
        );
    }
    for s in list("skills").into_iter().flatten() {
        let name = str_field(&s, "name")
            .or_else(|| str_field(&s, "source_url"))
            .unwrap_or("?");
        add(
            InactiveKind::Skill,
            name,
            "Engram does not load skills; kept for export".into(),
        );
    }
    for s in list("sources").into_iter().flatten() {
        add(
            InactiveKind::Source,
            str_field(&s, "name").unwrap_or("?"),
            "a document folder: kept with the agent, not searchable by it".into(),
        );
    }
    for f in list("files").into_iter().flatten() {
        let name = str_field(&f, "file_name")
            .or_else(|| str_field(&f, "original_file_name"))
            .unwrap_or("?");
        add(
            InactiveKind::File,
            name,
            "a document: kept with the agent, not opened in its context window".into(),
        );
    }
    for m in list("mcp_servers").into_iter().flatten() {
        add(
            InactiveKind::McpServer,
            str_field(&m, "server_name").unwrap_or("?"),
            "stored inactive: never started until you accept it (Settings → MCP servers, or `engram mcp accept`)".into(),
        );
    }
    let fields = extras.get("agent_fields");
    if fields.and_then(|f| f.get("compaction_settings")).is_some() {
        add(
            InactiveKind::CompactionSettings,
            "compaction_settings",
            "Engram compacts with the agent's own model and its own thresholds; the settings are kept for export".into(),
        );
    }
    out
}
