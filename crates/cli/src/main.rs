//! `engram`: the command-line transport. Each subcommand parses, calls one service method and
//! prints; errors print one line and exit non-zero.

/// Every line the CLI prints goes through [`terminal::out`], so a closed pipe
/// (`engram agent show | head`) ends the command quietly instead of panicking.
macro_rules! println {
    () => {
        $crate::terminal::out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::terminal::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Like `println!` without the newline (see there).
#[allow(unused_macros)]
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::terminal::out(format_args!($($arg)*))
    };
}

mod approval;
mod args;
mod database_url;
mod db;
mod embedding;
mod folder;
mod mcp;
mod mcp_memory;
mod model;
mod repl;
mod serve;
mod sleeptime;
mod terminal;
mod tools;
mod transfer;
mod trust;
mod user;

use anyhow::{Context as _, Result, anyhow, bail};
use args::{AgentCmd, ArchivalCmd, Cli, Command, LoopArg, MemoryCmd, ProviderCmd, RecallCmd};
use clap::Parser;
use database_url::redacted;
use engram_core::{
    AgentId, EditId, EmbeddingConfig, LlmConfig, LoopStyle, NewAgent, NewBlock, Role, TagMatch,
};
use engram_service::{
    Engram, MessageQuery, Options, PassageList, PassageQuery, ProviderKind, ProviderSetup,
    RunRequest, letta,
};
use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;
use terminal::safe;

