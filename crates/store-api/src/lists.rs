//! Which agents or blocks a list asks for: the filters and cursors of Letta's
//! `GET /v1/agents/` and `GET /v1/blocks/`, the same rules on every store.

use engram_core::{AgentId, BlockId, UserId};

/// Which agents to list, and which page. Agents are listed in creation order (`created_at`,
/// then id by bytes); `after` and `before` are positions in that order, read from the named
/// agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentList {
    /// Only agents with exactly this name.
    pub name: Option<String>,
    /// Only agents whose name contains this (case-insensitive for ASCII letters).
    pub query_text: Option<String>,
    /// Only agents with any of these tags (all of them with `match_all_tags`); empty: no
    /// tag filter.
    pub tags: Vec<String>,
    /// Whether an agent needs every tag rather than one.
    pub match_all_tags: bool,
    /// Only agents after this one in the list's order. An id that is not an agent's gives an
    /// empty page (the SDKs' paging then ends).
    pub after: Option<AgentId>,
    /// Only agents before this one in the list's order: the `limit` nearest it.
    pub before: Option<AgentId>,
    /// Maximum number of agents.
    pub limit: usize,
    /// Oldest first when true.
    pub ascending: bool,
    /// Only agents this user may use (see `UserStore::set_agent_access`); `None`: every agent.
    pub user: Option<UserId>,
}

/// Which blocks to list, and which page. Blocks are listed in creation order, as agents are
/// (see [`AgentList`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockList {
    /// Only blocks with this label.
    pub label: Option<String>,
    /// Only blocks after this one in the list's order. An id that is not a block's gives an
    /// empty page (the SDKs' paging then ends).
    pub after: Option<BlockId>,
    /// Only blocks before this one in the list's order: the `limit` nearest it.
    pub before: Option<BlockId>,
    /// Maximum number of blocks.
    pub limit: usize,
    /// Oldest first when true.
    pub ascending: bool,
}
