//! `engram tool …` and `engram template list`: user tools and agent templates.

use crate::terminal::safe;
use anyhow::{Context as _, Result};
use clap::{Subcommand, ValueEnum};
use engram_core::{AgentId, NewTool, Tool};
use engram_service::{Engram, ToolSandboxSettings};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ToolCmd {
    /// Add (or replace, by name) a Python tool; its schema comes from the function's
    /// signature and docstring. Prints the tool's id.
    Add {
        /// The Python file.
        file: PathBuf,
        /// The function to expose, when the file has several.
        #[arg(long)]
        name: Option<String>,
        /// Also attach it to this agent.
        #[arg(long, value_name = "AGENT")]
        attach: Option<String>,
    },
    /// List every tool: built-ins and user tools, with whether they can run here.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a tool (id or name) with its schema and source, as JSON.
    Show {
        /// Tool id or name.
        tool: String,
    },
    /// Attach a tool to an agent.
    Attach {
        /// Agent id.
        agent: String,
        /// Tool id or name.
        tool: String,
    },
    /// Detach a tool from an agent (the tool stays).
    Detach {
        /// Agent id.
        agent: String,
        /// Tool id or name.
        tool: String,
    },
    /// Delete a user tool and detach it from every agent.
    Delete {
        /// Tool id or name.
        tool: String,
    },
    /// Review a tool's source and trust it, so agents can run it. Code from agent files does
    /// not run until trusted; trust is bound to the source's SHA-256 (a changed source is
    /// untrusted again). Asks on a terminal; scripts pass the hash shown.
    Trust {
        /// Tool id or name.
        tool: String,
        /// The SHA-256 of the source you reviewed (from `engram tool show` or the prompt).
        #[arg(long)]
        hash: Option<String>,
    },
    /// Withdraw trust: the tool stops running until trusted again.
    Untrust {
        /// Tool id or name.
        tool: String,
    },
    /// Change what a user tool may do when it runs (both are off unless you turn them on).
    Set {
        /// Tool id or name.
        tool: String,
        /// Let the tool use the network (off: it reaches nothing but Engram's local API).
        #[arg(long, value_name = "on|off")]
        network: Option<Switch>,
        /// Let the tool run without a sandbox where none is available (it then has your
        /// user account's full access: only for code you trust).
        #[arg(long, value_name = "on|off")]
        unsandboxed: Option<Switch>,
    },
    /// Ask before running (Letta's `requires_approval` rule): when the agent calls this tool,
    /// the run waits until you approve or deny the call.
    Approval {
        /// Agent id.
        agent: String,
        /// Tool id or name (built-in or your own).
        tool: String,
        /// on: ask first; off: run without asking.
        #[arg(value_name = "on|off")]
        state: Switch,
    },
}

/// `on` or `off`.
#[derive(Clone, Copy, ValueEnum)]
pub enum Switch {
    /// Allowed.
    On,
    /// Not allowed.
    Off,
}

impl From<Switch> for bool {
    fn from(s: Switch) -> bool {
        matches!(s, Switch::On)
    }
}

#[derive(Subcommand)]
pub enum PythonCmd {
    /// Which Python tools run in and whether it has letta-client.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a Python environment in the data directory with letta-client installed (for
    /// tools that call Engram back, as Letta's tutorials write them) and run tools in it.
    Setup {
        /// What pip installs instead of the tutorials' letta-client (e.g. `letta-client`
        /// for the newest).
        #[arg(long, value_name = "REQUIREMENT")]
        requirement: Option<String>,
    },
}

