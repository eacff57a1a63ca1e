//! `engram model …`: the built-in chat models, GGUF files on this computer that Engram runs
//! itself (`local/<name>` handles, usable as any agent's `--model`).

use crate::terminal::safe;
use anyhow::Result;
use clap::Subcommand;
use engram_service::{Engram, LocalChatModel};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ModelCmd {
    /// Register a GGUF chat model from disk and print its handle (local/<file name>).
    Add {
        /// The .gguf file.
        file: PathBuf,
        /// Context size in tokens (default: the model's training context, at most 4096).
        #[arg(long, value_name = "TOKENS")]
        ctx: Option<u32>,
        /// Also make it the model new agents get.
        #[arg(long)]
        default: bool,
    },
    /// List the registered models, or with --catalogue the recommended ones `pull` downloads.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// List the catalogue of recommended models (size, memory, licence, tool calling).
        #[arg(long)]
        catalogue: bool,
    },
    /// Download a catalogue model (see `list --catalogue`), check its SHA-256 and register it.
    /// Ctrl-C stops it; running it again resumes.
    Pull {
        /// Its name, e.g. smollm2-135m-instruct-q4_1.
        name: String,
        /// Also make it the model new agents get.
        #[arg(long)]
        default: bool,
    },
    /// Forget a registered model (the file stays where it is).
    Rm {
        /// Its name or handle.
        name: String,
    },
    /// Make a registered model the one new agents get.
    Default {
        /// Its name or handle.
        name: String,
    },
}

fn line(m: &LocalChatModel) -> String {
    format!(
        "{}  {} tokens  {:.0} MB  {}",
        m.handle,
        m.context_window,
        m.bytes as f64 / 1e6,
        m.path
    )
}

fn gb(bytes: u64) -> String {
    if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else {
        format!("{:.0} MB", bytes as f64 / 1e6)
    }
}

fn catalogue(engram: &Engram, json: bool) -> Result<()> {
    let entries = engram.models().catalogue()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(());
    }
    for e in &entries {
        let m = &e.model;
        let size = if m.pinned {
            gb(m.bytes)
        } else {
            format!("~{}", gb(m.bytes))
        };
        let state = if e.registered {
            "registered".to_owned()
        } else if e.downloaded {
            "downloaded".to_owned()
        } else if e.partial_bytes > 0 {
            format!("{} kept, pull resumes", gb(e.partial_bytes))
        } else {
            String::new()
        };
        println!(
            "{}",
            safe(&format!(
                "{:<32} {:>8}  RAM {:>6}  tools: {:<5}  {}  {}",
                m.name,
                size,
                gb(m.ram_bytes),
                m.tool_calling,
                m.licence,
                state
            ))
        );
    }
    println!(
        "sizes with ~ are approximate; those files are checked against the SHA-256 the server states"
    );
    Ok(())
}

async fn pull(engram: &Engram, name: &str, default: bool) -> Result<()> {
    use std::io::{IsTerminal, Write};
    let tty = std::io::stderr().is_terminal();
    let last_tenth = std::sync::atomic::AtomicU64::new(u64::MAX);
    let progress = |done: u64, total: Option<u64>| {
        let line = match total {
            Some(t) if t > 0 => format!(
                "{} of {} ({:.0}%)",
                gb(done),
                gb(t),
                done as f64 * 100.0 / t as f64
            ),
            _ => gb(done),
        };
        if tty {
            eprint!("\r{line}    ");
            let _ = std::io::stderr().flush();
        } else {
            // One line per tenth when stderr is a file or a pipe.
            let tenth = total.filter(|t| *t > 0).map_or(0, |t| done * 10 / t);
            if last_tenth.swap(tenth, std::sync::atomic::Ordering::Relaxed) != tenth {
                eprintln!("{line}");
            }
        }
    };
    let stop = async {
        crate::serve::stop_signal().await;
        engram.models().cancel_pull(name);
        // The download ends itself once it sees the cancel.
        std::future::pending::<()>().await
    };
    let result = tokio::select! {
        r = engram.models().pull(name, &progress) => r,
        () = stop => unreachable!("the stop future never ends"),
    };
    if tty {
        eprintln!();
    }
    match result {
        Ok(m) => {
            if default {
                engram.models().set_default_local(&m.name)?;
            }
            println!("{}", m.handle);
            Ok(())
        }
        Err(engram_core::Error::Cancelled) => {
            eprintln!(
                "stopped; what arrived is kept in {} — `engram model pull {}` resumes",
                engram.models().dir().display(),
                safe(name)
            );
            std::process::exit(130);
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn model(engram: &Engram, cmd: ModelCmd) -> Result<()> {
    match cmd {
        ModelCmd::Add { file, ctx, default } => {
            let m = engram.models().add_local(&file, ctx)?;
            if default {
                engram.models().set_default_local(&m.name)?;
            }
            println!("{}", m.handle);
        }
        ModelCmd::List {
            json,
            catalogue: true,
        } => catalogue(engram, json)?,
        ModelCmd::Pull { name, default } => pull(engram, &name, default).await?,
        ModelCmd::List { json, .. } => {
            let models = engram.models().list_local()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&models)?);
            } else if models.is_empty() {
                println!("no built-in chat models: add a GGUF file with `engram model add FILE`");
            } else {
                let default = engram.models().default_chat()?;
                for m in &models {
                    let mark = if m.handle == default { "* " } else { "  " };
                    println!("{mark}{}", safe(&line(m)));
                }
            }
        }
        ModelCmd::Rm { name } => {
            engram.models().remove_local(&name).await?;
            println!("removed {}", safe(&name));
        }
        ModelCmd::Default { name } => {
            let m = engram.models().set_default_local(&name)?;
            println!("new agents get {}", m.handle);
        }
    }
    Ok(())
}
