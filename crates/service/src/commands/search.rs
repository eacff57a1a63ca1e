//! Search settings commands: archival search's reranker (a cross-encoder folder, or late
//! interaction with the built-in model when none is set).

use super::{AppCall, Caller};
use crate::{Engram, RerankerStatus, VectorIndexBuild};
use engram_core::Result;
use serde::Deserialize;
use std::sync::Arc;
use ts_rs::TS;

/// `reranker_status`: on or off, the folder, whether it is loaded, and why it last failed.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct RerankerStatusArgs {}

impl AppCall for RerankerStatusArgs {
    const NAME: &'static str = "reranker_status";
    type Output = RerankerStatus;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<RerankerStatus> {
        Ok(e.models().reranker_status())
    }
}

/// `vector_index_builds`: the vector indexes being built in the background now, one entry per
/// agent (empty when none is); a window opened mid-build shows them at once and then follows
/// `vector_index_build` notices.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct VectorIndexBuildsArgs {}

impl AppCall for VectorIndexBuildsArgs {
    const NAME: &'static str = "vector_index_builds";
    type Output = Vec<VectorIndexBuild>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<VectorIndexBuild>> {
        Ok(e.archival().index_builds())
    }
}

/// `set_rerank_model_dir`: points the reranker at a folder typed as a full path; `null` or
/// blank removes it.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetRerankModelDirArgs {
    /// The weights folder (`config.json`, `tokenizer.json`, `model.safetensors`).
    #[serde(default)]
    dir: Option<String>,
}

impl AppCall for SetRerankModelDirArgs {
    const NAME: &'static str = "set_rerank_model_dir";
    type Output = RerankerStatus;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<RerankerStatus> {
        e.models().set_rerank_folder(self.dir.as_deref())
    }
}

/// `set_rerank_enabled`: switches reranking (the cross-encoder and late interaction) on or off.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetRerankEnabledArgs {
    /// On (true) or off.
    enabled: bool,
}

impl AppCall for SetRerankEnabledArgs {
    const NAME: &'static str = "set_rerank_enabled";
    type Output = RerankerStatus;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<RerankerStatus> {
        e.models().set_rerank_enabled(self.enabled)
    }
}

/// `pick_rerank_model_dir` (desktop only, answered by the shell): asks for the folder in the
/// native folder dialog and sets it; `null` when the user cancelled.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct PickRerankModelDirArgs {}
