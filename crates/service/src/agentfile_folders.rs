//! Folders in Agent Files: an export writes the agents' attached folders as Letta's
//! `sources`, their documents as `files` (with their text as `content`) and each agent's state
//! of them as its `files_agents` and `source_ids`; Engram's extension adds how each document
//! was cut into passages, the folder's embedding model and each window's lines, so an import
//! of Engram's own file reads nothing again. An import makes the folders, their files (a Letta
//! file's `content` is read as Markdown), attaches them and restores which files are open.

use crate::folder_ingest::stored_chunk;
use crate::{Engram, check_file_name};
use engram_agentfile::extension::{ChunkExt, FileExt, FileWindowExt, SourceExt};
use engram_agentfile::model::EmbeddingConfigAf;
use engram_agentfile::v2::AgentFileV2;
use engram_core::{
    AgentFile, AgentId, EmbeddingConfig, FileChunk, FileId, FileStatus, FolderId, NewFolder,
    Provenance, Result,
};
use engram_store::{FileUpload, NewChunk, ParsedFile, Upserted};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Agent fields and extras keys that describe folders: live now, so not kept as extras.
const FOLDER_FIELDS: [&str; 3] = ["source_ids", "folder_ids", "files_agents"];

fn show(t: engram_core::Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A document's SHA-256: Engram's, else that of its text (Letta keeps no hash).
fn file_sha(f: &Value, ext: Option<&FileExt>) -> String {
    ext.map(|x| x.sha256.clone())
        .filter(|s| !s.is_empty())
        .or_else(|| {
            f["content"].as_str().map(|c| {
                Sha256::digest(c.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect()
            })
        })
        .unwrap_or_default()
}

fn parse_time(v: &Value) -> Option<engram_core::Timestamp> {
    v.as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&chrono::Utc))
}

