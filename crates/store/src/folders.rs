//! Folders of documents and their attachment to agents. Attaching a folder gives the agent the
//! file tools ([`FILE_TOOLS`]) in the same transaction; detaching the last folder takes them
//! away and closes the agent's files of that folder.

use crate::agents;
use crate::rooms::FolderRows;
use crate::sql::{self, DbResult, json_opt, to_json, ts};
use engram_core::{AgentId, Error, Folder, FolderId, NewFolder, Result};
use rusqlite::{Connection, OptionalExtension, Row, params};

/// The tools an agent gets while at least one folder is attached (Letta's names).
pub const FILE_TOOLS: [&str; 3] = ["open_files", "grep_files", "semantic_search_files"];

const FOLDER_COLS: &str = "id, name, description, instructions, embedding, created_at, updated_at";

fn folder_from_row(r: &Row<'_>) -> rusqlite::Result<Folder> {
    Ok(Folder {
        id: FolderId::from(r.get::<_, String>(0)?),
        name: r.get(1)?,
        description: r.get(2)?,
        instructions: r.get(3)?,
        embedding: json_opt(r, 4)?,
        created_at: ts(r, 5)?,
        updated_at: ts(r, 6)?,
    })
}

pub(crate) fn load(c: &Connection, id: &FolderId) -> Result<Folder> {
    c.prepare_cached(&format!("SELECT {FOLDER_COLS} FROM folders WHERE id = ?1"))
        .db()?
        .query_row([id.as_str()], folder_from_row)
        .optional()
        .db()?
        .ok_or_else(|| Error::not_found("folder", id.as_str()))
}

fn check_name(name: &str) -> Result<&str> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::invalid("a folder needs a name"));
    }
    Ok(name)
}

/// What a folder update changes (`None`: leave as it is).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FolderPatch {
    /// A new name (unique among folders).
    pub name: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// New instructions for its agents.
    pub instructions: Option<String>,
}

