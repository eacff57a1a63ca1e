//! The command line's shape.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Engram: local agents with self-editing memory.
#[derive(Parser)]
#[command(name = "engram", version, about)]
pub struct Cli {
    /// Data directory (default: $ENGRAM_HOME, else the platform data dir).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// A folder with the built-in embedding model's weights (config.json, tokenizer.json,
    /// model.safetensors) to use instead of downloading them, for this run
    /// (`engram embedding local-dir` keeps one).
    #[arg(long, global = true, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// A TOML file of provider keys (`[providers] openai = "sk-…"`) and optionally the REST
    /// API's token (`rest_api_token = "…"`), for machines without a keychain (a server). It
    /// must be readable by you alone; its keys are never copied anywhere.
    #[arg(long, global = true, value_name = "FILE")]
    pub secrets_file: Option<PathBuf>,
    /// A shared server's database (`postgres://user@host:port/dbname`, also from
    /// $ENGRAM_DATABASE_URL): agents, memory, runs, tools and users live there, and every
    /// replica started with it serves the same ones. The data directory keeps only this
    /// machine's settings. Default: the data directory's own SQLite database.
    #[arg(long, global = true, value_name = "URL", env = "ENGRAM_DATABASE_URL")]
    pub database: Option<String>,
    /// What to do; without one, chat with the most recent agent (creating one if none exist).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Create, list, show and delete agents.
    #[command(subcommand)]
    Agent(AgentCmd),
    /// Talk to an agent: one message with --message, else an interactive session.
    Chat(ChatArgs),
    /// Show and edit core memory.
    #[command(subcommand)]
    Memory(MemoryCmd),
    /// Archival memory: add, list and search passages.
    #[command(subcommand)]
    Archival(ArchivalCmd),
    /// Recall memory: search the conversation history.
    #[command(subcommand)]
    Recall(RecallCmd),
    /// Folders of documents agents read: create, add files, list, attach, detach, remove.
    #[command(subcommand)]
    Folder(crate::folder::FolderCmd),
    /// The built-in embedding model: status, download, a local weights folder, the default.
    #[command(subcommand)]
    Embedding(crate::embedding::EmbeddingCmd),
    /// Configure model providers (keys go to the OS keychain).
    #[command(subcommand)]
    Provider(ProviderCmd),
    /// Built-in chat models: GGUF files Engram runs itself (add, list, rm, default).
    #[command(subcommand)]
    Model(crate::model::ModelCmd),
    /// Serve the Letta-compatible REST API on 127.0.0.1 (for letta-client and notebooks).
    Serve(crate::serve::ServeArgs),
    /// Import an Agent File (.af, Letta v1 or v2) and print the new agent ids.
    Import(crate::transfer::ImportArgs),
    /// Export agents as an Agent File (lossless), Markdown or JSON.
    Export(crate::transfer::ExportArgs),
    /// Add, list, attach and delete tools (Python functions the agent can call).
    #[command(subcommand)]
    Tool(crate::tools::ToolCmd),
    /// Agent templates (e.g. the task-queue agent).
    #[command(subcommand)]
    Template(crate::tools::TemplateCmd),
    /// The Python tools run in: show it, or set one up with letta-client for tools that call
    /// Engram back.
    #[command(subcommand)]
    Python(crate::tools::PythonCmd),
    /// MCP servers: add (stdio or streamable HTTP), list, test, remove, accept, import.
    #[command(subcommand)]
    Mcp(crate::mcp::McpCmd),
    /// Sleep-time passes: background tidying of an agent's memory (settings, run, undo).
    #[command(subcommand)]
    Sleeptime(crate::sleeptime::SleeptimeCmd),
    /// Users of a shared `engram serve`: add, list, remove, tokens, sharing agents.
    #[command(subcommand)]
    User(crate::user::UserCmd),
    /// Databases: copy one into another (SQLite file ⇄ a server's PostgreSQL).
    #[command(subcommand)]
    Db(crate::db::DbCmd),
    /// Show how an agent's context window is used.
    Context {
        /// Agent id.
        agent: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Show the whole next request: every message and tool schema, with its tokens.
        #[arg(long)]
        full: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LoopArg {
    /// MemGPT's loop: send_message and heartbeats.
    Classic,
    /// Plain replies; the run goes on while the model calls tools.
    ToolLoop,
}

#[derive(Subcommand)]
pub enum AgentCmd {
    /// Create an agent and print its id.
    Create {
        /// Display name (with --template, defaults to the template's name).
        #[arg(long)]
        name: Option<String>,
        /// Start from a template (`engram template list`), e.g. task-queue.
        #[arg(long)]
        template: Option<String>,
        /// Model handle, e.g. openai/gpt-4o-mini, ollama/llama3.1 or local/NAME (a GGUF
        /// registered with `engram model add`).
        #[arg(long)]
        model: Option<String>,
        /// Base URL of an OpenAI-compatible server for this agent.
        #[arg(long)]
        base_url: Option<String>,
        /// The model's context window, in tokens.
        #[arg(long)]
        context_window: Option<u32>,
        /// File with the agent's instructions (may contain {CORE_MEMORY}).
        #[arg(long, value_name = "FILE")]
        system: Option<PathBuf>,
        /// A memory block as label=value (repeatable).
        #[arg(long = "block", value_name = "LABEL=VALUE")]
        blocks: Vec<String>,
        /// Loop style.
        #[arg(long = "loop", value_enum, default_value = "tool-loop")]
        loop_style: LoopArg,
        /// Embedding model handle for archival and recall search, e.g. local/all-minilm-l6-v2
        /// (built in, the default), openai/text-embedding-3-small, ollama/nomic-embed-text, or
        /// none (search by words only).
        #[arg(long)]
        embedding: Option<String>,
        /// The embedding server's base URL (e.g. http://127.0.0.1:11434/v1); stored with the
        /// agent. Default: the provider's, written down when the agent is created.
        #[arg(long, value_name = "URL")]
        embedding_base_url: Option<String>,
    },
    /// List agents.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show an agent with its memory.
    Show {
        /// Agent id.
        agent: String,
    },
    /// Point agents at another chat model (each keeps its memory and other settings); refused
    /// when that model is not set up either.
    SetModel {
        /// Model handle, e.g. ollama/llama3.1, anthropic/claude-sonnet-4-5 or local/NAME.
        model: String,
        /// Agent ids.
        #[arg(required_unless_present = "without_model")]
        agents: Vec<String>,
        /// Every agent whose model is not set up now (no provider, no key, a built-in model
        /// not on this computer).
        #[arg(long)]
        without_model: bool,
    },
    /// Delete an agent, its messages and its passages.
    Delete {
        /// Agent id.
        agent: String,
    },
    /// An agent's model endpoints: show them, set its base URL, or accept or dismiss the
    /// ones an imported file asked for.
    #[command(subcommand)]
    Endpoint(crate::trust::EndpointCmd),
}

#[derive(Args)]
pub struct ChatArgs {
    /// Agent id.
    pub agent: String,
    /// Send this one message and print the reply.
    #[arg(long, short)]
    pub message: Option<String>,
    /// Re-run the last turn: undo its messages, memory edits and passages, then send the
    /// same message again (refused, with the blocks named, if someone changed them since).
    #[arg(long, conflicts_with = "message")]
    pub regenerate: bool,
    /// Print the run as Letta's response JSON (messages, stop_reason, usage).
    #[arg(long)]
    pub json: bool,
    /// Approve every tool call that waits for approval (the pending one first, then any the
    /// run asks for). Without --message, only decides what is pending.
    #[arg(long, conflicts_with = "deny_all")]
    pub approve_all: bool,
    /// Deny every tool call that waits for approval; the model reads --reason.
    #[arg(long)]
    pub deny_all: bool,
    /// The reason the model reads for denied calls (with --deny-all).
    #[arg(long, requires = "deny_all")]
    pub reason: Option<String>,
}

#[derive(Subcommand)]
pub enum MemoryCmd {
    /// Show the agent's blocks.
    Show {
        /// Agent id.
        agent: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set a block's value.
    Set {
        /// Agent id.
        agent: String,
        /// Block label.
        label: String,
        /// New value.
        value: String,
        /// Only if the block is still at this version (from `memory show`); refused with the
        /// current value otherwise. Without it the new value replaces whatever is there.
        #[arg(long, value_name = "VERSION")]
        if_version: Option<u64>,
    },
    /// Show a block's edit history.
    History {
        /// Agent id.
        agent: String,
        /// Block label.
        label: String,
    },
    /// Undo one edit (by its id from `memory history`), keeping every later edit; refused when
    /// a later edit rewrote the same text (then `--whole` restores the value before it).
    Undo {
        /// Edit id.
        edit: String,
        /// Only if the block is still at this version; refused otherwise.
        #[arg(long, value_name = "VERSION")]
        if_version: Option<u64>,
        /// Restore the whole value from before the edit, dropping every later edit.
        #[arg(long)]
        whole: bool,
    },
}

#[derive(Subcommand)]
pub enum ArchivalCmd {
    /// Store a passage.
    Add {
        /// Agent id.
        agent: String,
        /// The text.
        text: String,
        /// A tag (repeatable).
        #[arg(long = "tag")]
        tags: Vec<String>,
    },
    /// List passages, newest first (a page read in SQL; filters apply before the limit).
    List {
        /// Agent id.
        agent: String,
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Skip this many passages first.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Oldest first.
        #[arg(long)]
        oldest_first: bool,
        /// Only passages with this tag (repeatable: any of them, all with --all-tags).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// With several --tag: passages need all of them.
        #[arg(long)]
        all_tags: bool,
        /// Only passages created at or after this time (RFC 3339, e.g. 2026-01-31T00:00:00Z).
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// Only passages created at or before this time (RFC 3339).
        #[arg(long)]
        until: Option<chrono::DateTime<chrono::Utc>>,
        /// Also passages that were superseded or merged (the history of facts that changed).
        #[arg(long)]
        include_superseded: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search passages.
    Search {
        /// Agent id.
        agent: String,
        /// Query.
        query: String,
        /// Only passages with this tag (repeatable; any of them).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// How many results.
        #[arg(long, default_value_t = 5)]
        top_k: usize,
        /// Also passages that were superseded or merged (the history of facts that changed).
        #[arg(long)]
        include_superseded: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Embed the passages and messages that have no vector yet (imported, stored during an
    /// embedding outage, or after a model change); resumable.
    Backfill {
        /// Agent id.
        agent: String,
    },
}

#[derive(Subcommand)]
pub enum RecallCmd {
    /// Search the conversation history.
    Search {
        /// Agent id.
        agent: String,
        /// Query.
        query: String,
        /// Only messages of this role: user, assistant or tool (repeatable).
        #[arg(long = "role")]
        roles: Vec<String>,
        /// How many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum ProviderCmd {
    /// Add or change a provider; the key goes to the OS keychain.
    Set {
        /// Handle prefix: openai, anthropic, ollama, lmstudio, or a name of your own.
        name: String,
        /// Base URL with the version path, e.g. http://127.0.0.1:11434/v1.
        #[arg(long)]
        base_url: Option<String>,
        /// Wire protocol (default: anthropic for `anthropic`, else openai).
        #[arg(long, value_parser = ["openai", "anthropic"])]
        kind: Option<String>,
        /// Read the API key from standard input (keeps it out of shell history).
        #[arg(long)]
        api_key_stdin: bool,
        /// Model handle new agents should use, e.g. ollama/llama3.1.
        #[arg(long)]
        default_model: Option<String>,
        /// Seconds to wait for a response to start or continue.
        #[arg(long)]
        timeout: Option<u64>,
        /// Retries on rate limits and server errors.
        #[arg(long)]
        retries: Option<u32>,
    },
    /// List providers (keys are shown only as set / not set).
    List,
    /// Check that a provider answers, and list its models.
    Test {
        /// Provider name.
        name: String,
    },
    /// Remove a provider and its key.
    Delete {
        /// Provider name.
        name: String,
    },
}
