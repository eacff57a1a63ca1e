//! `engram mcp …`: MCP servers. Adding one is the user's act (a stdio server runs as you);
//! servers from a pasted `mcpServers` config are stored inactive until accepted.

use crate::terminal::{json, safe};
use anyhow::{Context as _, Result, bail};
use clap::Subcommand;
use engram_core::{McpServer, McpTransport, NewMcpServer, NewMcpTransport};
use engram_service::Engram;
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum McpCmd {
    /// Add a server: a program speaking MCP on stdio (`engram mcp add NAME -- npx -y PKG`),
    /// or a streamable-HTTP URL (`engram mcp add NAME --url https://…/mcp`). A stdio server
    /// runs with your user account's rights: add only programs you trust.
    Add {
        /// The server's name: letters, digits and `_` (its tools are named `NAME__TOOL`).
        name: String,
        /// The server's streamable-HTTP endpoint (instead of a command).
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// Read a bearer token for the URL from stdin (kept in the OS keychain).
        #[arg(long, requires = "url")]
        token_stdin: bool,
        /// An environment variable for the program, `NAME=VALUE` (values go to the keychain).
        #[arg(long, value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// The program and its arguments, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// List servers: how each is reached, whether it is active, where it came from.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Connect to a server, list its tools and store them (attach one with
    /// `engram tool attach AGENT NAME__TOOL`).
    Test {
        /// Server name or id.
        server: String,
        /// Print the tools as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a server, its tools (detached from every agent) and its secrets.
    Remove {
        /// Server name or id.
        server: String,
    },
    /// Accept a server that came from a file, so it may be started and called.
    Accept {
        /// Server name or id.
        server: String,
    },
    /// Deactivate a server (its tools then fail, saying so, until accepted again).
    Disable {
        /// Server name or id.
        server: String,
    },
    /// Store the servers of an `mcpServers` JSON block (Claude Desktop, Jan, Cursor) as
    /// inactive; accept each with `engram mcp accept NAME` after checking it.
    Import {
        /// The JSON file (e.g. claude_desktop_config.json).
        file: PathBuf,
    },
    /// Serve agents' memory to other AI tools (Claude Code, Cursor, Codex…) as an MCP server:
    /// over stdio, or streamable HTTP on loopback with --http.
    Serve(crate::mcp_memory::ServeArgs),
    /// The clients of `engram mcp serve --http`: add (prints a token), list, remove.
    #[command(subcommand)]
    Client(crate::mcp_memory::ClientCmd),
}

fn describe(s: &McpServer) -> String {
    let target = match &s.transport {
        McpTransport::Stdio {
            command,
            args,
            env_keys,
        } => {
            let env = if env_keys.is_empty() {
                String::new()
            } else {
                format!(" (env: {})", env_keys.join(", "))
            };
            format!("stdio  {} {}{env}", command, args.join(" "))
        }
        McpTransport::StreamableHttp {
            url,
            has_token,
            url_secret,
        } => format!(
            "http   {url}{}{}",
            if *has_token { " (token set)" } else { "" },
            if *url_secret {
                " (URL credentials in the keychain)"
            } else {
                ""
            }
        ),
    };
    let state = if s.active {
        "active".to_owned()
    } else {
        format!("inactive, from {}", s.source)
    };
    format!("{}  {}  [{state}]", s.name, target.trim_end())
}

/// Runs `engram mcp …`.
pub async fn mcp(engram: &std::sync::Arc<Engram>, cmd: McpCmd) -> Result<()> {
    match cmd {
        McpCmd::Serve(args) => crate::mcp_memory::serve(engram.clone(), args).await?,
        McpCmd::Client(cmd) => crate::mcp_memory::client(engram, cmd).await?,
        McpCmd::Add {
            name,
            url,
            token_stdin,
            env,
            command,
        } => {
            let transport = match url {
                Some(url) => {
                    if !env.is_empty() {
                        bail!("--env is for stdio servers; an HTTP server takes --token-stdin");
                    }
                    let token = if token_stdin {
                        let mut t = String::new();
                        std::io::stdin()
                            .read_to_string(&mut t)
                            .context("reading the token from stdin")?;
                        Some(t.trim().to_owned())
                    } else {
                        None
                    };
                    NewMcpTransport::StreamableHttp { url, token }
                }
                None => {
                    let Some((program, args)) = command.split_first() else {
                        bail!(
                            "give the server's command after `--` (engram mcp add NAME -- npx -y PKG) or --url URL"
                        );
                    };
                    let mut vars = BTreeMap::new();
                    for pair in env {
                        let Some((k, v)) = pair.split_once('=') else {
                            bail!("--env takes NAME=VALUE, got '{pair}'");
                        };
                        vars.insert(k.to_owned(), v.to_owned());
                    }
                    NewMcpTransport::Stdio {
                        command: program.clone(),
                        args: args.to_vec(),
                        env: vars,
                    }
                }
            };
            let server = engram.mcp().add_server(NewMcpServer { name, transport })?;
            println!("{}", server.id);
        }
        McpCmd::List { json: true } => println!("{}", json(&engram.mcp().list()?)?),
        McpCmd::List { json: false } => {
            for s in engram.mcp().list()? {
                println!("{}", safe(&describe(&s)));
            }
        }
        McpCmd::Test {
            server,
            json: as_json,
        } => {
            let tools = engram.mcp().list_tools(&server).await?;
            if as_json {
                println!("{}", json(&tools)?);
            } else {
                println!("ok: {} tools", tools.len());
                for t in tools {
                    println!("  {}  {}", t.name, safe(&t.description));
                }
            }
        }
        McpCmd::Remove { server } => engram.mcp().remove(&server).await?,
        McpCmd::Accept { server } => {
            let s = engram.mcp().set_active(&server, true).await?;
            println!("{}", safe(&describe(&s)));
        }
        McpCmd::Disable { server } => {
            let s = engram.mcp().set_active(&server, false).await?;
            println!("{}", safe(&describe(&s)));
        }
        McpCmd::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let source = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| file.display().to_string());
            for s in engram.mcp().import(&text, &source)? {
                println!(
                    "{}",
                    safe(&format!(
                        "inactive: {} — check it, then `engram mcp accept {}`",
                        describe(&s),
                        s.name
                    ))
                );
            }
        }
    }
    Ok(())
}
