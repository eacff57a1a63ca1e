//! Bulk import on SQLite: the [`ImportStore`](engram_store_api::ImportStore) contract (types
//! and checks in `engram-store-api`), written in one immediate transaction.

use crate::messages::{self, SEQ_GAP};
use crate::sql::{self, DbResult, to_json};
use crate::{Store, agents, blocks, passages, tools};
use engram_core::trust::ImportedToolStatus;
use engram_core::{AgentId, BlockEdit, BlockId, Error, PendingEndpoint, Result, Tool};
use engram_store_api::{
    EXTRAS_SETTING_PREFIX, ImportBundle, ImportMessage, ImportedIds, ImportedTool, added_status,
    check_bundle, is_same_tool, tool_candidate,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::{HashMap, HashSet};

/// Stores one tool of a bundle without touching a stored tool (see [`ImportBundle::tools`]).
/// A tool identical to a stored one (under its name, or under a name an earlier import of
/// the same file gave it) is that tool, so importing a file twice adds nothing — unless the
/// user granted the stored one the network or unsandboxed runs: a file never gets those, so
/// it gets a copy of its own instead.
fn place_tool(tx: &Connection, t: &Tool, bundle_names: &HashSet<&str>) -> Result<ImportedTool> {
    let mut n = 1;
    let (tool, status) = loop {
        let candidate = tool_candidate(t, n);
        let taken_in_bundle = n > 1 && bundle_names.contains(candidate.name.as_str());
        match tools::load_by(tx, "name", &candidate.name)? {
            Some(old) if is_same_tool(&old, &candidate) => {
                break (old, ImportedToolStatus::Existing);
            }
            None if !taken_in_bundle => {
                let mut fresh = candidate;
                fresh.id = engram_core::ToolId::new();
                break (tools::upsert(tx, &fresh)?, added_status(n));
            }
            _ => n += 1,
        }
    };
    Ok(ImportedTool {
        requested_name: t.name.clone(),
        tool,
        status,
    })
}

fn insert_pending(tx: &Connection, agent: &AgentId, e: &PendingEndpoint) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO pending_endpoints (agent_id, kind, base_url, source, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (agent_id, kind) DO UPDATE SET base_url = excluded.base_url,
             source = excluded.source, created_at = excluded.created_at",
    )
    .db()?
    .execute(params![
        agent.as_str(),
        e.kind.as_str(),
        e.base_url,
        e.source,
        sql::micros(e.created_at),
    ])
    .db()?;
    Ok(())
}

fn insert_edit(tx: &Connection, block: &BlockId, e: &BlockEdit) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO block_history (id, block_id, editor, old_value, new_value, created_at,
                                   old_version, new_version, step_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .db()?
    .execute(params![
        e.id.as_str(),
        block.as_str(),
        to_json(&e.editor)?,
        e.old_value,
        e.new_value,
        sql::micros(e.created_at),
        e.old_version
            .map(|v| sql::int(v, "old_version"))
            .transpose()?,
        e.new_version
            .map(|v| sql::int(v, "new_version"))
            .transpose()?,
        e.step_id.as_ref().map(|s| s.as_str()),
    ])
    .db()?;
    Ok(())
}

fn insert_messages(tx: &Connection, agent: &AgentId, msgs: &[ImportMessage]) -> Result<()> {
    let now = sql::now();
    let mut seq = 0i64;
    for im in msgs {
        seq = seq
            .checked_add(SEQ_GAP)
            .ok_or_else(|| Error::invalid("too many messages"))?;
        messages::insert_new(tx, agent, seq, &im.message, im.in_context, now)?;
    }
    Ok(())
}

