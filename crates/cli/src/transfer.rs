//! `engram import` and `engram export`: Agent Files (.af), Markdown and JSON, through the
//! service layer.

use crate::terminal::safe;
use anyhow::{Context as _, Result, bail};
use clap::{Args, ValueEnum};
use engram_core::AgentId;
use engram_service::Engram;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;

/// Arguments of `engram import`.
#[derive(Args)]
pub struct ImportArgs {
    /// The agent file (.af, v1 or v2); `-` reads standard input.
    pub file: PathBuf,
}

/// Export formats.
#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// Agent File v2 (Letta-compatible, with Engram's extension: lossless).
    Af,
    /// A Markdown document for people (one agent per document).
    Markdown,
    /// Engram's documented JSON shape.
    Json,
}

/// Arguments of `engram export`.
#[derive(Args)]
pub struct ExportArgs {
    /// Agent ids to export.
    pub agents: Vec<String>,
    /// Export every agent.
    #[arg(long, conflicts_with = "agents")]
    pub all: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "af")]
    pub format: ExportFormat,
    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Imports a file and prints the new agent ids, one per line; on stderr, what the file brings
/// that waits for review (tools with code, endpoints, tool rules, MCP servers), warnings, and
/// one `inactive: <agent>: <kind> "<name>": <reason>` line per part kept but not active.
pub async fn import(engram: &Engram, args: ImportArgs) -> Result<()> {
    let limit = engram_service::MAX_FILE_BYTES;
    let bytes = if args.file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .take(limit + 1)
            .read_to_end(&mut buf)
            .context("cannot read standard input")?;
        buf
    } else {
        let path = &args.file;
        let size = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        if size > limit {
            bail!(
                "{} is {size} bytes; agent files larger than {limit} bytes (64 MiB) are refused",
                path.display()
            );
        }
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?
    };
    let file_name = if args.file.as_os_str() == "-" {
        "(standard input)".to_owned()
    } else {
        args.file.file_name().map_or_else(
            || args.file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let report = engram
        .agent_files()
        .import_named(&bytes, &file_name)
        .await?;
    for id in &report.agents {
        println!("{id}");
    }
    crate::trust::print_report(&report);
    for x in &report.inactive {
        eprintln!(
            "inactive: {}: {} \"{}\": {}",
            safe(&x.agent_name),
            kind_word(x.kind),
            safe(&x.name),
            safe(&x.reason)
        );
    }
    Ok(())
}

/// How `engram import` names a kind of inactive part.
fn kind_word(kind: engram_service::InactiveKind) -> &'static str {
    use engram_service::InactiveKind as K;
    match kind {
        K::Tool => "tool",
        K::Skill => "skill",
        K::Source => "document folder",
        K::File => "document",
        K::McpServer => "MCP server",
        K::CompactionSettings => "setting",
        K::Sleeptime => "setting",
    }
}

/// Exports agents in the chosen format to a file or standard output.
pub async fn export(engram: &Engram, args: ExportArgs) -> Result<()> {
    let ids: Vec<AgentId> = if args.all {
        engram
            .agents()
            .list()
            .await?
            .into_iter()
            .map(|a| a.id)
            .collect()
    } else {
        args.agents.into_iter().map(AgentId::from).collect()
    };
    if ids.is_empty() {
        bail!("nothing to export: name agent ids or pass --all");
    }
    let bytes = match args.format {
        ExportFormat::Af => engram.agent_files().export(&ids).await?,
        ExportFormat::Json => engram.agent_files().export_json(&ids).await?,
        ExportFormat::Markdown => {
            let mut docs = Vec::with_capacity(ids.len());
            for id in &ids {
                docs.push(engram.agent_files().export_markdown(id).await?);
            }
            docs.join("\n---\n\n").into_bytes()
        }
    };
    match args.output {
        Some(path) => std::fs::write(&path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout()
            .write_all(&bytes)
            .context("cannot write to standard output")?,
    }
    Ok(())
}