impl Engram {
    /// Adds the folders attached to `agents` (in file order: `agent-<i>`) to `file`.
    /// Errors: storage.
    pub(crate) fn export_folders(&self, agents: &[AgentId], file: &mut AgentFileV2) -> Result<()> {
        let mut source_ids: HashMap<FolderId, String> = HashMap::new();
        let mut file_ids: HashMap<FileId, (String, String)> = HashMap::new();
        let ext = file.engram.get_or_insert_with(Default::default);
        for (i, agent) in agents.iter().enumerate() {
            let folders = self.store.folders().of_agent(agent)?;
            let mut own_sources = Vec::new();
            for folder in &folders {
                if let Some(id) = source_ids.get(&folder.id) {
                    own_sources.push(json!(id));
                    continue;
                }
                let sid = format!("source-{}", source_ids.len());
                let embedding_config = folder.embedding.as_ref().map(|e| {
                    let (provider, model) = engram_core::agent::split_handle(&e.model);
                    EmbeddingConfigAf {
                        embedding_endpoint_type: Some(provider.to_owned()),
                        embedding_model: Some(model.to_owned()),
                        handle: Some(e.model.clone()),
                        ..EmbeddingConfigAf::default()
                    }
                });
                file.sources.push(json!({
                    "id": sid,
                    "name": folder.name,
                    "description": folder.description,
                    "instructions": folder.instructions,
                    "metadata": null,
                    "embedding_config": embedding_config,
                }));
                ext.sources.insert(
                    sid.clone(),
                    SourceExt {
                        embedding: folder.embedding.clone(),
                    },
                );
                let mut chunks: HashMap<FileId, Vec<FileChunk>> = HashMap::new();
                for (_, c) in self
                    .store
                    .folders()
                    .list_chunks(&folder.id, usize::MAX, 0)?
                {
                    chunks.entry(c.file_id.clone()).or_default().push(c);
                }
                for f in self.store.folders().list_files(&folder.id)? {
                    let fid = format!("file-{}", file_ids.len());
                    let (text, page_starts) =
                        self.store.folders().file_text(&f.id)?.unwrap_or_default();
                    let content = (f.status != FileStatus::Error).then_some(text);
                    file.files.push(json!({
                        "id": fid,
                        "source_id": sid,
                        // Letta names a document by its folder too (`folder/file`).
                        "file_name": engram_store::qualified_name(&folder.name, &f.name),
                        "original_file_name": f.name,
                        "file_path": null,
                        "file_type": f.mime,
                        "file_size": f.size,
                        "file_creation_date": null,
                        "file_last_modified_date": null,
                        "processing_status": f.status.as_str(),
                        "error_message": f.error,
                        "total_chunks": f.chunks,
                        "chunks_embedded": null,
                        "content": content,
                    }));
                    ext.files.insert(
                        fid.clone(),
                        FileExt {
                            sha256: f.sha256.clone(),
                            page_starts,
                            chunks: chunks
                                .remove(&f.id)
                                .unwrap_or_default()
                                .into_iter()
                                .map(|c| ChunkExt {
                                    text: c.text,
                                    page: c.provenance.page,
                                    heading: c.provenance.heading,
                                    line_start: c.provenance.line_start,
                                    line_end: c.provenance.line_end,
                                })
                                .collect(),
                        },
                    );
                    file_ids.insert(f.id.clone(), (fid, sid.clone()));
                }
                own_sources.push(json!(sid));
                source_ids.insert(folder.id.clone(), sid);
            }
            let mut links = Vec::new();
            for state in self.store.folders().files_of_agent(agent)? {
                let Some((fid, sid)) = file_ids.get(&state.file_id) else {
                    continue;
                };
                // A file never opened nor searched has no state to carry.
                if state.last_accessed_at.is_none() && !state.is_open {
                    continue;
                }
                let lid = format!("file_agent-{}", ext.file_windows.len());
                let visible = if state.is_open {
                    self.store
                        .folders()
                        .read_window(
                            &state.file_id,
                            state.file_name.clone(),
                            state.offset,
                            state.length,
                        )?
                        .map(|w| w.text)
                } else {
                    None
                };
                links.push(json!({
                    "id": lid,
                    "agent_id": format!("agent-{i}"),
                    "file_id": fid,
                    "source_id": sid,
                    "file_name": state.file_name,
                    "is_open": state.is_open,
                    "visible_content": visible,
                    "last_accessed_at": state.last_accessed_at.map(show),
                    "start_line": state.offset,
                    "end_line": state.offset + state.length.max(1) - 1,
                }));
                ext.file_windows.insert(
                    lid,
                    FileWindowExt {
                        offset: state.offset,
                        length: state.length,
                    },
                );
            }
            if let Some(a) = file.agents.get_mut(i)
                && !folders.is_empty()
            {
                a.extra
                    .insert("source_ids".into(), Value::Array(own_sources));
                a.extra.insert("files_agents".into(), Value::Array(links));
            }
        }
        Ok(())
    }

