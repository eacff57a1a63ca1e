//! `engram tool trust` and `engram agent endpoint …`: the user's trust decisions on the
//! command line, and the import report that asks for them.

use crate::terminal::safe;
use anyhow::{Result, bail};
use clap::{Subcommand, ValueEnum};
use engram_core::{AgentId, EndpointKind, Tool};
use engram_service::{AgentEndpoints, Engram, ImportReport};
use std::io::{BufRead as _, IsTerminal as _};

/// Which model an endpoint command is about.
#[derive(Clone, Copy, ValueEnum)]
pub enum KindArg {
    /// The chat model.
    Llm,
    /// The embedding model.
    Embedding,
}

impl From<KindArg> for EndpointKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Llm => EndpointKind::Llm,
            KindArg::Embedding => EndpointKind::Embedding,
        }
    }
}

#[derive(Subcommand)]
pub enum EndpointCmd {
    /// Show where the agent's model calls go and what waits for approval.
    Show {
        /// Agent id.
        agent: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set the agent's own base URL (a stored key still goes only to its provider's host).
    Set {
        /// Agent id.
        agent: String,
        /// The base URL with the version path, e.g. http://127.0.0.1:11434/v1.
        url: String,
        /// For the chat model (default) or the embedding model.
        #[arg(long, value_enum, default_value = "llm")]
        kind: KindArg,
    },
    /// Clear the agent's own base URL: use its provider's.
    Clear {
        /// Agent id.
        agent: String,
        /// For the chat model (default) or the embedding model.
        #[arg(long, value_enum, default_value = "llm")]
        kind: KindArg,
    },
    /// Accept the endpoints an imported file asked for (all, or one kind).
    Accept {
        /// Agent id.
        agent: String,
        /// Only this kind.
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
    },
    /// Drop an endpoint an imported file asked for, unused.
    Dismiss {
        /// Agent id.
        agent: String,
        /// Which one.
        #[arg(long, value_enum, default_value = "llm")]
        kind: KindArg,
    },
}

fn print_endpoints(e: &AgentEndpoints) {
    let or_provider = |u: &Option<String>| {
        u.as_deref()
            .map_or_else(|| "(the provider's)".to_owned(), |u| safe(u).into_owned())
    };
    println!("model      {}", safe(&e.llm_model));
    println!("base URL   {}", or_provider(&e.llm_base_url));
    if let Some(url) = &e.llm_effective_url {
        println!("requests   {}", safe(url));
    }
    if let Some(m) = &e.embedding_model {
        println!("embedding  {}", safe(m));
        println!("base URL   {}", or_provider(&e.embedding_base_url));
    }
    for p in &e.pending {
        println!(
            "pending    {} {} from {} (not used until you run `engram agent endpoint accept {}`)",
            p.kind.as_str(),
            safe(&p.base_url),
            safe(&p.source),
            p.agent_id
        );
    }
}

pub async fn endpoint(engram: &Engram, cmd: EndpointCmd) -> Result<()> {
    let shown = match cmd {
        EndpointCmd::Show { agent, json } => {
            let e = engram.trust().endpoints(&AgentId::from(agent)).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&e)?);
                return Ok(());
            }
            e
        }
        EndpointCmd::Set { agent, url, kind } => {
            engram
                .trust()
                .set_base_url(&AgentId::from(agent), kind.into(), Some(&url))
                .await?
        }
        EndpointCmd::Clear { agent, kind } => {
            engram
                .trust()
                .set_base_url(&AgentId::from(agent), kind.into(), None)
                .await?
        }
        EndpointCmd::Accept { agent, kind } => {
            engram
                .trust()
                .accept_endpoint(&AgentId::from(agent), kind.map(Into::into))
                .await?
        }
        EndpointCmd::Dismiss { agent, kind } => {
            engram
                .trust()
                .dismiss_endpoint(&AgentId::from(agent), kind.into())
                .await?
        }
    };
    print_endpoints(&shown);
    Ok(())
}

/// Shows the tool's origin, source and hash on stderr (the review before trusting).
fn review(t: &Tool) {
    eprintln!("tool {} from {}", t.name, safe(&t.origin.describe()));
    eprintln!("----- source -----");
    eprintln!("{}", safe(t.source_code.as_deref().unwrap_or("")));
    eprintln!("------------------");
    eprintln!(
        "sha256 {}  ({})",
        t.source_hash.as_deref().unwrap_or("-"),
        if t.trusted { "trusted" } else { "not trusted" }
    );
}

/// `engram tool trust`: shows the source and its hash, then trusts exactly that source —
/// after a yes on a terminal, or when `--hash` names it (for scripts).
pub async fn trust_tool(engram: &Engram, name: &str, hash: Option<String>) -> Result<()> {
    let t = engram.tools().find(name).await?;
    review(&t);
    let shown = t.source_hash.clone().unwrap_or_default();
    let expected = match hash {
        Some(h) => h,
        None if std::io::stdin().is_terminal() => {
            eprint!("Trust this code? It will run when the agent calls it. [y/N] ");
            let mut answer = String::new();
            std::io::stdin().lock().read_line(&mut answer)?;
            if !matches!(answer.trim(), "y" | "Y" | "yes") {
                bail!("not trusted");
            }
            shown
        }
        None => bail!(
            "review the source above, then run `engram tool trust {} --hash {shown}`",
            t.name
        ),
    };
    let t = engram.tools().trust(t.id.as_str(), &expected).await?;
    println!(
        "trusted {} sha256:{}",
        t.name,
        t.trusted_hash.unwrap_or_default()
    );
    Ok(())
}

/// Prints what an import brought, for review, on stderr (stdout keeps the agent ids).
pub fn print_report(r: &ImportReport) {
    for d in &r.details {
        let has_something =
            !d.tools.is_empty() || !d.endpoints.is_empty() || !d.tool_rules.is_empty();
        if !has_something {
            continue;
        }
        eprintln!(
            "agent {} ({}) from {}:",
            safe(&d.name),
            d.agent_id,
            safe(&r.file_name)
        );
        for t in &d.tools {
            let state = if t.trusted {
                "trusted"
            } else {
                "NOT TRUSTED — will not run"
            };
            let renamed = if t.name != t.requested_name {
                format!(" (the file calls it '{}')", safe(&t.requested_name))
            } else {
                String::new()
            };
            eprintln!(
                "  tool with code: {}{renamed}  [{state}]  sha256 {}",
                t.name, t.source_hash
            );
        }
        for e in &d.endpoints {
            eprintln!(
                "  endpoint ({}): {}  [pending — not used until accepted]",
                e.kind.as_str(),
                safe(&e.base_url)
            );
        }
        for rule in &d.tool_rules {
            let text = serde_json::to_string(rule).unwrap_or_default();
            eprintln!("  tool rule: {}", safe(&text));
        }
    }
    for m in &r.mcp_servers {
        eprintln!(
            "  MCP server {} ({}): {}  [not connected]",
            safe(&m.name),
            safe(&m.kind),
            safe(&m.target)
        );
    }
    if r.needs_review() {
        eprintln!(
            "Review before use: `engram tool show NAME` then `engram tool trust NAME`; \
             `engram agent endpoint show AGENT` then `engram agent endpoint accept AGENT`."
        );
    }
    for w in &r.warnings {
        eprintln!("warning: {}", safe(w));
    }
}
