//! `engram embedding …` and `engram archival backfill`: the built-in embedding model (status,
//! download ahead of first use, a local weights folder, the default for new agents), the
//! reranker of archival search, and
//! filling in missing vectors, with progress on stderr.

use crate::terminal::safe;
use anyhow::Result;
use clap::Subcommand;
use engram_core::AgentId;
use engram_service::{Engram, Notice};
use std::io::Write;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum EmbeddingCmd {
    /// Show where a built-in model's weights are and whether it is loaded.
    Status {
        /// The model.
        #[arg(default_value = engram_service::LOCAL_EMBEDDING_MODEL)]
        model: String,
    },
    /// Download a built-in model's weights now (checked against pinned SHA-256 digests).
    Fetch {
        /// The model.
        #[arg(default_value = engram_service::LOCAL_EMBEDDING_MODEL)]
        model: String,
    },
    /// Use weights from a folder (config.json, tokenizer.json, model.safetensors) instead of
    /// downloading them: for offline installs. Without a folder, shows the setting.
    LocalDir {
        /// The folder.
        dir: Option<PathBuf>,
        /// Go back to downloading into the data directory.
        #[arg(long, conflicts_with = "dir")]
        clear: bool,
    },
    /// Show or set archival search's reranker: late interaction over the built-in model's
    /// token vectors by default, or a folder with a cross-encoder's weights (config.json,
    /// tokenizer.json, model.safetensors), and whether reranking is on.
    Rerank {
        /// The folder.
        dir: Option<PathBuf>,
        /// Forget the folder (back to late interaction).
        #[arg(long, conflicts_with = "dir")]
        clear: bool,
        /// Switch reranking off, both kinds (the folder is kept).
        #[arg(long, conflicts_with = "on")]
        off: bool,
        /// Switch reranking back on.
        #[arg(long)]
        on: bool,
    },
    /// Finish the vector index builds a quit cut short, with a progress bar, and save them
    /// (they also start again by themselves when `engram serve` or the desktop app starts).
    /// Until an agent's index is built, its archival search scans every vector: exact, but
    /// slower.
    Index,
    /// Give vectors of the agent's embedding model to its passages and messages that have
    /// none (imported, stored during an embedding outage, or after a model change), with a
    /// progress bar; resumable (`engram archival backfill` does the same).
    Backfill {
        /// Agent id.
        agent: String,
    },
    /// Show or set the embedding model new agents get (`none`: search by words only).
    Default {
        /// A handle such as local/all-minilm-l6-v2, openai/text-embedding-3-small or none.
        model: Option<String>,
    },
}

pub async fn embedding(engram: &Engram, cmd: EmbeddingCmd) -> Result<()> {
    match cmd {
        EmbeddingCmd::Status { model } => {
            println!(
                "{}",
                serde_json::to_string_pretty(&engram.models().embedding_model_status(&model)?)?
            );
        }
        EmbeddingCmd::Fetch { model } => {
            let status =
                with_progress(engram, engram.models().fetch_embedding_model(&model)).await?;
            println!("{} ready in {}", status.model, safe(&status.dir));
        }
        EmbeddingCmd::LocalDir { dir, clear } => {
            if clear {
                engram.models().set_embedding_model_dir(None)?;
            } else if let Some(dir) = dir {
                let dir = std::path::absolute(&dir)?;
                engram.models().set_embedding_model_dir(Some(&dir))?;
            }
            let status = engram
                .models()
                .embedding_model_status(engram_service::LOCAL_EMBEDDING_MODEL)?;
            let whose = if status.user_folder {
                "your folder"
            } else {
                "download cache"
            };
            println!("{} ({whose})", safe(&status.dir));
        }
        EmbeddingCmd::Rerank {
            dir,
            clear,
            off,
            on,
        } => {
            if clear {
                engram.models().set_rerank_model_dir(None)?;
            } else if let Some(dir) = dir {
                engram
                    .models()
                    .set_rerank_model_dir(Some(&std::path::absolute(&dir)?))?;
            }
            if off || on {
                engram.models().set_rerank_enabled(on)?;
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&engram.models().reranker_status())?
            );
        }
        EmbeddingCmd::Backfill { agent } => backfill(engram, &AgentId::from(agent)).await?,
        EmbeddingCmd::Index => index(engram).await?,
        EmbeddingCmd::Default { model } => {
            if let Some(m) = model {
                engram.models().set_default_embedding(&m)?;
            }
            match engram.models().default_embedding()? {
                Some(cfg) => println!(
                    "{}{}",
                    safe(&cfg.model),
                    cfg.base_url
                        .map(|u| format!(" at {}", safe(&u)))
                        .unwrap_or_default()
                ),
                None => println!("none"),
            }
        }
    }
    Ok(())
}