impl FolderRows<'_> {
    /// Creates a folder. Errors: `Invalid` for an empty name; `Conflict` if a folder of that
    /// name exists.
    pub fn create(self, new: &NewFolder) -> Result<Folder> {
        let name = check_name(&new.name)?.to_owned();
        let now = sql::now();
        let folder = Folder {
            id: FolderId::new(),
            name,
            description: new.description.clone(),
            instructions: new.instructions.clone(),
            embedding: new.embedding.clone(),
            created_at: now,
            updated_at: now,
        };
        let embedding = folder.embedding.as_ref().map(to_json).transpose()?;
        self.store.write(|tx| {
            let taken = tx
                .prepare_cached("SELECT 1 FROM folders WHERE name = ?1")
                .db()?
                .exists([&folder.name])
                .db()?;
            if taken {
                return Err(Error::Conflict(format!(
                    "a folder named '{}' already exists",
                    folder.name
                )));
            }
            tx.prepare_cached(&format!(
                "INSERT INTO folders ({FOLDER_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)"
            ))
            .db()?
            .execute(params![
                folder.id.as_str(),
                folder.name,
                folder.description,
                folder.instructions,
                embedding,
                sql::micros(now)
            ])
            .db()?;
            Ok(())
        })?;
        Ok(folder)
    }

    /// The folder `id`. Errors: `NotFound("folder")`.
    pub fn get(self, id: &FolderId) -> Result<Folder> {
        self.store.read(|c| load(c, id))
    }

    /// The folder named `name`, if any.
    pub fn by_name(self, name: &str) -> Result<Option<Folder>> {
        self.store.read(|c| {
            c.prepare_cached(&format!(
                "SELECT {FOLDER_COLS} FROM folders WHERE name = ?1"
            ))
            .db()?
            .query_row([name.trim()], folder_from_row)
            .optional()
            .db()
        })
    }

    /// Every folder, oldest first.
    pub fn list(self) -> Result<Vec<Folder>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {FOLDER_COLS} FROM folders ORDER BY created_at, id"
                ))
                .db()?;
            let rows = stmt.query_map([], folder_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Changes a folder's name, description or instructions. Errors: `NotFound("folder")`;
    /// `Invalid` for an empty name; `Conflict` for a name another folder has.
    pub fn update(self, id: &FolderId, patch: &FolderPatch) -> Result<Folder> {
        let name = patch.name.as_deref().map(check_name).transpose()?;
        self.store.write(|tx| {
            let mut folder = load(tx, id)?;
            if let Some(name) = name {
                folder.name = name.to_owned();
            }
            if let Some(d) = &patch.description {
                folder.description = d.clone();
            }
            if let Some(i) = &patch.instructions {
                folder.instructions = i.clone();
            }
            folder.updated_at = sql::now();
            tx.prepare_cached(
                "UPDATE folders SET name = ?2, description = ?3, instructions = ?4,
                        updated_at = ?5 WHERE id = ?1",
            )
            .db()?
            .execute(params![
                id.as_str(),
                folder.name,
                folder.description,
                folder.instructions,
                sql::micros(folder.updated_at)
            ])
            .map_err(|e| match sql::db_error(e) {
                Error::Conflict(_) => {
                    Error::Conflict(format!("a folder named '{}' already exists", folder.name))
                }
                other => other,
            })?;
            Ok(folder)
        })
    }

    /// Deletes a folder with its files and passages, detaching it from every agent (agents
    /// left without folders lose the file tools). One transaction. Errors: `NotFound("folder")`.
    pub fn delete(self, id: &FolderId) -> Result<()> {
        self.store.write(|tx| {
            load(tx, id)?;
            for agent in attached_agents(tx, id)? {
                detach(tx, &agent, id)?;
            }
            tx.prepare_cached("DELETE FROM folders WHERE id = ?1")
                .db()?
                .execute([id.as_str()])
                .db()?;
            Ok(())
        })
    }

    /// Attaches a folder to an agent and gives the agent the file tools, in one transaction.
    /// Attaching twice changes nothing. Errors: `NotFound("agent" | "folder")`.
    pub fn attach(self, agent: &AgentId, folder: &FolderId) -> Result<()> {
        self.store.write(|tx| {
            let mut a = agents::load(tx, agent)?;
            load(tx, folder)?;
            tx.prepare_cached(
                "INSERT OR IGNORE INTO agent_folders (agent_id, folder_id, attached_at)
                 VALUES (?1, ?2, ?3)",
            )
            .db()?
            .execute(params![
                agent.as_str(),
                folder.as_str(),
                sql::micros(sql::now())
            ])
            .db()?;
            let before = a.tools.len();
            for t in FILE_TOOLS {
                if !a.tools.iter().any(|x| x == t) {
                    a.tools.push(t.to_owned());
                }
            }
            if a.tools.len() != before {
                agents::save(tx, &a, true)?;
            }
            Ok(())
        })
    }

    /// Detaches a folder from an agent: its files close for the agent, and an agent left with
    /// no folder loses the file tools. One transaction. Detaching a folder that is not attached
    /// changes nothing. Errors: `NotFound("agent" | "folder")`.
    pub fn detach(self, agent: &AgentId, folder: &FolderId) -> Result<()> {
        self.store.write(|tx| {
            agents::load(tx, agent)?;
            load(tx, folder)?;
            detach(tx, agent, folder)
        })
    }

    /// The folders attached to an agent, in attach order. Errors: `NotFound("agent")`.
    pub fn of_agent(self, agent: &AgentId) -> Result<Vec<Folder>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let cols = FOLDER_COLS
                .split(", ")
                .map(|col| format!("f.{col}"))
                .collect::<Vec<_>>()
                .join(", ");
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {cols} FROM agent_folders a JOIN folders f ON f.id = a.folder_id
                     WHERE a.agent_id = ?1 ORDER BY a.attached_at, f.id"
                ))
                .db()?;
            let rows = stmt.query_map([agent.as_str()], folder_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// The agents a folder is attached to. Errors: `NotFound("folder")`.
    pub fn agents_of(self, folder: &FolderId) -> Result<Vec<AgentId>> {
        self.store.read(|c| {
            load(c, folder)?;
            attached_agents(c, folder)
        })
    }
}

fn attached_agents(c: &Connection, folder: &FolderId) -> Result<Vec<AgentId>> {
    let mut stmt = c
        .prepare_cached(
            "SELECT agent_id FROM agent_folders WHERE folder_id = ?1 ORDER BY attached_at, agent_id",
        )
        .db()?;
    let rows = stmt
        .query_map([folder.as_str()], |r| {
            Ok(AgentId::from(r.get::<_, String>(0)?))
        })
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// Removes the attachment, the agent's state of the folder's files, and (when no folder is
/// left) the file tools.
fn detach(tx: &Connection, agent: &AgentId, folder: &FolderId) -> Result<()> {
    let removed = tx
        .prepare_cached("DELETE FROM agent_folders WHERE agent_id = ?1 AND folder_id = ?2")
        .db()?
        .execute(params![agent.as_str(), folder.as_str()])
        .db()?;
    if removed == 0 {
        return Ok(());
    }
    tx.prepare_cached(
        "DELETE FROM agent_files WHERE agent_id = ?1
           AND file_id IN (SELECT id FROM folder_files WHERE folder_id = ?2)",
    )
    .db()?
    .execute(params![agent.as_str(), folder.as_str()])
    .db()?;
    let others = tx
        .prepare_cached("SELECT 1 FROM agent_folders WHERE agent_id = ?1")
        .db()?
        .exists([agent.as_str()])
        .db()?;
    // The compiled context shows open files: it must be rebuilt either way.
    let mut a = agents::load(tx, agent)?;
    if !others {
        a.tools.retain(|t| !FILE_TOOLS.contains(&t.as_str()));
    }
    agents::save(tx, &a, true)
}
