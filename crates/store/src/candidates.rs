//! What a search reads from the store before anything is ranked, and the ranking it hands
//! back. The store finds candidates — BM25 over its full-text tables, cosine from the vector
//! index or an exact scan, the rows written just before and after each hit — and loads the rows
//! a ranking names, all in one read; how candidates become one ranking (neighbour smoothing,
//! fusion, the depths) is `engram_retrieval`'s, passed in as the closure of
//! [`PassageRows::rank`](crate::PassageRows::rank),
//! [`MessageRows::rank`](crate::MessageRows::rank) and
//! [`FolderRows::rank_agent_files`](crate::FolderRows::rank_agent_files).

pub use engram_store_api::{Bm25, CandidateDepth, Candidates, NeighbourMap, Ranking};
