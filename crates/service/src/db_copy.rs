//! Copying one database into another through the storage interface (`engram db copy`): the
//! desktop's SQLite file onto a server's PostgreSQL, or back. Every agent keeps its ids,
//! settings, blocks (shared ones stay shared) with their history, whole conversation, passages
//! with their vectors and supersessions, steps, runs, tags, sleep-time settings, agent-file
//! extras and the base URLs an import left waiting for acceptance (still waiting), so an Agent
//! File export of any agent is the same on both sides. Tools (with the trust given to them),
//! standalone blocks, providers (never their keys, which stay in each machine's keychain), the
//! app's settings, the model prices people set, users and their access to agents come along.
//!
//! Left behind, each named in the report's warnings when the source has some: folders and MCP
//! servers (a shared server keeps neither yet), users' tokens (issue new ones), which user
//! made a standalone block, the record of sleep-time passes (their edits stay), and a paused
//! run's pending approval (the call is answered as interrupted on the copy's next run). The
//! copy reads every agent of the source first, then writes each group of agents that share
//! blocks in one transaction: it holds the whole source in memory while it runs.

use engram_agentfile::{AgentSnapshot, snapshot};
use engram_core::{BlockId, Error, NewMessage, NewPassage, PassageId, Result};
use engram_store_api::{
    Backend, ImportAgent, ImportBlock, ImportBundle, ImportMessage, ImportSupersession,
};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// What a copy wrote, and what it left behind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Agents copied.
    pub agents: usize,
    /// Blocks copied (attached and standalone).
    pub blocks: usize,
    /// Messages copied.
    pub messages: usize,
    /// Passages copied (superseded ones too).
    pub passages: usize,
    /// Tools copied.
    pub tools: usize,
    /// Users copied (without their tokens).
    pub users: usize,
    /// What was not copied, in words.
    pub warnings: Vec<String>,
}

/// One side of a copy: a database behind the storage interface.
pub struct Database {
    backend: Arc<dyn Backend>,
    /// The SQLite store itself, to tell what the interface does not carry yet.
    sqlite: Option<Arc<engram_store::Store>>,
}

impl Database {
    /// An Engram SQLite database file, created if missing, its schema brought up to date.
    /// Errors: `Storage` when the file cannot be opened or migrated.
    pub fn sqlite(path: &Path) -> Result<Database> {
        let store = Arc::new(engram_store::Store::open(path)?);
        Ok(Database {
            backend: store.clone(),
            sqlite: Some(store),
        })
    }

    /// A database reached through any backend (a server's PostgreSQL).
    pub fn on(backend: Arc<dyn Backend>) -> Database {
        Database {
            backend,
            sqlite: None,
        }
    }

    /// What the copy leaves behind of this database, in words (see the module docs).
    fn left_behind(&self) -> Result<Vec<String>> {
        let Some(store) = &self.sqlite else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let folders = store.folders().list()?.len();
        if folders > 0 {
            out.push(format!(
                "{folders} folder(s) were not copied: a shared server keeps no folders yet"
            ));
        }
        let servers = store.tools().list_mcp_servers()?.len();
        if servers > 0 {
            out.push(format!("{servers} MCP server(s) were not copied"));
        }
        Ok(out)
    }
}