/// jemalloc, with background threads that purge freed pages after its decay time (1 s, set at
/// build time in `.cargo/config.toml`), so a long-running `engram serve` shrinks back after an
/// export, a burst of searches or the model's unload (measured in `benches/memory.rs` and
/// `benches/model_memory.rs`). SQLite's own page cache is released separately (`serve.rs`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ENGRAM_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Errors can quote names and text from agent files and models.
            eprintln!("error: {}", terminal::safe(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

/// The commands whose service calls still read or write this machine's own database: on a
/// shared server's database they would not see its agents (and could write beside them), so
/// they are refused by name instead.
fn not_on_a_shared_database(command: &Command) -> Option<&'static str> {
    match command {
        Command::Folder(_) => Some("folder"),
        Command::Mcp(_) => Some("mcp"),
        _ => None,
    }
}

async fn run(mut cli: Cli) -> Result<()> {
    // Copies work on the databases they name, not on this machine's engine.
    if matches!(cli.command, Some(Command::Db(_)))
        && let Some(Command::Db(cmd)) = cli.command.take()
    {
        return db::db(cmd).await;
    }
    let mut options = Options::from_env(cli.home);
    if let Some(dir) = cli.model_dir {
        let dir = std::path::absolute(dir)?.display().to_string();
        let env = options.env.clone();
        options.env = Arc::new(move |k| {
            if k == engram_service::MODEL_DIR_ENV {
                Some(dir.clone())
            } else {
                env(k)
            }
        });
    }
    if let Some(path) = &cli.secrets_file {
        options = options.with_secrets_file(path)?;
    }
    let engram = match &cli.database {
        Some(url) => {
            let backend = engram_store_pg::PgStore::connect(url)
                .await
                .with_context(|| format!("cannot open the database {}", redacted(url)))?;
            let backend = Arc::new(backend);
            Engram::open_shared(options, backend.clone(), backend)?
        }
        None => Engram::open(options)?,
    };
    if let Err(e) = engram_server::tool_api::install(&engram) {
        eprintln!("warning: tools cannot call Engram's API back: {e}");
    }
    if cli.database.is_some()
        && let Some(what) = cli.command.as_ref().and_then(not_on_a_shared_database)
    {
        bail!(
            "`engram {what}` does not work on a shared server's database yet (--database): \
             what a shared server serves is listed in docs/postgres.md"
        );
    }
    let Some(command) = cli.command else {
        let agent = latest_or_new_agent(&engram).await?;
        warn_model(&engram, &agent).await;
        return repl::run(&engram, &agent).await;
    };
    match command {
        Command::Agent(cmd) => agent(&engram, cmd).await,
        Command::Chat(args) => {
            let policy = approval::Policy::from_flags(args.approve_all, args.deny_all, args.reason);
            let agent = AgentId::from(args.agent);
            match args.message {
                Some(message) => {
                    let turn = Some(Turn::Send(&message));
                    chat_once(&engram, &agent, turn, args.json, policy).await
                }
                None if args.regenerate => {
                    chat_once(&engram, &agent, Some(Turn::Regenerate), args.json, policy).await
                }
                None if args.approve_all || args.deny_all || args.json => {
                    chat_once(&engram, &agent, None, args.json, policy).await
                }
                None => {
                    warn_model(&engram, &agent).await;
                    repl::run(&engram, &agent).await
                }
            }
        }
        Command::Memory(cmd) => memory(&engram, cmd).await,
        Command::Archival(cmd) => archival(&engram, cmd).await,
        Command::Recall(cmd) => recall(&engram, cmd).await,
        Command::Embedding(cmd) => embedding::embedding(&engram, cmd).await,
        Command::Folder(cmd) => folder::folder(&engram, cmd).await,
        Command::Provider(cmd) => provider(&engram, cmd).await,
        Command::Model(cmd) => model::model(&engram, cmd).await,
        Command::Serve(args) => serve::run(engram, args).await,
        Command::Tool(cmd) => tools::tool(&engram, cmd).await,
        Command::Template(cmd) => tools::template(&engram, cmd),
        Command::Python(cmd) => tools::python(&engram, cmd),
        Command::Mcp(cmd) => mcp::mcp(&engram, cmd).await,
        Command::Sleeptime(cmd) => sleeptime::sleeptime(&engram, cmd).await,
        Command::User(cmd) => user::user(&engram, cmd).await,
        Command::Import(args) => transfer::import(&engram, args).await,
        Command::Db(_) => unreachable!("handled before the engine opens"),
        Command::Export(args) => transfer::export(&engram, args).await,
        Command::Context { agent, json, full } => {
            let agent = AgentId::from(agent);
            if full {
                return print_context_view(&engram, &agent, json).await;
            }
            let b = engram.agents().context_breakdown(&agent).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&b)?);
            } else {
                let pct = |n: usize| n as f64 * 100.0 / b.context_window.max(1) as f64;
                println!(
                    "context window: {} tokens ({})",
                    b.context_window,
                    if b.exact { "exact" } else { "estimated" }
                );
                for (name, n) in [
                    ("system", b.system),
                    ("core memory", b.core_memory),
                    ("files", b.files),
                    ("summary", b.summary),
                    ("messages", b.messages),
                    ("tools", b.tools),
                    ("total", b.total),
                ] {
                    println!("  {name:<12} {n:>8}  {:>5.1}%", pct(n));
                }
            }
            Ok(())
        }
    }
}

/// `engram context --full`: the next request as the model will receive it, part by part.
async fn print_context_view(engram: &Engram, agent: &AgentId, json: bool) -> Result<()> {
    let view = engram.agents().context_view(agent).await?;
    if json {
        println!("{}", terminal::json(&view)?);
        return Ok(());
    }
    println!(
        "model {} · {} of {} tokens",
        safe(&view.model),
        view.breakdown.total,
        view.breakdown.context_window
    );
    for m in &view.messages {
        let who = m
            .name
            .as_deref()
            .map_or(m.role.clone(), |n| format!("{} {n}", m.role));
        println!("\n── {} ({}, {} tokens)", safe(&who), m.part, m.tokens);
        if !m.content.is_empty() {
            println!("{}", safe(&m.content));
        }
        for c in &m.tool_calls {
            println!("→ {}({})", safe(&c.name), safe(&c.arguments));
        }
    }
    println!("\n── tools ({} tokens)", view.breakdown.tools);
    for t in &view.tools {
        println!("  {:<28} {:>6} tokens", safe(&t.name), t.tokens);
    }
    Ok(())
}

