//! Engram's built-in embedding model: a small sentence encoder that runs in-process, so
//! semantic memory needs no key, no server and no network after the first use.
//!
//! - [`catalog`]: the known models, where their files live and their pinned SHA-256 digests.
//! - [`fetch`]: first-use download with progress, resume and checksum refusal.
//! - [`encoder`]: the model (BERT via `candle-transformers`, WordPiece via `tokenizers`),
//!   mean pooling and normalisation as sentence-transformers does it.
//! - [`local`]: the model behind the providers' `EmbeddingModel` interface, loaded lazily and
//!   unloaded after idle.
//! - [`threads`]: the worker threads a loaded model owns (they end when it is dropped).
//! - [`weights`]: safetensors read one tensor at a time (no whole-file buffer).
//! - [`rerank`]: a cross-encoder (BERT with a one-logit classification head) that scores a
//!   query and a passage together; [`rerank_local`] loads it lazily from a weights folder.
//!
//! Only encoding lives here: how vectors, word-piece vectors and logits become a ranking is
//! `engram_retrieval`'s.
//!
//! Agents name it `local/<model>` (e.g. `local/all-minilm-l6-v2`).

pub mod catalog;
pub mod encoder;
pub mod fetch;
pub mod local;
pub mod rerank;
pub mod rerank_local;
pub mod threads;
pub mod weights;

pub use candle_core::DType;
pub use catalog::{ALL_MINILM_L6_V2, LocalModelSpec};
pub use encoder::{Batching, Encoded, Encoder, TokenVectors};
pub use local::{LocalEmbeddings, WeightsSource};

/// The provider handle of built-in models: `local/all-minilm-l6-v2`.
pub const PROVIDER: &str = "local";

/// The embedding model new agents get unless told otherwise.
pub const DEFAULT_MODEL: &str = "local/all-minilm-l6-v2";

/// The environment variable naming a folder that holds a built-in model's weights
/// (`config.json`, `tokenizer.json`, `model.safetensors`); when set, nothing is downloaded.
pub const MODEL_DIR_ENV: &str = "ENGRAM_LOCAL_MODEL_DIR";
