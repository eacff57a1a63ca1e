//! `engram mcp serve` and `engram mcp client …`: Engram's memory as an MCP server for other AI
//! tools (stdio, or streamable HTTP on loopback for configured clients with tokens).

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use engram_core::ClientWriteId;
use engram_service::Engram;
use engram_service::mcp_memory::{Access, DEFAULT_APPROVAL_TIMEOUT, Launch, PasteFor};
use secrecy::ExposeSecret;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// The default port of the HTTP transport (the REST API's plus one).
const DEFAULT_PORT: u16 = 8284;

/// Options of `engram mcp serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// An agent whose memory to serve, by id or name (repeatable; with several, each gets a
    /// directory under /memories).
    #[arg(long = "agent", value_name = "ID_OR_NAME", required = true)]
    pub agents: Vec<String>,
    /// Let the client read but not change memory (stdio).
    #[arg(long)]
    pub read_only: bool,
    /// An agent the client may read but not change (repeatable; stdio).
    #[arg(long = "read-only-agent", value_name = "ID_OR_NAME")]
    pub read_only_agents: Vec<String>,
    /// Every write of the client waits for your approval in the window (stdio).
    #[arg(long)]
    pub approve_writes: bool,
    /// An agent whose memory the client changes only with your approval (repeatable; stdio).
    #[arg(long = "approve-writes-agent", value_name = "ID_OR_NAME")]
    pub approve_agents: Vec<String>,
    /// How long a write waits for your approval before it is withdrawn (seconds).
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_APPROVAL_TIMEOUT.as_secs())]
    pub approval_timeout: u64,
    /// The name the client's writes are recorded under (stdio); by default the name the
    /// client introduces itself with.
    #[arg(long, value_name = "NAME")]
    pub client: Option<String>,
    /// Serve streamable HTTP on loopback instead of stdio, to the clients added with
    /// `engram mcp client add` (each with its token and access).
    #[arg(long)]
    pub http: bool,
    /// Loopback address for --http (127.0.0.1, ::1 or localhost).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port for --http; 0 picks a free one (the address is printed).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// With --http, print each client's bearer token (`token NAME: …`) after the address.
    #[arg(long, requires = "http")]
    pub show_tokens: bool,
    /// Print the configuration block a client reads to launch this server over stdio, then
    /// exit.
    #[arg(long, value_enum, value_name = "CLIENT")]
    pub print_config: Option<PasteClient>,
}

impl ServeArgs {
    /// The stdio client's access as the flags give it.
    fn access(&self) -> Access {
        Access {
            read_only: self.read_only,
            read_only_agents: self.read_only_agents.clone(),
            approve_writes: self.approve_writes,
            approve_agents: self.approve_agents.clone(),
        }
    }
}

/// The clients `--print-config` knows.
#[derive(Clone, Copy, ValueEnum)]
pub enum PasteClient {
    /// Claude Code (.mcp.json) and Claude Desktop: `mcpServers` JSON.
    Claude,
    /// Cursor (~/.cursor/mcp.json): `mcpServers` JSON.
    Cursor,
    /// OpenAI Codex CLI (~/.codex/config.toml): TOML.
    Codex,
}

/// `engram mcp client …`: the clients of the HTTP transport.
#[derive(Subcommand)]
pub enum ClientCmd {
    /// Add (or reconfigure) a client and print its bearer token (kept in the keychain).
    Add {
        /// Its name: the author of its writes in block history.
        name: String,
        /// It may read but not change memory.
        #[arg(long)]
        read_only: bool,
        /// An agent it may read but not change (repeatable).
        #[arg(long = "read-only-agent", value_name = "ID_OR_NAME")]
        read_only_agents: Vec<String>,
        /// Every write of the client waits for your approval in the window.
        #[arg(long)]
        approve_writes: bool,
        /// An agent whose memory it changes only with your approval (repeatable).
        #[arg(long = "approve-writes-agent", value_name = "ID_OR_NAME")]
        approve_agents: Vec<String>,
    },
    /// List the clients and their recent writes.
    List,
    /// Remove a client and its token.
    Remove {
        /// The client's name.
        name: String,
    },
    /// List the writes of clients waiting for your approval, with their ids.
    Pending,
    /// Approve a client's write: it is applied now, to memory as it is now.
    Approve {
        /// The write's id (`client_write-…`, from `engram mcp client pending`).
        id: String,
    },
    /// Deny a client's write: the client is told you declined, and nothing changes.
    Deny {
        /// The write's id (`client_write-…`, from `engram mcp client pending`).
        id: String,
        /// Why, passed on to the client.
        #[arg(long)]
        reason: Option<String>,
    },
}