/// Tells the user on standard error when agent `id`'s chat model is not set up (no provider,
/// no key, a built-in model not on this computer), with the command that fixes it: said when
/// the agent is made or opened, not after a message fails. Silent when it cannot tell.
async fn warn_model(engram: &Engram, id: &AgentId) {
    if let Ok(Some(p)) = engram.agents().model_problem(id).await {
        eprintln!(
            "warning: {} cannot talk to its model {} yet: {}. Set up the provider, or give the \
             agent another model (`engram agent set-model PROVIDER/MODEL {}`).",
            safe(&p.agent_name),
            safe(&p.model),
            safe(&p.detail),
            id
        );
    }
}

/// The most recently created agent, or a new one with the default model when there is none.
async fn latest_or_new_agent(engram: &Engram) -> Result<AgentId> {
    if let Some(agent) = engram.agents().list().await?.pop() {
        return Ok(agent.id);
    }
    let state = engram
        .agents()
        .create(NewAgent {
            name: "Engram".into(),
            ..NewAgent::default()
        })
        .await?;
    eprintln!(
        "Created agent {} ({}).",
        state.agent.id,
        safe(&state.agent.llm.model)
    );
    Ok(state.agent.id)
}

async fn agent(engram: &Engram, cmd: AgentCmd) -> Result<()> {
    match cmd {
        AgentCmd::Create {
            name,
            template,
            model,
            base_url,
            context_window,
            system,
            blocks,
            loop_style,
            embedding,
            embedding_base_url,
        } => {
            let no_embedding = embedding
                .as_deref()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("none"));
            let system = system
                .map(|path| {
                    std::fs::read_to_string(&path)
                        .with_context(|| format!("cannot read {}", path.display()))
                })
                .transpose()?;
            let blocks = blocks
                .iter()
                .map(|b| {
                    let (label, value) = b
                        .split_once('=')
                        .ok_or_else(|| anyhow!("--block wants label=value, got '{b}'"))?;
                    Ok(NewBlock::new(label.trim(), value))
                })
                .collect::<Result<Vec<_>>>()?;
            let llm = match (model, base_url, context_window) {
                (None, None, None) => None,
                (model, base_url, window) => {
                    let mut llm =
                        LlmConfig::new(model.map_or_else(|| engram.models().default_chat(), Ok)?);
                    llm.base_url = base_url;
                    if let Some(w) = window {
                        llm.context_window = w;
                    }
                    Some(llm)
                }
            };
            let new = NewAgent {
                name: name.unwrap_or_default(),
                system,
                llm,
                embedding: match (embedding, embedding_base_url) {
                    (Some(m), _) if m.trim().eq_ignore_ascii_case("none") => None,
                    (None, None) => None,
                    (model, base_url) => Some(EmbeddingConfig {
                        model: model
                            .map_or_else(
                                || {
                                    engram
                                        .models()
                                        .default_embedding()
                                        .map(|d| d.map(|c| c.model))
                                },
                                |m| Ok(Some(m)),
                            )?
                            .ok_or_else(|| anyhow!("--embedding-base-url needs --embedding"))?,
                        base_url,
                    }),
                },
                loop_style: match loop_style {
                    LoopArg::Classic => LoopStyle::Classic,
                    LoopArg::ToolLoop => LoopStyle::ToolLoop,
                },
                blocks,
                ..NewAgent::default()
            };
            let state = match template {
                Some(t) => engram.agents().create_from_template(&t, new).await?,
                None => engram.agents().create(new).await?,
            };
            if no_embedding && state.agent.embedding.is_some() {
                let patch = engram_core::AgentPatch {
                    embedding: Some(None),
                    ..Default::default()
                };
                engram.agents().update(&state.agent.id, &patch).await?;
            }
            println!("{}", state.agent.id);
            warn_model(engram, &state.agent.id).await;
        }
        AgentCmd::List { json } => {
            let agents = engram.agents().list().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&agents)?);
            }
            let missing: std::collections::HashSet<AgentId> = if json {
                Default::default()
            } else {
                engram
                    .agents()
                    .without_model()
                    .await?
                    .into_iter()
                    .map(|p| p.agent_id)
                    .collect()
            };
            for a in agents.iter().filter(|_| !json) {
                let note = if missing.contains(&a.id) {
                    "  [model not set up]"
                } else {
                    ""
                };
                println!(
                    "{}  {}  ({}){note}",
                    a.id,
                    safe(&a.name),
                    safe(&a.llm.model)
                );
            }
        }
        AgentCmd::Show { agent } => {
            let id = AgentId::from(agent);
            let state = engram.agents().get(&id).await?;
            // The agent as JSON, with where its model calls go and what waits for approval.
            let mut shown = serde_json::to_value(&state)?;
            shown["endpoints"] = serde_json::to_value(engram.trust().endpoints(&id).await?)?;
            // Whether its vector index is being built (then archival search is exact but
            // slower): in this process, or marked pending by another or by a quit.
            shown["vector_index"] = serde_json::to_value(engram.archival().index_status(&id)?)?;
            println!("{}", terminal::json(&shown)?);
        }
        AgentCmd::Endpoint(cmd) => trust::endpoint(engram, cmd).await?,
        AgentCmd::SetModel {
            model,
            agents,
            without_model,
        } => {
            let mut ids: Vec<AgentId> = agents.into_iter().map(AgentId::from).collect();
            if without_model {
                ids.extend(
                    engram
                        .agents()
                        .without_model()
                        .await?
                        .into_iter()
                        .map(|p| p.agent_id),
                );
            }
            if ids.is_empty() {
                println!("every agent's model is set up; nothing changed");
            }
            for a in engram.agents().use_model(&ids, &model).await? {
                println!("{}  {}  ({})", a.id, safe(&a.name), safe(&a.llm.model));
            }
        }
        AgentCmd::Delete { agent } => {
            engram
                .agents()
                .delete(&AgentId::from(agent.as_str()))
                .await?;
            println!("deleted {agent}");
        }
    }
    Ok(())
}

