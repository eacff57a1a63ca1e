//! Archival search, in one place: how a query over an agent's passages becomes a ranked list.
//!
//! The pipeline, in the order a search runs it (docs/retrieval.md has the figures):
//! 1. **Lexical**: BM25 over the agent's own full-text table, each hit lending part of its
//!    score to the passages written just before and after it (neighbour smoothing).
//! 2. **Vector**: cosine similarity from the agent's vector index, when the query has an
//!    embedding.
//! 3. **Fusion**: a weighted sum of the lexical share-of-best and the cosine.
//! 4. **Expansion** ([`expand`]): pseudo-relevance feedback, shipped off.
//! 5. **Rerank** ([`rerank`]): late interaction over the built-in model's word-piece vectors
//!    ([`late`]) or a cross-encoder, over the head of a deeper hybrid answer.
//!
//! [`search()`] is the one entry point; [`tuning`] holds every number that shapes the ranking.
//! Steps 1–3 are [`hybrid`], which also ranks recall search (the message history) and the
//! passages of an agent's folders with the same smoothing and fusion. The store below provides
//! the primitives (full-text tables, the vector index, candidates read and rows loaded in one
//! read, neighbours by time, word statistics); the embedding crate encodes texts and runs the
//! cross-encoder; nothing here touches a transport. `tests/it/architecture.rs` fails when a
//! piece of the ranking appears in another crate.

pub mod expand;
pub mod fuse;
pub mod hybrid;
pub mod late;
pub mod neighbours;
pub mod rerank;
mod search;
pub mod tuning;

pub use expand::Expansion;
pub use hybrid::HybridSearch;
pub use late::LateInteraction;
pub use rerank::{Candidate, CrossEncoderReranker, RerankError, Reranker};
pub use search::{search, search_with};