/// Runs `engram python …`.
pub fn python(engram: &Engram, cmd: PythonCmd) -> Result<()> {
    let status = match cmd {
        PythonCmd::Status { json: true } => {
            println!(
                "{}",
                serde_json::to_string_pretty(&engram.tools().python())?
            );
            return Ok(());
        }
        PythonCmd::Status { json: false } => engram.tools().python(),
        PythonCmd::Setup { requirement } => {
            engram
                .tools()
                .set_up_python(requirement.as_deref(), &mut |line| {
                    eprintln!("{}", safe(line));
                })?
        }
    };
    let managed = if status.managed {
        " (set up by Engram)"
    } else {
        ""
    };
    println!("python: {}{managed}", safe(&status.program));
    match (&status.unavailable, &status.letta_client) {
        (Some(why), _) => println!("unavailable: {}", safe(why)),
        (None, Some(v)) => println!("letta-client: {}", safe(v)),
        (None, None) => println!(
            "letta-client: not installed (tools that call Engram back need it: `engram python setup`)"
        ),
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum TemplateCmd {
    /// List the agent templates (`engram agent create --template ID`).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn line(t: &Tool) -> String {
    let state = match (&t.unavailable_reason, t.available) {
        (_, true) => String::new(),
        (Some(why), false) => format!("  [unavailable: {why}]"),
        (None, false) => "  [unavailable]".into(),
    };
    let mut grants = String::new();
    if t.network {
        grants.push_str("  [network]");
    }
    if t.allow_unsandboxed {
        grants.push_str("  [may run unsandboxed]");
    }
    let trust = if t.trusted {
        String::new()
    } else {
        format!("  [untrusted: from {}]", t.origin.describe())
    };
    let kind = match &t.mcp {
        Some(m) => format!("mcp: {}", m.server_name),
        None => t.language.as_str().to_owned(),
    };
    safe(&format!(
        "{}  {}  ({kind}){grants}{state}{trust}",
        t.id, t.name
    ))
    .into_owned()
}

fn names(tools: &[Tool]) -> String {
    tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

pub async fn tool(engram: &Engram, cmd: ToolCmd) -> Result<()> {
    match cmd {
        ToolCmd::Add { file, name, attach } => {
            let source = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let tool = engram
                .tools()
                .upsert(NewTool {
                    source_code: source,
                    name,
                    ..NewTool::default()
                })
                .await?;
            if let Some(agent) = attach {
                engram
                    .tools()
                    .attach(&AgentId::from(agent), &tool.id)
                    .await?;
            }
            if let Some(why) = &tool.unavailable_reason {
                eprintln!("note: {} cannot run here yet: {}", tool.name, safe(why));
            }
            println!("{}", tool.id);
        }
        ToolCmd::List { json } => {
            let tools = engram.tools().list().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&tools)?);
            } else {
                for t in &tools {
                    println!("{}", line(t));
                }
            }
        }
        ToolCmd::Show { tool } => {
            let t = engram.tools().find(&tool).await?;
            println!("{}", crate::terminal::json(&t)?);
        }
        ToolCmd::Trust { tool, hash } => crate::trust::trust_tool(engram, &tool, hash).await?,
        ToolCmd::Untrust { tool } => {
            let t = engram.tools().untrust(&tool).await?;
            println!("untrusted {}", t.name);
        }
        ToolCmd::Approval { agent, tool, state } => {
            let name = engram.tools().find(&tool).await?.name;
            let on = bool::from(state);
            crate::approval::set_rule(engram, &agent, &name, on).await?;
        }
        ToolCmd::Attach { agent, tool } => {
            let t = engram.tools().find(&tool).await?;
            let tools = engram.tools().attach(&AgentId::from(agent), &t.id).await?;
            println!("{}", names(&tools));
        }
        ToolCmd::Detach { agent, tool } => {
            let t = engram.tools().find(&tool).await?;
            let tools = engram.tools().detach(&AgentId::from(agent), &t.id).await?;
            println!("{}", names(&tools));
        }
        ToolCmd::Set {
            tool,
            network,
            unsandboxed,
        } => {
            if network.is_none() && unsandboxed.is_none() {
                anyhow::bail!(
                    "nothing to change: give --network on|off and/or --unsandboxed on|off"
                );
            }
            let t = engram.tools().find(&tool).await?;
            let t = engram
                .tools()
                .set_sandbox(
                    &t.id,
                    ToolSandboxSettings {
                        network: network.map(bool::from),
                        allow_unsandboxed: unsandboxed.map(bool::from),
                    },
                )
                .await?;
            println!("{}", line(&t));
        }
        ToolCmd::Delete { tool } => {
            let t = engram.tools().find(&tool).await?;
            engram.tools().delete(&t.id).await?;
            println!("deleted {}", t.name);
        }
    }
    Ok(())
}

pub fn template(engram: &Engram, cmd: TemplateCmd) -> Result<()> {
    match cmd {
        TemplateCmd::List { json } => {
            let templates = engram.agents().templates();
            if json {
                println!("{}", serde_json::to_string_pretty(&templates)?);
            } else {
                for t in &templates {
                    println!("{}  {}: {}", t.id, safe(&t.name), safe(&t.description));
                }
            }
        }
    }
    Ok(())
}