/// What `engram chat` runs once: a new message, or the last turn again.
enum Turn<'a> {
    Send(&'a str),
    Regenerate,
}

/// One turn (or, with `turn` `None`, only the decisions `policy` makes about a waiting call):
/// prints the replies, or Letta's response JSON.
async fn chat_once(
    engram: &Arc<Engram>,
    agent: &AgentId,
    turn: Option<Turn<'_>>,
    json: bool,
    policy: approval::Policy,
) -> Result<()> {
    let style = engram.agents().get(agent).await?.agent.loop_style;
    let mut merged = None;
    // A call left waiting by an earlier run is decided first, so the turn can run.
    approval::settle(engram, agent, &policy, &mut merged).await?;
    if let Some(turn) = turn {
        if let Some(p) = engram.runs().pending_approval(agent).await? {
            return Err(approval::waiting_error(agent, &p));
        }
        let request = match turn {
            Turn::Send(message) => RunRequest::Message {
                text: message.to_owned(),
            },
            Turn::Regenerate => {
                let undone = engram.runs().regenerate_preview(agent).await?;
                eprintln!(
                    "undoing {} messages, {} block edits, {} passages",
                    undone.messages.len(),
                    undone.blocks.iter().map(|b| b.edits).sum::<u32>(),
                    undone.passages.len()
                );
                RunRequest::Regenerate
            }
        };
        let outcome = engram.runs().start(agent, request).await?.outcome().await?;
        approval::merge(&mut merged, outcome);
        approval::settle(engram, agent, &policy, &mut merged).await?;
    }
    let Some(outcome) = merged else {
        bail!("no tool call is waiting for approval; nothing to do");
    };
    let pending = engram.runs().pending_approval(agent).await?;
    if json {
        let mut body = letta::response(&outcome, style);
        if let (Some(p), Some(list)) = (&pending, body["messages"].as_array_mut()) {
            letta::mark_pending(list, p, true);
        }
        println!("{}", serde_json::to_string_pretty(&body)?);
    } else {
        for m in outcome.messages.iter().filter(|m| m.role != Role::User) {
            for shown in letta::letta_messages(m, style) {
                if shown["message_type"] == "assistant_message"
                    && let Some(text) = shown["content"].as_str()
                {
                    println!("{}", safe(text));
                }
            }
        }
    }
    if let Some(error) = outcome.error {
        bail!(
            "{} (stop reason: {})",
            safe(&error.message),
            outcome.stop_reason.as_str()
        );
    }
    if let Some(p) = pending.filter(|_| approval::is_waiting(&outcome)) {
        return Err(approval::waiting_error(agent, &p));
    }
    Ok(())
}

