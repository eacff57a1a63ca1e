//! The Models room's calls about the built-in models: the embedding model (status, download, retry), rerankers, and GGUF chat models run by the local worker.

use crate::Engram;
use crate::local_llm::{
    DEFAULT_CONTEXT, LOCAL_CHAT_PROVIDER, LocalChatModel, bare, model_name, read_gguf, store_all,
    stored,
};
use crate::local_model::{LOCAL_MODEL_DIR_SETTING, LocalModelStatus};
use crate::rerank::{RERANK_MODEL_DIR_SETTING, RERANK_SETTING, RerankerStatus};
use crate::rooms::Models;
use engram_core::{Error, Result};
use engram_embed::{LocalModelSpec, WeightsSource};
use std::path::Path;

impl Models<'_> {
    /// Where archival search's reranker stands (see [`RerankerStatus`]).
    pub fn reranker_status(&self) -> RerankerStatus {
        self.engram.resolver.rerankers.status()
    }

    /// Switches reranking of archival search on or off (stored; every transport and the
    /// agents' search tool follow at once). Errors: `storage`.
    pub fn set_rerank_enabled(&self, on: bool) -> Result<RerankerStatus> {
        self.engram
            .store
            .settings()
            .set(RERANK_SETTING, if on { "on" } else { "off" })?;
        Ok(self.reranker_status())
    }

    /// Points the reranker at a folder with a cross-encoder's `config.json`,
    /// `tokenizer.json` and `model.safetensors`; `None` removes it (no reranking). The files
    /// are checked for presence here and loaded on the next search. Errors: `invalid_input`
    /// when the folder lacks a file.
    pub fn set_rerank_model_dir(&self, dir: Option<&std::path::Path>) -> Result<RerankerStatus> {
        match dir {
            Some(d) => {
                for f in engram_embed::encoder::FILES {
                    if !d.join(f).is_file() {
                        return Err(Error::invalid(format!(
                            "{} has no {f}; a reranker's folder holds {}",
                            d.display(),
                            engram_embed::encoder::FILES.join(", ")
                        )));
                    }
                }
                self.engram
                    .store
                    .settings()
                    .set(RERANK_MODEL_DIR_SETTING, &d.display().to_string())?
            }
            None => self
                .engram
                .store
                .settings()
                .set(RERANK_MODEL_DIR_SETTING, "")?,
        }
        Ok(self.reranker_status())
    }

    /// [`set_rerank_model_dir`](Self::set_rerank_model_dir) for a folder a person typed or
    /// picked (the window's settings, over IPC and `/app`): trimmed; `None` or blank removes
    /// the folder. Errors: `invalid_input` for a relative path (the server's working folder
    /// means nothing to the person), a path that is not a folder, or a folder without a
    /// cross-encoder's files; nothing is stored then.
    pub fn set_rerank_folder(&self, dir: Option<&str>) -> Result<RerankerStatus> {
        let Some(dir) = dir.map(str::trim).filter(|d| !d.is_empty()) else {
            return self.set_rerank_model_dir(None);
        };
        let path = std::path::Path::new(dir);
        if !path.is_absolute() {
            return Err(Error::invalid(format!(
                "{dir} is not a full path; give the folder's full path (e.g. /home/you/models/reranker)"
            )));
        }
        if !path.is_dir() {
            return Err(Error::invalid(format!(
                "there is no folder {dir} on this computer"
            )));
        }
        self.set_rerank_model_dir(Some(path))
    }
}

impl Models<'_> {
    /// Where the built-in model `handle` (`local/all-minilm-l6-v2`) stands.
    /// Errors: `invalid_input` for an unknown model.
    pub fn embedding_model_status(&self, handle: &str) -> Result<LocalModelStatus> {
        let spec = Engram::local_spec(handle)?;
        let local = &self.engram.resolver.local;
        let source = local.source(spec)?;
        let (dir, user_folder) = match &source {
            WeightsSource::Folder(d) => (d.clone(), true),
            WeightsSource::Download { cache_dir, .. } => (cache_dir.clone(), false),
        };
        Ok(LocalModelStatus {
            model: format!("local/{}", spec.name),
            dir: dir.display().to_string(),
            user_folder,
            present: engram_embed::fetch::is_complete(spec, &dir),
            loaded: local.existing(spec.name).is_some_and(|m| m.is_loaded()),
            bytes: spec.files.iter().map(|f| f.bytes).sum(),
        })
    }

    /// Tries agent `agent`'s built-in embedding model again now — its download when that
    /// failed, without waiting for the back-off — and on success fills in the vectors stored
    /// without one meanwhile (in the background). `None` when the agent's model is not a
    /// built-in one. Errors: `not_found`; `provider_not_configured` when the download fails
    /// again.
    pub async fn retry_embedding_model(
        &self,
        agent: &engram_core::AgentId,
    ) -> Result<Option<LocalModelStatus>> {
        let Some(cfg) = self.engram.store.agents().get(agent)?.embedding else {
            return Ok(None);
        };
        if !cfg.model.starts_with("local/") {
            return Ok(None);
        }
        let status = self.fetch_embedding_model(&cfg.model).await?;
        self.engram.spawn_backfill(agent);
        self.engram.spawn_folder_refill();
        Ok(Some(status))
    }

    /// Downloads the built-in model's files now if they are missing (otherwise done on first
    /// use), with progress as [`Notice::ModelDownload`](crate::Notice::ModelDownload). Errors: `provider_not_configured`
    /// when the download fails or a file does not match its pinned SHA-256 (nothing
    /// unverified is kept; an interrupted download resumes on the next call).
    pub async fn fetch_embedding_model(&self, handle: &str) -> Result<LocalModelStatus> {
        let spec = Engram::local_spec(handle)?;
        self.engram
            .resolver
            .local
            .get(spec.name)?
            .ensure_files()
            .await
            .map_err(Error::from)?;
        self.embedding_model_status(handle)
    }

    /// Points the built-in models at a folder holding their weights (`config.json`,
    /// `tokenizer.json`, `model.safetensors`) instead of downloading them; `None` goes back
    /// to the download cache. Errors: `invalid_input` when the folder lacks a file.
    pub fn set_embedding_model_dir(&self, dir: Option<&std::path::Path>) -> Result<()> {
        match dir {
            Some(d) => {
                for f in engram_embed::encoder::FILES {
                    if !d.join(f).is_file() {
                        return Err(Error::invalid(format!(
                            "{} has no {f}; a weights folder holds {}",
                            d.display(),
                            engram_embed::encoder::FILES.join(", ")
                        )));
                    }
                }
                self.engram
                    .store
                    .settings()
                    .set(LOCAL_MODEL_DIR_SETTING, &d.display().to_string())
            }
            None => self
                .engram
                .store
                .settings()
                .set(LOCAL_MODEL_DIR_SETTING, ""),
        }
    }
}