/// Copies everything `from` holds into `to` (see the module docs), which must hold no agents,
/// tools, blocks or users.
///
/// Errors: `Conflict` when `to` is not empty (nothing is written); any error of either side,
/// with the groups written before it kept.
pub async fn copy_database(from: &Database, to: &Database) -> Result<CopyReport> {
    let (source, from) = (from, from.backend.as_ref());
    let to = to.backend.as_ref();
    if !to.list_agents().await?.is_empty()
        || !to.list_tools().await?.is_empty()
        || !to.list_blocks(None).await?.is_empty()
        || !to.list_users().await?.is_empty()
    {
        return Err(Error::Conflict(
            "the destination database already holds agents, blocks, tools or users: copy \
             into an empty one"
                .into(),
        ));
    }
    let mut report = CopyReport::default();

    for p in from.list_providers().await? {
        to.upsert_provider(&p).await?;
    }
    for (key, value) in from.settings_with_prefix("").await? {
        to.set_setting(&key, &value).await?;
    }
    for price in from.model_prices().await? {
        to.set_model_price(&price).await?;
    }
    let tools = from.list_tools().await?;
    let mut mcp_tools = 0;
    for t in &tools {
        mcp_tools += usize::from(t.mcp.is_some());
        to.upsert_tool(t).await?;
    }
    report.tools = tools.len();
    if mcp_tools > 0 {
        report.warnings.push(format!(
            "{mcp_tools} tool(s) of MCP servers were copied without their servers; add the \
             servers again where they are used"
        ));
    }

    let agents = from.list_agents().await?;
    report.warnings.extend(source.left_behind()?);
    let mut snaps = Vec::with_capacity(agents.len());
    let (mut paused, mut with_passes) = (0, 0);
    for a in &agents {
        snaps.push(snapshot(from, &a.id).await?);
        paused += usize::from(from.pending_approval(&a.id).await?.is_some());
        with_passes += usize::from(!from.list_passes(&a.id, 1).await?.is_empty());
    }
    if paused > 0 {
        report.warnings.push(format!(
            "{paused} agent(s) waiting for a tool call's approval were copied without it: the \
             call is answered as interrupted on the next run"
        ));
    }
    if with_passes > 0 {
        report.warnings.push(format!(
            "the record of sleep-time passes of {with_passes} agent(s) was not copied (their \
             edits were)"
        ));
    }
    for group in groups(&snaps) {
        let mut bundle = bundle_of(&group);
        // Base URLs still waiting for the person's acceptance go along, still waiting.
        for a in &mut bundle.agents {
            a.pending_endpoints = from.pending_endpoints(&a.agent.id).await?;
        }
        report.blocks += bundle.blocks.len();
        report.messages += bundle
            .agents
            .iter()
            .map(|a| a.messages.len())
            .sum::<usize>();
        report.passages += bundle
            .agents
            .iter()
            .map(|a| a.passages.len())
            .sum::<usize>();
        to.import_bundle(&bundle).await?;
        for s in &group {
            for run in from.list_runs(&s.agent.id, None).await? {
                to.record_run(&run).await?;
            }
        }
        report.agents += group.len();
    }

    // Blocks no agent has (made on their own, as Letta's shared-memory tutorial does).
    let attached: std::collections::HashSet<&BlockId> = snaps
        .iter()
        .flat_map(|s| s.blocks.iter().map(|b| &b.id))
        .collect();
    let mut standalone = ImportBundle::default();
    for b in from.list_blocks(None).await? {
        if !attached.contains(&b.id) {
            standalone.blocks.push(ImportBlock {
                history: history_of(from, &b.id).await?,
                block: b,
            });
        }
    }
    if !standalone.blocks.is_empty() {
        report.blocks += standalone.blocks.len();
        to.import_bundle(&standalone).await?;
        report.warnings.push(format!(
            "{} standalone block(s) were copied without the user who made them: only the \
             administrator reaches them until they are attached to an agent",
            standalone.blocks.len()
        ));
    }

    let users = from.list_users().await?;
    for u in &users {
        let made = to.create_user(&u.name).await?;
        for (agent, access) in from.user_agents(&u.id).await? {
            to.set_agent_access(&agent, &made.id, Some(access)).await?;
        }
    }
    report.users = users.len();
    if !users.is_empty() {
        report.warnings.push(format!(
            "{} user(s) were copied without their tokens: issue new ones with `engram user token NAME`",
            users.len()
        ));
    }
    Ok(report)
}