async fn memory(engram: &Engram, cmd: MemoryCmd) -> Result<()> {
    match cmd {
        MemoryCmd::Show { agent, json } => {
            let blocks = engram.agents().get(&AgentId::from(agent)).await?.blocks;
            if json {
                println!("{}", serde_json::to_string_pretty(&blocks)?);
            }
            for b in blocks.iter().filter(|_| !json) {
                let ro = if b.read_only { ", read-only" } else { "" };
                println!(
                    "[{}] {}/{} chars, version {}{ro}\n{}\n",
                    safe(&b.label),
                    b.chars(),
                    b.limit,
                    b.version,
                    safe(&b.value)
                );
            }
        }
        MemoryCmd::Set {
            agent,
            label,
            value,
            if_version,
        } => {
            let patch = engram_core::BlockPatch {
                value: Some(value),
                version: if_version,
                ..engram_core::BlockPatch::default()
            };
            let b = engram
                .blocks()
                .update_by_label(&AgentId::from(agent), &label, &patch)
                .await?;
            println!(
                "[{}] {}/{} chars, version {}",
                safe(&b.label),
                b.chars(),
                b.limit,
                b.version
            );
        }
        MemoryCmd::History { agent, label } => {
            for e in engram
                .blocks()
                .history(&AgentId::from(agent), &label)
                .await?
            {
                let versions = match (e.old_version, e.new_version) {
                    (Some(old), Some(new)) => format!("  v{old} -> v{new}"),
                    _ => String::new(),
                };
                println!(
                    "{}  {}  {}{versions}\n  - {:?}\n  + {:?}",
                    e.id,
                    e.created_at.to_rfc3339(),
                    terminal::json(&e.editor)?,
                    e.old_value,
                    e.new_value
                );
            }
        }
        MemoryCmd::Undo {
            edit,
            if_version,
            whole,
        } => {
            let edit = EditId::from(edit);
            let b = if whole {
                engram.blocks().restore(&edit, if_version).await?
            } else {
                engram.blocks().undo(&edit, if_version).await?
            };
            println!(
                "[{}] restored ({}/{} chars)",
                safe(&b.label),
                b.chars(),
                b.limit
            );
        }
    }
    Ok(())
}

async fn archival(engram: &Engram, cmd: ArchivalCmd) -> Result<()> {
    match cmd {
        ArchivalCmd::Add { agent, text, tags } => {
            let agent = AgentId::from(agent);
            // The vector is computed in the background; this process waits for it before it
            // exits, so the passage is found by meaning from the next command on.
            let add = async {
                let p = engram.archival().insert(&agent, &text, tags).await?;
                engram
                    .archival()
                    .fresh_vectors(&agent, std::time::Duration::from_secs(600))
                    .await;
                anyhow::Ok(p)
            };
            let p = embedding::with_progress(engram, add).await?;
            println!("{}", p.id);
        }
        ArchivalCmd::Backfill { agent } => {
            embedding::backfill(engram, &AgentId::from(agent)).await?;
        }
        ArchivalCmd::List {
            agent,
            limit,
            offset,
            oldest_first,
            tags,
            all_tags,
            since,
            until,
            include_superseded,
            json,
        } => {
            let list = PassageList {
                include_superseded,
                limit,
                offset,
                ascending: oldest_first,
                tags,
                tag_match: if all_tags {
                    TagMatch::All
                } else {
                    TagMatch::Any
                },
                start: since,
                end: until,
                ..PassageList::default()
            };
            let passages = engram.archival().list(&AgentId::from(agent), &list).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&passages)?);
            }
            for p in passages.iter().filter(|_| !json) {
                println!(
                    "{}  {}  [{}]{}\n  {}",
                    p.id,
                    p.created_at.to_rfc3339(),
                    safe(&p.tags.join(", ")),
                    replaced(p),
                    safe(&p.text)
                );
            }
        }
        ArchivalCmd::Search {
            agent,
            query,
            tags,
            top_k,
            include_superseded,
            json,
        } => {
            let agent = AgentId::from(agent);
            let q = PassageQuery {
                query,
                tags,
                top_k,
                include_superseded,
                ..PassageQuery::default()
            };
            let hits =
                embedding::with_progress(engram, engram.archival().search_by(&agent, q)).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&hits)?);
            }
            for h in hits.iter().filter(|_| !json) {
                println!(
                    "{:.4}  {}  [{}]{}\n  {}",
                    h.score,
                    h.passage.created_at.to_rfc3339(),
                    safe(&h.passage.tags.join(", ")),
                    replaced(&h.passage),
                    safe(&h.passage.text)
                );
            }
        }
    }
    Ok(())
}