impl Models<'_> {
    /// Registers the GGUF chat model at `path` as `local/<name>` ([`model_name`]), with the
    /// context size `context` in tokens (default: its training context, at most
    /// [`DEFAULT_CONTEXT`]; never more than the training context). Adding a file whose name is
    /// taken replaces that registration. New agents on the handle get that context window.
    ///
    /// Errors: `invalid_input` when the file is missing or not a GGUF model, for a zero or
    /// too small context (under 256 tokens), or for a name with no letters or digits.
    pub fn add_local(self, path: &Path, context: Option<u32>) -> Result<LocalChatModel> {
        let path = std::path::absolute(path)
            .map_err(|e| Error::invalid(format!("{}: {e}", path.display())))?;
        let meta = std::fs::metadata(&path)
            .map_err(|e| Error::invalid(format!("cannot read {}: {e}", path.display())))?;
        if !meta.is_file() {
            return Err(Error::invalid(format!("{} is not a file", path.display())));
        }
        let name = model_name(&path);
        if !name.chars().any(|c| c.is_ascii_alphanumeric()) {
            return Err(Error::invalid(format!(
                "{} needs a file name with letters or digits to name the model",
                path.display()
            )));
        }
        let (_arch, trained) = read_gguf(&path)?;
        if let Some(n) = context
            && n < 256
        {
            return Err(Error::invalid(format!(
                "a context of {n} tokens is too small; give at least 256"
            )));
        }
        let context_window = context.unwrap_or(DEFAULT_CONTEXT).min(trained);
        let model = LocalChatModel {
            handle: format!("{LOCAL_CHAT_PROVIDER}/{name}"),
            name,
            path: path.display().to_string(),
            context_window,
            trained_context: trained,
            bytes: meta.len(),
        };
        let mut models = stored(&self.engram.store)?;
        models.retain(|m| m.name != model.name);
        models.push(model.clone());
        models.sort_by(|a, b| a.name.cmp(&b.name));
        store_all(&self.engram.store, &models)?;
        self.engram
            .store
            .settings()
            .set_model_window(&model.handle, model.context_window)?;
        Ok(model)
    }

    /// The registered built-in chat models, by name.
    pub fn list_local(self) -> Result<Vec<LocalChatModel>> {
        stored(&self.engram.store)
    }

    /// Forgets the built-in model `name` (`local/` optional) and stops its worker; the file
    /// stays where it is. Agents on it fail with a clear error until given another model.
    /// Errors: `not_found`.
    pub async fn remove_local(self, name: &str) -> Result<()> {
        let name = bare(name);
        let mut models = stored(&self.engram.store)?;
        let before = models.len();
        models.retain(|m| m.name != name);
        if models.len() == before {
            return Err(Error::not_found("model", format!("local/{name}")));
        }
        store_all(&self.engram.store, &models)?;
        self.engram.resolver.llms.stop(name).await;
        Ok(())
    }

    /// Makes the built-in model `name` (`local/` optional) the model new agents get.
    /// Errors: `provider_not_configured` when it is not registered.
    pub fn set_default_local(self, name: &str) -> Result<LocalChatModel> {
        let model = self.engram.resolver.llms.model(name)?;
        self.set_default_chat(&model.handle)?;
        Ok(model)
    }

    /// The process id of the worker running built-in model `name`, while one runs.
    pub async fn local_worker_pid(self, name: &str) -> Option<u32> {
        self.engram.resolver.llms.pid(name).await
    }
}

impl Engram {
    /// The context window (tokens) agents on `handle` may have: the registered model's
    /// context for `local/` handles, `None` for others (or unregistered names).
    pub(crate) fn local_window(&self, handle: &str) -> Option<u32> {
        let (provider, name) = engram_core::agent::split_handle(handle);
        if !provider.eq_ignore_ascii_case(LOCAL_CHAT_PROVIDER) {
            return None;
        }
        self.resolver
            .llms
            .model(name)
            .ok()
            .map(|m| m.context_window)
    }
}

impl Engram {
    fn local_spec(handle: &str) -> Result<&'static LocalModelSpec> {
        let name = handle.strip_prefix("local/").unwrap_or(handle).trim();
        engram_embed::catalog::find(name)
            .ok_or_else(|| Error::invalid(format!("{handle} is not a built-in embedding model")))
    }
}
