//! Writing back what an import kept of Letta's newer sections (see `import::sections`):
//! skills, sources, files and MCP servers go to the file's top-level lists, the agent's own
//! kept fields (`compaction_settings`, `enable_sleeptime`, `source_ids`, `files_agents`, …) onto
//! the agent. An object several agents share is written once; file-local ids stay as they were
//! read unless two different objects would share one, and references follow a renamed id.

use crate::v2::AgentFileV2;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Objects written to one top-level list, with their file-local ids.
struct Pool {
    prefix: &'static str,
    items: Vec<Value>,
}

impl Pool {
    fn new(prefix: &'static str) -> Self {
        Self {
            prefix,
            items: Vec::new(),
        }
    }

    fn id_of(v: &Value) -> Option<&str> {
        v.get("id").and_then(Value::as_str)
    }

    /// Adds `obj` (or finds it already written) and returns its id in the file.
    fn add(&mut self, mut obj: Value) -> Option<String> {
        if let Some(found) = self.items.iter().find(|v| **v == obj) {
            return Self::id_of(found).map(str::to_owned);
        }
        let taken = |id: &str| self.items.iter().any(|v| Self::id_of(v) == Some(id));
        let id = match Self::id_of(&obj) {
            Some(id) if !taken(id) => id.to_owned(),
            _ => {
                let n = (self.items.len()..)
                    .find(|n| !taken(&format!("{}-{n}", self.prefix)))
                    .unwrap_or(self.items.len());
                let id = format!("{}-{n}", self.prefix);
                if let Some(o) = obj.as_object_mut() {
                    o.insert("id".into(), Value::String(id.clone()));
                }
                id
            }
        };
        self.items.push(obj);
        Some(id)
    }
}

/// Top-level lists being written, shared by every agent of the file.
pub(crate) struct Sections {
    skills: Vec<Value>,
    sources: Pool,
    files: Pool,
    servers: Pool,
    links: Pool,
}

fn list<'a>(extras: Option<&'a Value>, key: &str) -> &'a [Value] {
    extras
        .and_then(|x| x.get(key))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn renamed(map: &HashMap<String, String>, v: &Value) -> Value {
    match v.as_str().and_then(|s| map.get(s)) {
        Some(new) => Value::String(new.clone()),
        None => v.clone(),
    }
}

impl Sections {
    pub(crate) fn new() -> Self {
        Self {
            skills: Vec::new(),
            sources: Pool::new("source"),
            files: Pool::new("file"),
            servers: Pool::new("mcp_server"),
            links: Pool::new("file_agent"),
        }
    }

    /// Adds one agent's kept sections (`extras` as the import stored them) and sets its kept
    /// fields on `agent_extra`; `local` is the agent's id in this file.
    pub(crate) fn add_agent(
        &mut self,
        extras: Option<&Value>,
        local: &str,
        agent_extra: &mut Map<String, Value>,
    ) {
        for s in list(extras, "skills") {
            if !self.skills.contains(s) {
                self.skills.push(s.clone());
            }
        }
        for m in list(extras, "mcp_servers") {
            self.servers.add(m.clone());
        }
        let mut source_ids = HashMap::new();
        for s in list(extras, "sources") {
            if let (Some(old), Some(new)) = (Pool::id_of(s), self.sources.add(s.clone())) {
                source_ids.insert(old.to_owned(), new);
            }
        }
        let mut file_ids = HashMap::new();
        for f in list(extras, "files") {
            let mut f = f.clone();
            if let Some(src) = f.get("source_id").map(|v| renamed(&source_ids, v)) {
                f["source_id"] = src;
            }
            let old = Pool::id_of(&f).map(str::to_owned);
            if let (Some(old), Some(new)) = (old, self.files.add(f)) {
                file_ids.insert(old, new);
            }
        }
        let Some(Value::Object(fields)) = extras.and_then(|x| x.get("agent_fields")) else {
            return;
        };
        for (key, value) in fields {
            let value = match key.as_str() {
                "source_ids" | "folder_ids" => Value::Array(
                    value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|v| renamed(&source_ids, v))
                        .collect(),
                ),
                "files_agents" => {
                    let mut links = Vec::new();
                    for link in value.as_array().into_iter().flatten() {
                        let mut link = link.clone();
                        if let Some(o) = link.as_object_mut() {
                            if let Some(v) = o.get("file_id").map(|v| renamed(&file_ids, v)) {
                                o.insert("file_id".into(), v);
                            }
                            if let Some(v) = o.get("source_id").map(|v| renamed(&source_ids, v)) {
                                o.insert("source_id".into(), v);
                            }
                            o.insert("agent_id".into(), Value::String(local.to_owned()));
                        }
                        // Link ids are file-wide too; `add` renames a clashing one.
                        if let Some(id) = self.links.add(link.clone())
                            && let Some(o) = link.as_object_mut()
                        {
                            o.insert("id".into(), Value::String(id));
                        }
                        links.push(link);
                    }
                    Value::Array(links)
                }
                _ => value.clone(),
            };
            agent_extra.insert(key.clone(), value);
        }
    }

    /// Adds an MCP server object (once, however many tools name it) and returns its id in
    /// the file.
    pub(crate) fn add_mcp_server(&mut self, server: Value) -> Option<String> {
        self.servers.add(server)
    }

    /// Writes the top-level lists into `file`.
    pub(crate) fn finish(self, file: &mut AgentFileV2) {
        file.skills = self.skills;
        file.sources = self.sources.items;
        file.files = self.files.items;
        file.mcp_servers = self.servers.items;
    }
}
