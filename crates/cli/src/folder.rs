//! `engram folder …`: folders of documents agents read — create, add files or directories,
//! link one to a directory on disk (watch, unwatch), list, attach to an agent, detach, remove.

use crate::terminal::safe;
use anyhow::Result;
use clap::Subcommand;
use engram_core::{AgentId, EmbeddingConfig, FileStatus, FolderFile, NewFolder};
use engram_service::Engram;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum FolderCmd {
    /// Create a folder and print its id.
    Create {
        /// Its name (unique).
        name: String,
        /// What it holds.
        #[arg(long, default_value = "")]
        description: String,
        /// Guidance for the agents it is attached to.
        #[arg(long, default_value = "")]
        instructions: String,
        /// Embedding model (provider/model), or `none` for words alone; default: the default
        /// embedding model.
        #[arg(long)]
        embedding: Option<String>,
        /// The embedding server's base URL (with --embedding).
        #[arg(long, requires = "embedding")]
        embedding_base_url: Option<String>,
    },
    /// Add files, or directories (their files, hidden ones left out), to a folder. Symbolic
    /// links are not followed. An unchanged file is left as it is; a changed one is read again.
    Add {
        /// Folder name or id.
        folder: String,
        /// Files and directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Link a folder to a directory on this computer and bring it in step now: files added,
    /// changed or deleted there follow into the folder while the desktop app or `engram
    /// serve` runs (also after a restart). Files in the folder that are not in the directory
    /// are removed. Hidden and temporary files are left out; symbolic links are not followed.
    Watch {
        /// Folder name or id.
        folder: String,
        /// The directory.
        dir: PathBuf,
    },
    /// Stop keeping a folder in step with its directory (its files stay).
    Unwatch {
        /// Folder name or id.
        folder: String,
    },
    /// List folders, or the files of one with their status.
    Ls {
        /// Folder name or id.
        folder: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Attach a folder to an agent (it gets the file tools).
    Attach {
        /// Folder name or id.
        folder: String,
        /// Agent id.
        agent: String,
    },
    /// Detach a folder from an agent (its files close).
    Detach {
        /// Folder name or id.
        folder: String,
        /// Agent id.
        agent: String,
    },
    /// Remove a folder with its files, or one file of it.
    Rm {
        /// Folder name or id.
        folder: String,
        /// Only this file (its name in the folder).
        file: Option<String>,
    },
}

fn describe(f: &FolderFile) -> String {
    match f.status {
        FileStatus::Error => format!("error: {}", f.error.as_deref().unwrap_or("?")),
        status => {
            let mut s = status.as_str().to_owned();
            if let Some(p) = f.pages {
                s.push_str(&format!(", {p} pages"));
            }
            s.push_str(&format!(", {} lines, {} passages", f.lines, f.chunks));
            s
        }
    }
}

/// Runs one `engram folder` command.
pub async fn folder(engram: &Engram, cmd: FolderCmd) -> Result<()> {
    match cmd {
        FolderCmd::Create {
            name,
            description,
            instructions,
            embedding,
            embedding_base_url,
        } => {
            let folder = engram.folders().create(NewFolder {
                name,
                description,
                instructions,
                embedding: embedding.map(|model| EmbeddingConfig {
                    model,
                    base_url: embedding_base_url,
                }),
            })?;
            println!("{}", folder.id);
        }
        FolderCmd::Add {
            folder,
            paths,
            json,
        } => {
            let folder = engram.folders().find(&folder)?;
            let added = engram.folders().add_paths(&folder.id, &paths).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&added)?);
                return Ok(());
            }
            for a in &added {
                let line = match (&a.skipped, &a.file) {
                    (Some(why), _) => format!("skipped  {}: {why}", a.name),
                    (None, Some(f)) if a.unchanged => format!("unchanged  {}", f.name),
                    (None, Some(f)) => format!("{}  {}", f.name, describe(f)),
                    (None, None) => a.name.clone(),
                };
                println!("{}", safe(&line));
                for note in &a.notes {
                    println!("  note: {}", safe(note));
                }
            }
        }
        FolderCmd::Watch { folder, dir } => {
            let folder = engram.folders().find(&folder)?;
            let link = engram.folders().link_dir(&folder.id, &dir)?;
            let r = engram.folders().sync_watched(&folder.id).await?;
            println!("{} → {}", safe(&folder.name), safe(&link.path));
            println!(
                "{} read ({} failed), {} unchanged, {} removed, {} symbolic links not followed",
                r.added, r.failed, r.unchanged, r.removed, r.links
            );
            eprintln!("Kept in step while the desktop app or `engram serve` runs.");
        }
        FolderCmd::Unwatch { folder } => {
            let folder = engram.folders().find(&folder)?;
            if !engram.folders().unwatch(&folder.id)? {
                anyhow::bail!("{} is not linked to a directory", folder.name);
            }
        }
        FolderCmd::Ls { folder: None, json } => {
            let folders = engram.folders().list()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&folders)?);
                return Ok(());
            }
            let watches = engram.folders().watches()?;
            for f in folders {
                let files = engram.folders().files(&f.id)?.len();
                let model = f
                    .embedding
                    .as_ref()
                    .map_or("words only", |e| e.model.as_str());
                println!("{}  {}  {files} files  ({model})", f.id, safe(&f.name));
                if let Some(w) = watches.iter().find(|w| w.folder_id == f.id) {
                    let why = w
                        .error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default();
                    println!("  watches {}  ({}{why})", safe(&w.path), w.state.as_str());
                }
            }
        }
        FolderCmd::Ls {
            folder: Some(folder),
            json,
        } => {
            let folder = engram.folders().find(&folder)?;
            let files = engram.folders().files(&folder.id)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&files)?);
                return Ok(());
            }
            for f in files {
                println!("{}  {}  {}", f.id, safe(&f.name), safe(&describe(&f)));
            }
        }
        FolderCmd::Attach { folder, agent } => {
            let folder = engram.folders().find(&folder)?;
            engram.folders().attach(&AgentId::from(agent), &folder.id)?;
        }
        FolderCmd::Detach { folder, agent } => {
            let folder = engram.folders().find(&folder)?;
            engram.folders().detach(&AgentId::from(agent), &folder.id)?;
        }
        FolderCmd::Rm { folder, file: None } => {
            let folder = engram.folders().find(&folder)?;
            engram.folders().delete(&folder.id)?;
        }
        FolderCmd::Rm {
            folder,
            file: Some(name),
        } => {
            let folder = engram.folders().find(&folder)?;
            let file = engram
                .folders()
                .files(&folder.id)?
                .into_iter()
                .find(|f| f.name == name || f.id.as_str() == name)
                .ok_or_else(|| anyhow::anyhow!("no file named '{name}' in {}", folder.name))?;
            engram.folders().delete_file(&file.id)?;
        }
    }
    Ok(())
}