/// `  (superseded 2026-…, by passage-…)` for a passage that is no longer current, else nothing.
fn replaced(p: &engram_core::Passage) -> String {
    p.superseded.as_ref().map_or_else(String::new, |s| {
        let by = s.by.as_ref().map_or(String::new(), |b| format!(", by {b}"));
        format!("  ({} {}{by})", s.kind.as_str(), s.at.to_rfc3339())
    })
}

async fn recall(engram: &Engram, cmd: RecallCmd) -> Result<()> {
    let RecallCmd::Search {
        agent,
        query,
        roles,
        limit,
        json,
    } = cmd;
    let roles = roles
        .iter()
        .map(|r| match r.as_str() {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(anyhow!(
                "unknown role '{other}': use user, assistant or tool"
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    let q = MessageQuery {
        query,
        roles,
        start: None,
        end: None,
        limit,
    };
    let hits =
        embedding::with_progress(engram, engram.recall().search(&AgentId::from(agent), &q)).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&hits)?);
    }
    for h in hits.iter().filter(|_| !json) {
        let m = &h.message;
        println!(
            "{}  {}: {}",
            m.created_at.to_rfc3339(),
            m.role.as_str(),
            safe(&m.content)
        );
    }
    Ok(())
}

async fn provider(engram: &Engram, cmd: ProviderCmd) -> Result<()> {
    match cmd {
        ProviderCmd::Set {
            name,
            base_url,
            kind,
            api_key_stdin,
            default_model,
            timeout,
            retries,
        } => {
            let api_key = if api_key_stdin {
                let mut key = String::new();
                std::io::stdin()
                    .read_to_string(&mut key)
                    .context("cannot read the key from standard input")?;
                let key = key.trim().to_owned();
                if key.is_empty() {
                    bail!("no key on standard input");
                }
                Some(secrecy::SecretString::from(key))
            } else {
                None
            };
            let info = engram.providers().set(ProviderSetup {
                name,
                kind: kind.map(|k| {
                    if k == "anthropic" {
                        ProviderKind::Anthropic
                    } else {
                        ProviderKind::OpenAi
                    }
                }),
                base_url,
                api_key,
                default_model,
                timeout_secs: timeout,
                max_retries: retries,
            })?;
            println!(
                "{} ({}) key {}",
                safe(&info.name),
                safe(&info.base_url.unwrap_or_default()),
                if info.key_set { "set" } else { "not set" }
            );
        }
        ProviderCmd::List => {
            for p in engram.providers().list()? {
                println!(
                    "{}  {}  key {}",
                    safe(&p.name),
                    safe(&p.base_url.unwrap_or_default()),
                    if p.key_set { "set" } else { "not set" }
                );
            }
        }
        ProviderCmd::Test { name } => {
            let models = engram.providers().test(&name).await?;
            println!("{name}: OK, {} models", models.len());
            for m in models {
                println!("  {}", safe(&m.id));
            }
        }
        ProviderCmd::Delete { name } => {
            engram.providers().delete(&name)?;
            println!("deleted {name}");
        }
    }
    Ok(())
}