    /// Makes the folders of a v2 file, with their files, attaches them to the imported agents
    /// (`agents[i]` is the file's `agents[i]`) and restores which files each agent has open.
    /// Returns what a person should know (a renamed folder, a file that could not be kept).
    /// Errors: storage.
    pub(crate) fn import_folders(
        &self,
        file: &AgentFileV2,
        agents: &[AgentId],
    ) -> Result<Vec<String>> {
        let mut warnings = Vec::new();
        if file.sources.is_empty() {
            return Ok(warnings);
        }
        let ext = file.engram.as_ref();
        let mut folders: HashMap<&str, FolderId> = HashMap::new();
        let mut files: HashMap<&str, FileId> = HashMap::new();
        for source in &file.sources {
            let Some(sid) = source["id"].as_str() else {
                continue;
            };
            let wanted = source["name"].as_str().unwrap_or(sid).trim();
            // Letta's `file_name` is `folder/file`; the name inside the folder is the rest.
            let folder_prefix = format!("{wanted}/");
            let mut docs = Vec::new();
            for f in file.files.iter().filter(|f| f["source_id"] == source["id"]) {
                let Some(fid) = f["id"].as_str() else {
                    continue;
                };
                let raw = f["file_name"]
                    .as_str()
                    .map(|n| n.strip_prefix(&folder_prefix).unwrap_or(n))
                    .or(f["original_file_name"].as_str())
                    .unwrap_or(fid);
                match check_file_name(raw) {
                    Ok(name) => {
                        let fx = ext.and_then(|x| x.files.get(fid));
                        docs.push((fid, name, file_sha(f, fx), f, fx));
                    }
                    Err(e) => warnings.push(format!("file '{raw}' of the file was not kept: {e}")),
                }
            }
            // The same folder imported again (the same names and bytes) is shared, not copied.
            if let Some(existing) = self.store.folders().by_name(wanted)? {
                let mut have: Vec<(String, String, FileId)> = self
                    .store
                    .folders()
                    .list_files(&existing.id)?
                    .into_iter()
                    .map(|f| (f.name, f.sha256, f.id))
                    .collect();
                have.sort();
                let mut want: Vec<(&str, &str)> =
                    docs.iter().map(|d| (d.1.as_str(), d.2.as_str())).collect();
                want.sort();
                let same = have.len() == want.len()
                    && have
                        .iter()
                        .zip(&want)
                        .all(|(h, w)| h.0 == w.0 && h.1 == w.1);
                if same {
                    for (fid, name, ..) in &docs {
                        if let Some(h) = have.iter().find(|h| &h.0 == name) {
                            files.insert(fid, h.2.clone());
                        }
                    }
                    folders.insert(sid, existing.id);
                    continue;
                }
            }
            let mut name = wanted.to_owned();
            let mut n = 2;
            while self.store.folders().by_name(&name)?.is_some() {
                name = format!("{wanted} ({n})");
                n += 1;
            }
            if name != wanted {
                warnings.push(format!(
                    "folder '{wanted}' of the file was stored as '{name}': you already have a different one of that name"
                ));
            }
            // Engram's own file names the model (or none); a Letta file's folder gets the
            // default model, as a new folder does.
            let embedding = ext.and_then(|x| x.sources.get(sid)).map(|s| {
                s.embedding.clone().unwrap_or(EmbeddingConfig {
                    model: "none".into(),
                    base_url: None,
                })
            });
            let folder = self.folders().create(NewFolder {
                name,
                description: source["description"].as_str().unwrap_or("").to_owned(),
                instructions: source["instructions"].as_str().unwrap_or("").to_owned(),
                embedding,
            })?;
            for (fid, name, sha, f, fx) in docs {
                let id = self.import_file(&folder.id, &name, sha, f, fx)?;
                files.insert(fid, id);
            }
            folders.insert(sid, folder.id);
        }
        for (i, a) in file.agents.iter().enumerate() {
            let Some(agent) = agents.get(i) else { break };
            for key in ["source_ids", "folder_ids"] {
                for sid in a
                    .extra
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(folder) = sid.as_str().and_then(|s| folders.get(s)) {
                        self.store.folders().attach(agent, folder)?;
                    }
                }
            }
            let links = a.extra.get("files_agents").and_then(Value::as_array);
            for link in links.into_iter().flatten() {
                let Some(file_id) = link["file_id"].as_str().and_then(|f| files.get(f)) else {
                    continue;
                };
                let window = link["id"]
                    .as_str()
                    .and_then(|l| ext.and_then(|x| x.file_windows.get(l)));
                // Without Engram's window, Letta's newer files give the lines shown.
                let lines = match (link["start_line"].as_u64(), link["end_line"].as_u64()) {
                    (Some(a), Some(b)) if a >= 1 && b >= a => Some((a as u32, (b - a + 1) as u32)),
                    _ => None,
                };
                let state = AgentFile {
                    file_id: file_id.clone(),
                    file_name: String::new(),
                    folder_id: FolderId::from(""),
                    is_open: link["is_open"].as_bool().unwrap_or(false),
                    offset: window.map_or(lines.map_or(1, |l| l.0), |w| w.offset),
                    length: window.map_or(
                        lines.map_or(engram_agent::tools::DEFAULT_WINDOW_LINES, |l| l.1),
                        |w| w.length,
                    ),
                    last_accessed_at: parse_time(&link["last_accessed_at"]),
                };
                if let Err(e) = self
                    .store
                    .folders()
                    .restore_file_state(agent, file_id, &state)
                {
                    warnings.push(format!("a file's open state was not kept: {e}"));
                }
            }
            self.drop_folder_extras(agent)?;
        }
        self.spawn_folder_refill();
        Ok(warnings)
    }

    /// Stores one document of an agent file: Engram's passages as they were, or a Letta
    /// file's `content` read as Markdown; one without text is kept as failed.
    fn import_file(
        &self,
        folder: &FolderId,
        name: &str,
        sha256: String,
        f: &Value,
        ext: Option<&FileExt>,
    ) -> Result<FileId> {
        let content = f["content"].as_str();
        let upload = FileUpload {
            name: name.to_owned(),
            mime: f["file_type"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| engram_documents::Kind::detect(name, &[]).mime().to_owned()),
            size: f["file_size"].as_u64().unwrap_or(0),
            sha256,
        };
        let row = match self.store.folders().upsert_file(folder, &upload)? {
            Upserted::Changed(r) | Upserted::Unchanged(r) => r,
        };
        let failed = f["processing_status"].as_str() == Some("error");
        let parsed = match (content, ext) {
            _ if failed => None,
            (Some(text), Some(x)) => Some(ParsedFile {
                text: text.to_owned(),
                page_starts: x.page_starts.clone(),
                lines: text.lines().count() as u32,
                chunks: x
                    .chunks
                    .iter()
                    .map(|c| NewChunk {
                        text: c.text.clone(),
                        provenance: Provenance {
                            page: c.page,
                            heading: c.heading.clone(),
                            line_start: c.line_start,
                            line_end: c.line_end,
                        },
                    })
                    .collect(),
            }),
            (Some(text), None) => {
                // Letta keeps a document's text as Markdown.
                match engram_documents::parse("content.md", text.as_bytes()) {
                    // The text stays as Letta kept it; the reader gives the passages.
                    Ok(doc) => Some(ParsedFile {
                        text: text.to_owned(),
                        page_starts: doc.page_starts,
                        lines: doc.lines,
                        chunks: doc.chunks.into_iter().map(stored_chunk).collect(),
                    }),
                    Err(e) => {
                        self.store.folders().fail_file(&row.id, &e.to_string())?;
                        return Ok(row.id);
                    }
                }
            }
            (None, _) => None,
        };
        match parsed {
            Some(p) => {
                self.store
                    .folders()
                    .store_parsed_file(&row.id, &p, FileStatus::Completed)?;
            }
            None => {
                let why = f["error_message"]
                    .as_str()
                    .unwrap_or("the agent file carries no text for it");
                self.store.folders().fail_file(&row.id, why)?;
            }
        }
        Ok(row.id)
    }

    /// Removes what the import kept of the file's folders among the agent's extras: they
    /// are live folders now, and an export writes them from there.
    fn drop_folder_extras(&self, agent: &AgentId) -> Result<()> {
        let Some(mut extras) = self.store.agent_file_extras(agent)? else {
            return Ok(());
        };
        let Some(obj) = extras.as_object_mut() else {
            return Ok(());
        };
        obj.remove("sources");
        obj.remove("files");
        if let Some(fields) = obj.get_mut("agent_fields").and_then(Value::as_object_mut) {
            // An empty list names no folder: kept as read, so the agent is written back alike.
            fields.retain(|key, v| {
                !FOLDER_FIELDS.contains(&key.as_str()) || v.as_array().is_some_and(|a| a.is_empty())
            });
        }
        self.store.settings().set(
            &format!("{}{agent}", engram_store::EXTRAS_SETTING_PREFIX),
            &extras.to_string(),
        )
    }
}