/// The agents in groups that share no block with another group (each written in one
/// transaction, since a bundle holds each block once), in the source's order.
fn groups(snaps: &[AgentSnapshot]) -> Vec<Vec<&AgentSnapshot>> {
    // Union-find over agents, joined by the blocks they share.
    let mut parent: Vec<usize> = (0..snaps.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut owner: HashMap<&BlockId, usize> = HashMap::new();
    for (i, s) in snaps.iter().enumerate() {
        for b in &s.blocks {
            match owner.get(&b.id) {
                Some(&j) => {
                    let (ri, rj) = (root(&mut parent, i), root(&mut parent, j));
                    parent[ri] = rj;
                }
                None => {
                    owner.insert(&b.id, i);
                }
            }
        }
    }
    let mut out: Vec<Vec<&AgentSnapshot>> = Vec::new();
    let mut index: HashMap<usize, usize> = HashMap::new();
    for (i, s) in snaps.iter().enumerate() {
        let r = root(&mut parent, i);
        let at = *index.entry(r).or_insert_with(|| {
            out.push(Vec::new());
            out.len() - 1
        });
        out[at].push(s);
    }
    out
}

/// A block's edits, oldest first.
async fn history_of(from: &dyn Backend, block: &BlockId) -> Result<Vec<engram_core::BlockEdit>> {
    let mut edits = from.block_history(block, usize::MAX).await?;
    edits.reverse();
    Ok(edits)
}

/// One group of agents as a bundle that keeps every id and time.
fn bundle_of(group: &[&AgentSnapshot]) -> ImportBundle {
    let mut bundle = ImportBundle::default();
    let mut seen: std::collections::HashSet<BlockId> = std::collections::HashSet::new();
    for s in group {
        for b in &s.blocks {
            if seen.insert(b.id.clone()) {
                bundle.blocks.push(ImportBlock {
                    block: b.clone(),
                    history: s.history.get(&b.id).cloned().unwrap_or_default(),
                });
            }
        }
        bundle.agents.push(import_agent(s));
    }
    bundle
}

/// An agent as a bundle carries it, ids and times kept.
fn import_agent(s: &AgentSnapshot) -> ImportAgent {
    let messages = s
        .messages
        .iter()
        .map(|m| ImportMessage {
            message: NewMessage {
                role: m.role,
                kind: m.kind,
                content: m.content.clone(),
                reasoning: m.reasoning.clone(),
                tool_calls: m.tool_calls.clone(),
                tool_call_id: m.tool_call_id.clone(),
                tool_name: m.tool_name.clone(),
                run_id: m.run_id.clone(),
                step_id: m.step_id.clone(),
                created_at: Some(m.created_at),
                id: Some(m.id.clone()),
            },
            in_context: m.in_context,
        })
        .collect();
    let position: HashMap<&PassageId, usize> = s
        .passages
        .iter()
        .enumerate()
        .map(|(i, p)| (&p.id, i))
        .collect();
    let superseded = s
        .passages
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let gone = p.superseded.as_ref()?;
            Some(ImportSupersession {
                passage: i,
                by: gone.by.as_ref().and_then(|by| position.get(by).copied()),
                kind: gone.kind,
                at: gone.at,
            })
        })
        .collect();
    ImportAgent {
        agent: s.agent.clone(),
        block_ids: s.blocks.iter().map(|b| b.id.clone()).collect(),
        messages,
        passages: s
            .passages
            .iter()
            .map(|p| NewPassage {
                text: p.text.clone(),
                tags: p.tags.clone(),
                embedding: s.vectors.get(&p.id).cloned(),
                created_at: Some(p.created_at),
            })
            .collect(),
        passage_ids: s.passages.iter().map(|p| p.id.clone()).collect(),
        extras: s.extras.clone(),
        tags: s.tags.clone(),
        steps: s.steps.clone(),
        pending_endpoints: vec![],
        sleeptime: Some(s.sleeptime.clone()),
        superseded,
    }
}