/// `engram embedding backfill AGENT` (also `engram archival backfill AGENT`).
pub async fn backfill(engram: &Engram, agent: &AgentId) -> Result<()> {
    let report = with_progress(engram, engram.archival().backfill(agent)).await?;
    println!(
        "embedded {} passages and messages; {} still without a vector",
        report.embedded, report.remaining
    );
    Ok(())
}

/// `engram embedding index`: resumes the interrupted vector index builds and waits for them,
/// showing their progress.
async fn index(engram: &Engram) -> Result<()> {
    let mut notices = engram.notices();
    let started = engram.archival().resume_index_builds()?;
    if started == 0 {
        println!("no vector index build is pending");
        return Ok(());
    }
    let mut agents = std::collections::BTreeSet::new();
    let mut finished = 0;
    let mut line = false;
    while finished < started {
        match notices.recv().await {
            Ok(n) => {
                if let Notice::VectorIndexBuild {
                    agent_id,
                    finished: true,
                    ..
                } = &n
                {
                    finished += 1;
                    agents.insert(agent_id.clone());
                }
                show(n, &mut line);
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
    for agent in agents {
        // A saved graph clears the agent's pending mark; a failed build leaves it.
        if engram.archival().index_build_pending(&agent) {
            eprintln!(
                "warning: the vector index of {agent} was not saved (see the log); it is built again on the next start"
            );
        } else {
            println!("built the vector index of {agent}");
        }
    }
    Ok(())
}

/// Runs `work` while showing the engine's notices that matter on a terminal: download and
/// backfill progress as one updating line, and embedding outages as warnings (stderr).
pub async fn with_progress<T>(engram: &Engram, work: impl Future<Output = T>) -> T {
    let mut notices = engram.notices();
    let mut line = false;
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            n = notices.recv() => match n {
                Ok(n) => show(n, &mut line),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => return work.await,
            },
            out = &mut work => {
                // What was announced just before the work finished.
                while let Ok(n) = notices.try_recv() {
                    show(n, &mut line);
                }
                return out;
            }
        }
    }
}

fn show(n: Notice, line: &mut bool) {
    match n {
        Notice::ModelDownload {
            model,
            done_bytes,
            total_bytes,
            ..
        } => {
            bar(
                &format!("downloading {model}"),
                done_bytes,
                total_bytes,
                1e6,
                "MB",
            );
            *line = done_bytes < total_bytes;
        }
        Notice::EmbeddingBackfill { done, total, .. } => {
            bar("embedding passages and messages", done, total, 1.0, "");
            *line = done < total;
        }
        Notice::VectorIndexBuild {
            done,
            total,
            finished,
            ..
        } => {
            bar("indexing passages", done, total, 1.0, "");
            *line = !finished;
            if finished {
                eprintln!();
            }
        }
        Notice::EmbeddingsUnavailable { message, .. }
        | Notice::RerankerUnavailable { message, .. } => {
            if std::mem::take(line) {
                eprintln!();
            }
            eprintln!("warning: {}", safe(&message));
        }
        _ => {}
    }
}

fn bar(what: &str, done: u64, total: u64, unit: f64, unit_name: &str) {
    let pct = if total == 0 {
        100.0
    } else {
        done as f64 * 100.0 / total as f64
    };
    let filled = (pct / 5.0) as usize;
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r{what} [{:<20}] {:.1}/{:.1}{unit_name} {pct:>3.0}%",
        "#".repeat(filled.min(20)),
        done as f64 / unit,
        total as f64 / unit,
    );
    if done >= total {
        let _ = writeln!(err);
    }
    let _ = err.flush();
}
