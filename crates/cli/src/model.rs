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
    /// List the registered models.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
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

pub async fn model(engram: &Engram, cmd: ModelCmd) -> Result<()> {
    match cmd {
        ModelCmd::Add { file, ctx, default } => {
            let m = engram.add_local_model(&file, ctx)?;
            if default {
                engram.set_default_local_model(&m.name)?;
            }
            println!("{}", m.handle);
        }
        ModelCmd::List { json } => {
            let models = engram.list_local_models()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&models)?);
            } else if models.is_empty() {
                println!("no built-in chat models: add a GGUF file with `engram model add FILE`");
            } else {
                let default = engram.default_model()?;
                for m in &models {
                    let mark = if m.handle == default { "* " } else { "  " };
                    println!("{mark}{}", safe(&line(m)));
                }
            }
        }
        ModelCmd::Rm { name } => {
            engram.remove_local_model(&name).await?;
            println!("removed {}", safe(&name));
        }
        ModelCmd::Default { name } => {
            let m = engram.set_default_local_model(&name)?;
            println!("new agents get {}", m.handle);
        }
    }
    Ok(())
}