/// Runs `engram mcp serve`.
pub async fn serve(engram: Arc<Engram>, args: ServeArgs) -> Result<()> {
    if let Some(for_client) = args.print_config {
        return print_config(&engram, &args, for_client);
    }
    if args.http {
        return serve_http(engram, &args).await;
    }
    let name = args
        .client
        .clone()
        .unwrap_or_else(|| "mcp-client".to_owned());
    let mut client = engram
        .memory_server()
        .client(&name, &args.agents, &args.access())?;
    client.approval_timeout = Duration::from_secs(args.approval_timeout);
    engram_mcp_memory::serve_stdio(engram.clone(), client, args.client.is_some())
        .await
        .context("serving MCP on stdio")?;
    engram.checkpoint()?;
    Ok(())
}

async fn serve_http(engram: Arc<Engram>, args: &ServeArgs) -> Result<()> {
    if args.access() != Access::default() || args.client.is_some() {
        bail!(
            "--read-only, --read-only-agent, --approve-writes, --approve-writes-agent and --client are for stdio; over HTTP each client's access is set with `engram mcp client add`"
        );
    }
    let server = engram_mcp_memory::serve_http(
        engram.clone(),
        &args.agents,
        &args.host,
        args.port,
        Duration::from_secs(args.approval_timeout),
    )
    .await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {}", server.url())?;
    if args.show_tokens {
        for (client, token) in server.clients() {
            writeln!(out, "token {}: {}", client.name, token.expose_secret())?;
        }
    }
    out.flush()?;
    drop(out);
    crate::serve::stop_signal().await;
    server.stop().await;
    engram.checkpoint()?;
    Ok(())
}

fn print_config(engram: &Engram, args: &ServeArgs, for_client: PasteClient) -> Result<()> {
    let program = std::env::current_exe()
        .context("cannot tell where the engram program is")?
        .display()
        .to_string();
    let launch = Launch {
        agents: args.agents.clone(),
        read_only: args.read_only,
        read_only_agents: args.read_only_agents.clone(),
        client: args.client.clone(),
        approve_writes: args.approve_writes,
        approve_agents: args.approve_agents.clone(),
    };
    let for_client = match for_client {
        PasteClient::Claude => PasteFor::Claude,
        PasteClient::Cursor => PasteFor::Cursor,
        PasteClient::Codex => PasteFor::Codex,
    };
    println!(
        "{}",
        engram
            .memory_server()
            .config(for_client, &program, &launch)?
    );
    Ok(())
}

/// Runs `engram mcp client …`.
pub async fn client(engram: &Engram, cmd: ClientCmd) -> Result<()> {
    match cmd {
        ClientCmd::Add {
            name,
            read_only,
            read_only_agents,
            approve_writes,
            approve_agents,
        } => {
            let access = Access {
                read_only,
                read_only_agents,
                approve_writes,
                approve_agents,
            };
            let (_, token) = engram.memory_server().add_client(&name, &access)?;
            println!("{}", token.expose_secret());
        }
        ClientCmd::List => {
            let edits = engram.memory_server().client_edits(200)?;
            for c in engram.memory_server().clients()? {
                let access = if c.read_only {
                    "read-only".to_owned()
                } else if c.read_only_agents.is_empty() {
                    "read-write".to_owned()
                } else {
                    format!("read-write, read-only for {}", c.read_only_agents.len())
                };
                let access = if c.approve_writes {
                    format!("{access}, writes wait for approval")
                } else if !c.approve_agents.is_empty() {
                    format!(
                        "{access}, writes wait for approval for {}",
                        c.approve_agents.len()
                    )
                } else {
                    access
                };
                let last = edits.iter().find(|e| e.client == c.name).map_or_else(
                    || "no writes yet".to_owned(),
                    |e| {
                        format!(
                            "last write {} to '{}'",
                            e.created_at.format("%Y-%m-%d %H:%M"),
                            e.label
                        )
                    },
                );
                println!("{}  [{access}]  {last}", c.name);
            }
        }
        ClientCmd::Remove { name } => engram.memory_server().remove_client(&name)?,
        ClientCmd::Pending => {
            for w in engram.memory_server().pending_writes()? {
                println!(
                    "{}  {} → {} ({}): {}",
                    w.id, w.client, w.agent_name, w.path, w.summary
                );
            }
        }
        ClientCmd::Approve { id } => {
            let outcome = engram
                .memory_server()
                .decide_write(&ClientWriteId::from(id), true, None)
                .await?;
            println!("{}: {}", outcome.status, outcome.message);
        }
        ClientCmd::Deny { id, reason } => {
            let outcome = engram
                .memory_server()
                .decide_write(&ClientWriteId::from(id), false, reason.as_deref())
                .await?;
            println!("{}: {}", outcome.status, outcome.message);
        }
    }
    Ok(())
}