impl Store {
    /// Writes `bundle` in one immediate transaction and returns the ids it created. Blocks are
    /// stored first (each once, however many agents attach it), with their history; then each
    /// agent with its block links (in the given order), messages (`seq` `SEQ_GAP` apart in the
    /// given order, `in_context` and times kept), passages and extras. Times are truncated to
    /// microseconds.
    ///
    /// Errors (nothing is written): `Invalid` for a bad label, a value over its limit or an
    /// empty passage; `NotFound("block")` when an agent attaches a block that is not in the
    /// bundle; `Conflict` when an agent has two blocks with one label or an id already exists.
    pub fn import_bundle(&self, bundle: &ImportBundle) -> Result<ImportedIds> {
        check_bundle(bundle)?;
        self.write(|tx| {
            let mut out = ImportedIds::default();
            let bundle_names: HashSet<&str> =
                bundle.tools.iter().map(|t| t.name.as_str()).collect();
            let mut renames = HashMap::new();
            for t in &bundle.tools {
                let placed = place_tool(tx, t, &bundle_names)?;
                if placed.tool.name != t.name {
                    renames.insert(t.name.clone(), placed.tool.name.clone());
                }
                out.tools.push(placed);
            }
            for ib in &bundle.blocks {
                let mut b = ib.block.clone();
                b.created_at = sql::truncate(b.created_at);
                b.updated_at = sql::truncate(b.updated_at);
                blocks::insert(tx, &b).map_err(|e| match e {
                    Error::Conflict(_) => Error::Conflict(format!("block {} already exists", b.id)),
                    e => e,
                })?;
                for e in &ib.history {
                    insert_edit(tx, &b.id, e)?;
                }
                out.blocks.push(b.id);
            }
            for ia in &bundle.agents {
                let mut a = ia.agent.clone();
                a.created_at = sql::truncate(a.created_at);
                a.updated_at = sql::truncate(a.updated_at);
                // One pass per name: renames may chain (x→x_2 while the file's x_2 became x_2_2).
                for n in &mut a.tools {
                    if let Some(new) = renames.get(n.as_str()) {
                        n.clone_from(new);
                    }
                }
                for r in &mut a.tool_rules {
                    r.rename_tools(|n| renames.get(n).cloned());
                }
                agents::insert_row(tx, &a)?;
                for e in &ia.pending_endpoints {
                    insert_pending(tx, &a.id, e)?;
                }
                for (pos, id) in ia.block_ids.iter().enumerate() {
                    blocks::link(tx, &a.id, id, sql::sat(pos))?;
                }
                insert_messages(tx, &a.id, &ia.messages)?;
                if let Some(summary) = a.summary.as_deref().filter(|s| !s.is_empty()) {
                    // Where the kept summary took over: after the last message out of context.
                    crate::message_pages::record_imported_compaction(tx, &a.id, summary)?;
                }
                let stored = if ia.passage_ids.is_empty() {
                    passages::insert(tx, &a.id, &ia.passages, None, sql::now())?
                } else {
                    let now = sql::now();
                    ia.passages
                        .iter()
                        .zip(&ia.passage_ids)
                        .map(|(np, id)| passages::insert_as(tx, &a.id, id.clone(), np, None, now))
                        .collect::<Result<Vec<_>>>()?
                };
                for h in &ia.superseded {
                    let id = |i: usize| {
                        stored.get(i).map(|p| p.id.as_str()).ok_or_else(|| {
                            Error::invalid(format!("superseded passage {i} is not in the import"))
                        })
                    };
                    tx.prepare_cached(
                        "UPDATE passages SET superseded_at = ?1, superseded_kind = ?2,
                                superseded_by = ?3 WHERE id = ?4",
                    )
                    .db()?
                    .execute(rusqlite::params![
                        sql::micros(h.at),
                        h.kind.as_str(),
                        h.by.map(id).transpose()?,
                        id(h.passage)?,
                    ])
                    .db()?;
                }
                if let Some(s) = &ia.sleeptime {
                    tx.prepare_cached(
                        "INSERT INTO sleeptime_settings (agent_id, settings) VALUES (?1, ?2)",
                    )
                    .db()?
                    .execute([a.id.as_str(), &to_json(s)?])
                    .db()?;
                }
                for s in &ia.steps {
                    let mut s = s.clone();
                    s.agent_id = a.id.clone();
                    s.started_at = sql::truncate(s.started_at);
                    crate::steps::insert_step(tx, &s).map_err(|e| match e {
                        Error::Conflict(_) => {
                            Error::Conflict(format!("step {} already exists", s.id))
                        }
                        e => e,
                    })?;
                }
                crate::rewrite::write_tags(tx, &a.id, &ia.tags)?;
                if let Some(extras) = &ia.extras {
                    tx.prepare_cached(
                        "INSERT INTO settings (key, value) VALUES (?1, ?2)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    )
                    .db()?
                    .execute([format!("{EXTRAS_SETTING_PREFIX}{}", a.id), to_json(extras)?])
                    .db()?;
                }
                out.agents.push(a.id);
            }
            Ok(out)
        })
    }

    /// The agent-file extras kept for `agent` by an import (see [`EXTRAS_SETTING_PREFIX`]), or
    /// `None`. Errors: `Storage` if the stored document is not JSON.
    pub fn agent_file_extras(&self, agent: &AgentId) -> Result<Option<serde_json::Value>> {
        let text: Option<String> = self.read(|c| {
            c.prepare_cached("SELECT value FROM settings WHERE key = ?1")
                .db()?
                .query_row([format!("{EXTRAS_SETTING_PREFIX}{agent}")], |r| r.get(0))
                .optional()
                .db()
        })?;
        text.map(|t| {
            serde_json::from_str(&t)
                .map_err(|e| Error::Storage(format!("agent file extras of {agent}: {e}")))
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::{
        Agent, Block, EditId, Editor, LlmConfig, NewMessage, NewPassage, Role, Step,
    };
    use engram_store_api::{ImportAgent, ImportBlock};

    fn block(label: &str, value: &str) -> Block {
        let now = chrono::Utc::now();
        Block {
            id: BlockId::new(),
            label: label.into(),
            value: value.into(),
            limit: 100,
            description: String::new(),
            read_only: false,
            version: 1,
            created_at: now,
            updated_at: now,
        }
    }

    fn agent(name: &str) -> Agent {
        Agent {
            system: "sys".into(),
            loop_style: engram_core::LoopStyle::Classic,
            summary: Some("so far".into()),
            ..Agent::new(name, LlmConfig::new("openai/gpt-4o-mini"))
        }
    }

    fn step() -> Step {
        Step {
            id: engram_core::StepId::new(),
            agent_id: AgentId::new(),
            run_id: engram_core::RunId::new(),
            index: 1,
            model: "openai/gpt-4o-mini".into(),
            prompt_tokens: 1200,
            completion_tokens: 34,
            finish_reason: Some("stop".into()),
            started_at: chrono::Utc::now(),
            llm_ms: 800,
            step_ms: 812,
        }
    }

    fn bundle() -> ImportBundle {
        let shared = block("shared", "both see this");
        let own = block("persona", "me");
        let edit = BlockEdit {
            id: EditId::new(),
            block_id: shared.id.clone(),
            editor: Editor::Import,
            old_value: String::new(),
            new_value: "both see this".into(),
            old_version: Some(0),
            new_version: Some(1),
            step_id: None,
            created_at: chrono::Utc::now(),
        };
        let msg = |role, text: &str, in_context| ImportMessage {
            message: NewMessage {
                role,
                content: text.into(),
                ..NewMessage::default()
            },
            in_context,
        };
        ImportBundle {
            agents: vec![
                ImportAgent {
                    agent: agent("a"),
                    block_ids: vec![own.id.clone(), shared.id.clone()],
                    messages: vec![msg(Role::User, "old", false), msg(Role::User, "hi", true)],
                    passages: vec![NewPassage {
                        text: "fact".into(),
                        tags: vec!["t".into()],
                        ..NewPassage::default()
                    }],
                    passage_ids: vec![],
                    extras: Some(serde_json::json!({"tools": []})),
                    tags: vec!["kept".into()],
                    steps: vec![step()],
                    pending_endpoints: vec![],
                    sleeptime: None,
                    superseded: vec![],
                },
                ImportAgent {
                    agent: agent("b"),
                    block_ids: vec![shared.id.clone()],
                    messages: vec![],
                    passages: vec![],
                    passage_ids: vec![],
                    extras: None,
                    tags: Vec::new(),
                    steps: vec![],
                    pending_endpoints: vec![],
                    sleeptime: None,
                    superseded: vec![],
                },
            ],
            blocks: vec![
                ImportBlock {
                    block: shared,
                    history: vec![edit],
                },
                ImportBlock {
                    block: own,
                    history: vec![],
                },
            ],
            tools: vec![],
        }
    }

    #[test]
    fn a_bundle_lands_whole_with_shared_blocks_and_flags() {
        let store = Store::open_in_memory().unwrap();
        let ids = store.import_bundle(&bundle()).unwrap();
        assert_eq!((ids.agents.len(), ids.blocks.len()), (2, 2));
        let a = &ids.agents[0];
        let labels: Vec<_> = store
            .blocks()
            .of_agent(a)
            .unwrap()
            .into_iter()
            .map(|b| b.label)
            .collect();
        assert_eq!(labels, ["persona", "shared"]);
        assert_eq!(store.blocks().agents_of(&ids.blocks[0]).unwrap().len(), 2);
        assert_eq!(store.blocks().history(&ids.blocks[0], 10).unwrap().len(), 1);
        let in_ctx = store.messages().in_context(a).unwrap();
        assert_eq!(in_ctx.len(), 1);
        assert_eq!(store.agents().memory_counts(a).unwrap(), (2, 1));
        assert_eq!(
            store.agents().get(a).unwrap().summary.as_deref(),
            Some("so far")
        );
        // The summary's divider follows the one message out of context.
        let w = store
            .messages()
            .window(a, &crate::WindowAt::Start, 10)
            .unwrap();
        let marks: Vec<_> = w.compactions.iter().map(|c| (c.seq, c.evicted)).collect();
        assert_eq!(marks, [(w.messages[0].seq, 1)]);
        assert!(store.agent_file_extras(a).unwrap().is_some());
        assert!(store.agent_file_extras(&ids.agents[1]).unwrap().is_none());
        assert_eq!(store.agents().tags(a).unwrap(), ["kept"]);
        let steps = store.runs().list_steps(a, None).unwrap();
        assert_eq!(steps.len(), 1, "usage history lands with the agent");
        assert_eq!(
            (steps[0].prompt_tokens, steps[0].completion_tokens),
            (1200, 34)
        );
        assert_eq!(&steps[0].agent_id, a);
        store.agents().delete(a).unwrap();
        assert!(
            store.agent_file_extras(a).unwrap().is_none(),
            "extras go with the agent"
        );
    }

    #[test]
    fn a_bad_bundle_writes_nothing() {
        let store = Store::open_in_memory().unwrap();
        let mut b = bundle();
        b.agents[1].block_ids.push(BlockId::new());
        assert!(matches!(
            store.import_bundle(&b),
            Err(Error::NotFound { .. })
        ));
        let mut b = bundle();
        b.agents[0].passages[0].text = " ".into();
        assert!(store.import_bundle(&b).is_err());
        let mut b = bundle();
        b.blocks[0].block.value = "x".repeat(101);
        assert!(store.import_bundle(&b).is_err());
        assert!(store.agents().list().unwrap().is_empty());
        assert!(store.blocks().list(None).unwrap().is_empty());
    }
}
