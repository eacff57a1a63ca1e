//! The schema, as an append-only list of migrations (tracked in `PRAGMA user_version`).
//!
//! Never edit a released migration; add a new `M::up` at the end. Conventions: timestamps are
//! INTEGER unix microseconds; JSON-valued fields are TEXT; rows that other rows point at by an
//! integer (FTS5 rowids) have an `INTEGER PRIMARY KEY pk` next to their text `id`.
//!
//! The FTS5 tables are *contentless* (`content=''`) with `contentless_delete=1`: the text lives
//! once, in its own table, and triggers keep the index in step on every insert and delete,
//! including cascades. Contentless also lets the message index hold text that is not a column
//! (the arguments inside `tool_calls` JSON).

use crate::sql::DbResult;
use engram_core::{Error, Result};
use rusqlite::Connection;
use rusqlite_migration::{M, Migrations};

/// Version 1: the whole initial schema.
const V1: &str = r#"
CREATE TABLE agents (
    id                  TEXT PRIMARY KEY NOT NULL,
    name                TEXT NOT NULL,
    description         TEXT NOT NULL,
    system              TEXT NOT NULL,
    llm                 TEXT NOT NULL,      -- JSON LlmConfig
    embedding           TEXT,               -- JSON EmbeddingConfig
    loop_style          TEXT NOT NULL,      -- 'classic' | 'tool_loop'
    max_steps           INTEGER NOT NULL,
    tools               TEXT NOT NULL,      -- JSON array of tool names (built-in or rows of `tools`)
    tool_rules          TEXT NOT NULL DEFAULT '[]', -- JSON array of ToolRule
    summary             TEXT,
    system_cache_memory TEXT,               -- compiled memory section the cached prompt was built from
    system_cache_prompt TEXT,               -- the compiled system prompt
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);
CREATE INDEX agents_by_created ON agents (created_at, id);

-- Counters kept by triggers so the memory metadata of every context window costs one lookup.
-- A table of its own: bumping a column of `agents` would rewrite the large agent row.
CREATE TABLE agent_stats (
    agent_id TEXT PRIMARY KEY NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    messages INTEGER NOT NULL DEFAULT 0,
    passages INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TRIGGER agents_ai AFTER INSERT ON agents BEGIN
    INSERT INTO agent_stats (agent_id) VALUES (new.id);
END;

CREATE TABLE blocks (
    id          TEXT PRIMARY KEY NOT NULL,
    label       TEXT NOT NULL,
    value       TEXT NOT NULL,
    char_limit  INTEGER NOT NULL,           -- characters, not bytes
    description TEXT NOT NULL,
    read_only   INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX blocks_by_label ON blocks (label, created_at);

-- Label uniqueness per agent is checked by code inside the attaching transaction, because the
-- label lives on the (shareable) block, not on the link.
CREATE TABLE agent_blocks (
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    block_id TEXT NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    PRIMARY KEY (agent_id, block_id)
) WITHOUT ROWID;
CREATE INDEX agent_blocks_by_block ON agent_blocks (block_id);

CREATE TABLE block_history (
    pk         INTEGER PRIMARY KEY,         -- edit order
    id         TEXT NOT NULL UNIQUE,
    block_id   TEXT NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    editor     TEXT NOT NULL,               -- JSON Editor
    old_value  TEXT NOT NULL,
    new_value  TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX block_history_by_block ON block_history (block_id, pk);

CREATE TABLE messages (
    pk           INTEGER PRIMARY KEY,       -- FTS rowid
    id           TEXT NOT NULL UNIQUE,
    agent_id     TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,          -- spaced by SEQ_GAP so repairs can slot in
    role         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    content      TEXT NOT NULL,
    reasoning    TEXT,
    tool_calls   TEXT,                      -- JSON array of ToolCall, NULL when none
    tool_call_id TEXT,
    tool_name    TEXT,
    run_id       TEXT,
    step_id      TEXT,
    in_context   INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE (agent_id, seq)
);
CREATE INDEX messages_in_context ON messages (agent_id, in_context, seq);
CREATE INDEX messages_by_time ON messages (agent_id, created_at);

CREATE VIRTUAL TABLE messages_fts USING fts5 (
    body, reasoning, tool_args,
    content = '', contentless_delete = 1, tokenize = 'porter unicode61'
);
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, body, reasoning, tool_args) VALUES (
        new.pk, new.content, coalesce(new.reasoning, ''),
        coalesce((SELECT group_concat(json_extract(value, '$.arguments'), ' ')
                  FROM json_each(new.tool_calls)), ''));
    UPDATE agent_stats SET messages = messages + 1 WHERE agent_id = new.agent_id;
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.pk;
    UPDATE agent_stats SET messages = messages - 1 WHERE agent_id = old.agent_id;
END;
CREATE TRIGGER messages_au AFTER UPDATE OF content, reasoning, tool_calls ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.pk;
    INSERT INTO messages_fts (rowid, body, reasoning, tool_args) VALUES (
        new.pk, new.content, coalesce(new.reasoning, ''),
        coalesce((SELECT group_concat(json_extract(value, '$.arguments'), ' ')
                  FROM json_each(new.tool_calls)), ''));
END;

CREATE TABLE passages (
    pk            INTEGER PRIMARY KEY,      -- FTS rowid
    id            TEXT NOT NULL UNIQUE,
    agent_id      TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    text          TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    embedding_dim INTEGER,
    embedding     BLOB                      -- little-endian f32 x embedding_dim; last so BM25 reads skip it
);
CREATE INDEX passages_by_time ON passages (agent_id, created_at);

CREATE TABLE passage_tags (
    passage_id TEXT NOT NULL REFERENCES passages (id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    position   INTEGER NOT NULL,            -- keeps the caller's tag order
    PRIMARY KEY (passage_id, tag)
) WITHOUT ROWID;
CREATE INDEX passage_tags_by_tag ON passage_tags (tag, passage_id);

CREATE VIRTUAL TABLE passages_fts USING fts5 (
    text, content = '', contentless_delete = 1, tokenize = 'porter unicode61'
);
CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts (rowid, text) VALUES (new.pk, new.text);
    UPDATE agent_stats SET passages = passages + 1 WHERE agent_id = new.agent_id;
END;
CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
    DELETE FROM passages_fts WHERE rowid = old.pk;
    UPDATE agent_stats SET passages = passages - 1 WHERE agent_id = old.agent_id;
END;

CREATE TABLE steps (
    id                TEXT PRIMARY KEY NOT NULL,
    agent_id          TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    run_id            TEXT NOT NULL,
    step_index        INTEGER NOT NULL,
    model             TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason     TEXT,
    started_at        INTEGER NOT NULL,
    llm_ms            INTEGER NOT NULL,
    step_ms           INTEGER NOT NULL
);
CREATE INDEX steps_by_agent ON steps (agent_id, started_at);
CREATE INDEX steps_by_run ON steps (run_id, step_index);

-- User tools (built-ins are not rows: the engine defines them). Agents refer to tools by
-- name, as Letta's agent files and tool rules do, so the name is the key users see.
CREATE TABLE tools (
    id                TEXT PRIMARY KEY NOT NULL,
    name              TEXT NOT NULL UNIQUE,
    description       TEXT NOT NULL,
    json_schema       TEXT NOT NULL,        -- JSON OpenAI function object
    source_code       TEXT,
    language          TEXT NOT NULL,        -- 'python'
    return_char_limit INTEGER NOT NULL,     -- characters
    tags              TEXT NOT NULL,        -- JSON array of strings
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);

-- Provider settings only. API keys live in the OS keychain and never in this file.
CREATE TABLE providers (
    name          TEXT PRIMARY KEY NOT NULL,
    kind          TEXT NOT NULL,
    base_url      TEXT,
    default_model TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
"#;

/// Block versions: every committed change of a block bumps `blocks.version`, so
/// whole-value writes can name the version they read and be refused when it is stale. History
/// rows record both versions and the step whose tool call made the edit; rows written before
/// this migration have NULL versions.
const BLOCK_VERSIONS: &str = r#"
ALTER TABLE blocks ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE block_history ADD COLUMN old_version INTEGER;
ALTER TABLE block_history ADD COLUMN new_version INTEGER;
ALTER TABLE block_history ADD COLUMN step_id TEXT;
"#;

/// A tool's sandbox settings, granted by the user per tool: `network` (the host's
/// network in the sandbox) and `allow_unsandboxed` (runs without a sandbox where none exists).
/// Both off for every existing tool.
const TOOL_SANDBOX: &str = r#"
ALTER TABLE tools ADD COLUMN network INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tools ADD COLUMN allow_unsandboxed INTEGER NOT NULL DEFAULT 0;
"#;

/// Agent tags (Letta's `tags`, filtered by `agents.list(tags=…)`) and passage edits (Letta's
/// passage modify): a tag table, and a trigger that keeps the archival index in step when a
/// passage's text changes.
const AGENT_TAGS_AND_PASSAGE_EDITS: &str = r#"
CREATE TABLE agent_tags (
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    tag      TEXT NOT NULL,
    position INTEGER NOT NULL,              -- keeps the caller's tag order
    PRIMARY KEY (agent_id, tag)
) WITHOUT ROWID;
CREATE INDEX agent_tags_by_tag ON agent_tags (tag, agent_id);
-- Agents imported before tags had a table kept them in their agent-file extras.
INSERT OR IGNORE INTO agent_tags (agent_id, tag, position)
SELECT a.id, j.value, j.key
FROM settings s
JOIN agents a ON a.id = substr(s.key, length('agent_file_extras.') + 1)
JOIN json_each(s.value, '$.tags') j
WHERE s.key LIKE 'agent_file_extras.%' AND j.type = 'text';

CREATE TRIGGER passages_au AFTER UPDATE OF text ON passages BEGIN
    DELETE FROM passages_fts WHERE rowid = old.pk;
    INSERT INTO passages_fts (rowid, text) VALUES (new.pk, new.text);
END;
"#;

/// Trust (DESIGN.md §8b): where each user tool came from and the SHA-256 of the source the
/// user trusted (a tool runs only while its source hashes to it), and base URLs imported agent
/// files asked for, kept inactive until the user accepts them. Tools stored before this
/// migration have an unknown origin and are untrusted: one of them may have come from a file.
const TOOL_TRUST: &str = r#"
ALTER TABLE tools ADD COLUMN origin TEXT NOT NULL DEFAULT '{"kind":"unknown"}'; -- JSON ToolOrigin
ALTER TABLE tools ADD COLUMN trusted_hash TEXT;  -- hex SHA-256 of the trusted source, or NULL

CREATE TABLE pending_endpoints (
    agent_id   TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,                -- 'llm' | 'embedding'
    base_url   TEXT NOT NULL,
    source     TEXT NOT NULL,                -- the agent file's name
    created_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, kind)
) WITHOUT ROWID;
"#;

/// Compaction dividers: one row per compaction, at the `seq` of the newest message
/// it folded into the summary, with the summary as it stood then, so the chat can show where
/// older messages were summarised and what the summary said. Agents compacted before this
/// migration get one row at their last evicted message, with their current summary.
const COMPACTION_MARKERS: &str = r#"
CREATE TABLE compactions (
    id         INTEGER PRIMARY KEY,
    agent_id   TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,            -- newest message folded in; the divider follows it
    summary    TEXT NOT NULL,
    evicted    INTEGER NOT NULL,            -- messages this compaction took out of context
    created_at INTEGER NOT NULL
);
CREATE INDEX compactions_by_seq ON compactions (agent_id, seq);
INSERT INTO compactions (agent_id, seq, summary, evicted, created_at)
SELECT a.id, last.seq, a.summary, last.n, last.created_at
FROM agents a
JOIN (SELECT agent_id, max(seq) AS seq, count(*) AS n, max(created_at) AS created_at
      FROM messages WHERE in_context = 0 GROUP BY agent_id) last ON last.agent_id = a.id
WHERE a.summary IS NOT NULL AND a.summary != '';
"#;

/// Lists paged in SQL: `GET /v1/blocks/` walks blocks in creation order by index
/// instead of sorting every block for each page.
const BLOCKS_BY_CREATION: &str = "CREATE INDEX blocks_by_created ON blocks (created_at, id);";

/// Tool calls waiting for a person (Letta's `requires_approval` rule): at most one per agent,
/// written in the transaction of the step that made the call and deleted in the one that
/// answers it. The call itself stays in its assistant message; repair leaves it unanswered
/// while this row names it.
const PENDING_TOOL_APPROVALS: &str = r#"
CREATE TABLE pending_approvals (
    agent_id     TEXT PRIMARY KEY NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    run_id       TEXT NOT NULL,
    step_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,               -- the assistant message that made the call
    tool_call    TEXT NOT NULL,               -- JSON ToolCall {id, name, arguments}
    requested_at INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Turn rollback (regenerate, edit & resend): each passage remembers the step whose
/// tool call inserted it (NULL for passages added by hand, imported, or stored before this
/// migration), so rolling back a turn removes exactly the passages it added; and each finished
/// run keeps its stop reason, error and usage, so a reload shows "stopped" labels and usage
/// lines from stored data.
const TURN_ROLLBACK: &str = r#"
ALTER TABLE passages ADD COLUMN step_id TEXT;
CREATE INDEX passages_by_step ON passages (step_id) WHERE step_id IS NOT NULL;
-- The edits of a turn's steps: its diffs under each tool call, and what rolling it back undoes.
CREATE INDEX block_history_by_step ON block_history (step_id) WHERE step_id IS NOT NULL;

CREATE TABLE runs (
    id                TEXT PRIMARY KEY NOT NULL,
    agent_id          TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    stop_reason       TEXT NOT NULL,            -- StopReason, snake_case
    error             TEXT,                     -- JSON ErrorBody, when the run failed
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    step_count        INTEGER NOT NULL,
    ended_at          INTEGER NOT NULL
);
CREATE INDEX runs_by_agent ON runs (agent_id, ended_at);
"#;

/// Model prices the user set (USD per million tokens); Engram's built-in table lives in code
/// (`engram_core::price::BUILTIN_PRICES`) and a row here wins over it.
const MODEL_PRICES: &str = r#"
CREATE TABLE model_prices (
    model           TEXT PRIMARY KEY NOT NULL,  -- handle `provider/model`
    input_per_mtok  REAL NOT NULL,              -- USD per 1M prompt tokens
    output_per_mtok REAL NOT NULL,              -- USD per 1M completion tokens
    updated_at      INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// MCP servers: how each server is reached (no secrets: stdio environment values and
/// bearer tokens live in the OS keychain, only the variable names here), whether the user made
/// it active (servers from an imported file wait inactive), and where it came from. A tool
/// offered by a server is a row of `tools` with language 'mcp' and `mcp` naming the server and
/// the server's own tool name; removing the server removes its tools (done by code, which also
/// detaches them from agents).
const MCP_SERVERS: &str = r#"
CREATE TABLE mcp_servers (
    id         TEXT PRIMARY KEY NOT NULL,
    name       TEXT NOT NULL UNIQUE,
    transport  TEXT NOT NULL,              -- JSON McpTransport
    active     INTEGER NOT NULL,
    source     TEXT NOT NULL,              -- 'you' or the imported file's name
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
ALTER TABLE tools ADD COLUMN mcp TEXT;     -- JSON McpToolSource, NULL for other tools
"#;

/// The tools of an imported agent file's MCP servers that the file's agents used: kept while
/// the server waits inactive, and attached to those agents (only those tools, under the
/// server's Engram name) when the user accepts the server. Removing the server or the agent
/// drops its rows.
const MCP_PENDING_TOOLS: &str = r#"
CREATE TABLE mcp_pending_tools (
    server_id   TEXT NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    agent_id    TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    tool_name   TEXT NOT NULL,             -- the server's own name for the tool
    file_name   TEXT NOT NULL,             -- the tool's name in the file (its tool rules use it)
    description TEXT NOT NULL,
    json_schema TEXT NOT NULL,             -- JSON, as the file gave it
    PRIMARY KEY (server_id, agent_id, tool_name)
) WITHOUT ROWID;
"#;

/// Tag filters as index ranges: each tag row carries its passage's agent, time and
/// row key, so "this agent's passages tagged X, in time order" is one range of
/// `passage_tags_by_agent_tag_time` and a tag-filtered total counts index entries instead of
/// probing every tagged passage of every agent. The table is rebuilt with the copies filled in
/// from `passages`; a trigger keeps them in step should a passage's agent or time ever change.
const PASSAGE_TAGS_BY_AGENT_AND_TIME: &str = r#"
CREATE TABLE passage_tags_new (
    passage_id TEXT NOT NULL REFERENCES passages (id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    position   INTEGER NOT NULL,            -- keeps the caller's tag order
    agent_id   TEXT NOT NULL,               -- the passage's, copied for the index below
    created_at INTEGER NOT NULL,            -- the passage's (µs since the epoch)
    passage_pk INTEGER NOT NULL,            -- the passage's row key: ties in time order
    PRIMARY KEY (passage_id, tag)
) WITHOUT ROWID;
INSERT INTO passage_tags_new (passage_id, tag, position, agent_id, created_at, passage_pk)
SELECT t.passage_id, t.tag, t.position, p.agent_id, p.created_at, p.pk
FROM passage_tags t JOIN passages p ON p.id = t.passage_id;
DROP TABLE passage_tags;
ALTER TABLE passage_tags_new RENAME TO passage_tags;
CREATE INDEX passage_tags_by_agent_tag_time
    ON passage_tags (agent_id, tag, created_at, passage_pk);
CREATE TRIGGER passage_tags_follow_passage AFTER UPDATE OF agent_id, created_at, pk ON passages
BEGIN
    UPDATE passage_tags SET agent_id = new.agent_id, created_at = new.created_at,
                            passage_pk = new.pk
    WHERE passage_id = new.id;
END;
"#;

/// Message vectors (semantic recall search). One row per message that was embedded:
/// the agent's embedding model handle at the time (`local/all-minilm-l6-v2`), and the vector as
/// little-endian `f32`s. An empty `vector` marks a message with no text worth embedding (a tool
/// call without text arguments), so a backfill does not come back to it. Search reads only rows
/// of the agent's current model: after a model change the old rows are ignored until the
/// backfill replaces them. A message whose text changes loses its vector.
const MESSAGE_VECTORS: &str = r#"
CREATE TABLE message_vectors (
    message_pk INTEGER PRIMARY KEY NOT NULL REFERENCES messages (pk) ON DELETE CASCADE,
    model      TEXT NOT NULL,
    vector     BLOB NOT NULL
);
CREATE TRIGGER message_vectors_stale AFTER UPDATE OF content, tool_calls ON messages BEGIN
    DELETE FROM message_vectors WHERE message_pk = old.pk;
END;
"#;

/// Per-agent search indexes. Full text: the shared `passages_fts` and
/// `messages_fts` tables give way to one pair of FTS5 tables per agent (`fts_partitions.rs`),
/// so BM25's statistics are the agent's own; the triggers now queue changed rows in
/// `fts_pending`, which the store routes to the agent's tables before every commit, and the
/// migration queues every existing row, which the first flush (when the store opens) routes to
/// the new tables. Vectors: `passage_vector_log` records
/// every passage whose vector appeared, changed or went away (by trigger, so no write path can
/// skip it); an agent's vector index remembers the last entry it applied and catches up from
/// the log (`vector_index.rs`). `passage_vector_pruned` says up to where an agent's log was
/// cut, so an index older than that is rebuilt instead of trusted.
const PER_AGENT_SEARCH_INDEXES: &str = r#"
CREATE TABLE fts_partitions (
    n        INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL UNIQUE
);
CREATE TABLE fts_pending (
    seq      INTEGER PRIMARY KEY,
    kind     TEXT NOT NULL,                 -- 'passage' | 'message' | 'agent'
    op       TEXT NOT NULL,                 -- 'insert' | 'update' | 'delete'
    pk       INTEGER NOT NULL,
    agent_id TEXT NOT NULL
);

DROP TRIGGER passages_ai;
DROP TRIGGER passages_ad;
DROP TRIGGER passages_au;
DROP TRIGGER messages_ai;
DROP TRIGGER messages_ad;
DROP TRIGGER messages_au;
DROP TABLE passages_fts;
DROP TABLE messages_fts;

CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO fts_pending (kind, op, pk, agent_id) VALUES ('passage', 'insert', new.pk, new.agent_id);
    UPDATE agent_stats SET passages = passages + 1 WHERE agent_id = new.agent_id;
END;
CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO fts_pending (kind, op, pk, agent_id) VALUES ('passage', 'delete', old.pk, old.agent_id);
    UPDATE agent_stats SET passages = passages - 1 WHERE agent_id = old.agent_id;
END;
CREATE TRIGGER passages_au AFTER UPDATE OF text ON passages BEGIN
    INSERT INTO fts_pending (kind, op, pk, agent_id) VALUES ('passage', 'update', new.pk, new.agent_id);
END;
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO fts_pending (kind, op, pk, agent_id) VALUES ('message', 'insert', new.pk, new.agent_id);
    UPDATE agent_stats SET messages = messages + 1 WHERE agent_id = new.agent_id;
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO fts_pending (kind, op, pk, agent_id) VALUES ('message', 'delete', old.pk, old.agent_id);
    UPDATE agent_stats SET messages = messages - 1 WHERE agent_id = old.agent_id;
END;
CREATE TRIGGER messages_au AFTER UPDATE OF content, reasoning, tool_calls ON messages BEGIN
    INSERT INTO fts_pending (kind, op, pk, agent_id) VALUES ('message', 'update', new.pk, new.agent_id);
END;
-- Every existing row goes to its agent's new tables at the first flush (when the store opens).
INSERT INTO fts_pending (kind, op, pk, agent_id) SELECT 'passage', 'insert', pk, agent_id FROM passages;
INSERT INTO fts_pending (kind, op, pk, agent_id) SELECT 'message', 'insert', pk, agent_id FROM messages;
CREATE TRIGGER agents_ad_fts AFTER DELETE ON agents BEGIN
    INSERT INTO fts_pending (kind, op, pk, agent_id) VALUES ('agent', 'delete', 0, old.id);
END;

CREATE TABLE passage_vector_log (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, also after pruning
    agent_id TEXT NOT NULL,
    pk       INTEGER NOT NULL
);
CREATE INDEX passage_vector_log_by_agent ON passage_vector_log (agent_id, seq);
CREATE TABLE passage_vector_pruned (
    agent_id TEXT PRIMARY KEY NOT NULL,
    seq      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER passages_vector_ai AFTER INSERT ON passages WHEN new.embedding IS NOT NULL BEGIN
    INSERT INTO passage_vector_log (agent_id, pk) VALUES (new.agent_id, new.pk);
END;
CREATE TRIGGER passages_vector_ad AFTER DELETE ON passages WHEN old.embedding IS NOT NULL BEGIN
    INSERT INTO passage_vector_log (agent_id, pk) VALUES (old.agent_id, old.pk);
END;
CREATE TRIGGER passages_vector_au AFTER UPDATE OF embedding, embedding_dim ON passages
WHEN old.embedding IS NOT NULL OR new.embedding IS NOT NULL BEGIN
    INSERT INTO passage_vector_log (agent_id, pk) VALUES (new.agent_id, new.pk);
END;
"#;

/// Search speed: a passage's time by its row key, in an index of its own. Neighbour
/// smoothing looks up the time of each of a search's 200 candidates; read from `passages`,
/// whose rows carry their vectors (1.5 kB at 384 dimensions, so the table outgrows SQLite's
/// page cache), each look-up was a random page read. This index is about 20 bytes a passage.
const PASSAGE_TIMES_BY_KEY: &str =
    "CREATE INDEX passages_time_by_key ON passages (pk, created_at);";

/// Late interaction's word-piece vectors per passage, compressed (`engram_retrieval::late::token_codes`),
/// computed once in the background after a passage is written so a search encodes only its
/// query. Derived data: a text edit drops them (the backfill computes them again), as does a
/// change of the agent's embedding model (`model` is the handle they were computed with).
const PASSAGE_TOKENS: &str = r#"
CREATE TABLE passage_tokens (
    pk    INTEGER PRIMARY KEY REFERENCES passages (pk) ON DELETE CASCADE,
    model TEXT NOT NULL,
    codes BLOB NOT NULL
);
CREATE TRIGGER passage_tokens_stale AFTER UPDATE OF text ON passages BEGIN
    DELETE FROM passage_tokens WHERE pk = new.pk;
END;
-- What a backfill looks for, without reading every row of a big archive.
CREATE INDEX passages_without_vector ON passages (agent_id, pk) WHERE embedding IS NULL;
"#;

/// Facts that change, and sleep-time passes. A passage that stopped being current keeps its
/// row and records when, how (`superseded` or `merged`), by which passage and by which pass;
/// a partial index finds an agent's replaced passages, so searches of agents with none skip
/// the filter. An agent's sleep-time settings (and the last message its passes read) live in
/// a row of their own; each pass leaves one row and one row per change, so the window can show
/// and undo them.
const SLEEPTIME: &str = r#"
ALTER TABLE passages ADD COLUMN superseded_at INTEGER;
ALTER TABLE passages ADD COLUMN superseded_kind TEXT;
ALTER TABLE passages ADD COLUMN superseded_by TEXT;
ALTER TABLE passages ADD COLUMN superseded_pass TEXT;
CREATE INDEX passages_superseded ON passages (agent_id) WHERE superseded_at IS NOT NULL;

CREATE TABLE sleeptime_settings (
    agent_id TEXT PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    settings TEXT NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE sleeptime_passes (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    trigger TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    model TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at INTEGER NOT NULL,
    messages_read INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    model_calls INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL
);
CREATE INDEX sleeptime_passes_by_agent ON sleeptime_passes (agent_id, started_at);
CREATE INDEX sleeptime_passes_by_time ON sleeptime_passes (started_at);

CREATE TABLE sleeptime_changes (
    pass_id TEXT NOT NULL REFERENCES sleeptime_passes(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    change TEXT NOT NULL,
    undone_at INTEGER,
    PRIMARY KEY (pass_id, idx)
);
"#;

/// Every migration, oldest first.
const MIGRATIONS: &[M<'static>] = &[
    M::up(V1),
    M::up(BLOCK_VERSIONS),
    M::up(TOOL_SANDBOX),
    M::up(AGENT_TAGS_AND_PASSAGE_EDITS),
    M::up(TOOL_TRUST),
    M::up(COMPACTION_MARKERS),
    M::up(BLOCKS_BY_CREATION),
    M::up(PENDING_TOOL_APPROVALS),
    M::up(TURN_ROLLBACK),
    M::up(MODEL_PRICES),
    M::up(MCP_SERVERS),
    M::up(MCP_PENDING_TOOLS),
    M::up(PASSAGE_TAGS_BY_AGENT_AND_TIME),
    M::up(MESSAGE_VECTORS),
    M::up(PER_AGENT_SEARCH_INDEXES),
    M::up(PASSAGE_TIMES_BY_KEY),
    M::up(PASSAGE_TOKENS),
    M::up(SLEEPTIME),
    M::up(crate::migration_folders::FOLDERS),
    M::up(crate::migration_client_writes::CLIENT_WRITES),
    M::up(crate::migration_folders::FOLDER_WATCHES),
    M::up(crate::migration_folders::FOLDER_VECTOR_GENERATIONS),
    M::up(crate::migration_users::USERS),
    M::up(crate::migration_folders::FILE_TEXT_PIECES),
];

/// The migration list (exposed to tests so they can validate it).
pub(crate) fn migrations() -> Migrations<'static> {
    Migrations::from_slice(MIGRATIONS)
}

/// Brings `conn` to the latest schema version.
///
/// Errors: [`Error::Storage`] if a migration fails or the file was written by a newer Engram.
pub(crate) fn run(conn: &mut Connection) -> Result<()> {
    migrations()
        .to_latest(conn)
        .map_err(|e| Error::Storage(format!("migrating the database failed: {e}")))?;
    // Rows queued for the per-agent full-text tables (by a migration, or by a writer that
    // stopped before flushing) reach them before anything is searched.
    let tx = conn.transaction().db()?;
    crate::fts_partitions::flush(&tx)?;
    tx.commit().db()?;
    // Cheap sanity check that the FTS5 module is present in this SQLite build.
    conn.execute_batch(
        "CREATE VIRTUAL TABLE temp.fts5_check USING fts5 (x); DROP TABLE temp.fts5_check;",
    )
    .db()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        migrations().validate().unwrap();
    }

    #[test]
    fn tags_kept_in_agent_file_extras_move_to_the_tag_table() {
        let mut conn = Connection::open_in_memory().unwrap();
        Migrations::from_slice(&MIGRATIONS[..1])
            .to_latest(&mut conn)
            .unwrap();
        conn.execute_batch(
            r#"INSERT INTO agents (id, name, description, system, llm, loop_style, max_steps,
                                   tools, created_at, updated_at)
               VALUES ('agent-1', 'A', '', '', '{}', 'tool_loop', 50, '[]', 0, 0);
               INSERT INTO settings (key, value)
               VALUES ('agent_file_extras.agent-1', '{"tags": ["b", "a", 3]}'),
                      ('agent_file_extras.agent-gone', '{"tags": ["x"]}');"#,
        )
        .unwrap();
        migrations().to_latest(&mut conn).unwrap();
        let tags: Vec<(String, String)> = conn
            .prepare("SELECT agent_id, tag FROM agent_tags ORDER BY position")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            tags,
            [
                ("agent-1".to_owned(), "b".to_owned()),
                ("agent-1".to_owned(), "a".to_owned())
            ]
        );
    }
    #[test]
    fn agents_compacted_before_dividers_get_one_at_their_last_evicted_message() {
        let mut conn = Connection::open_in_memory().unwrap();
        let before = MIGRATIONS
            .iter()
            .position(|m| *m == M::up(COMPACTION_MARKERS))
            .unwrap();
        Migrations::from_slice(&MIGRATIONS[..before])
            .to_latest(&mut conn)
            .unwrap();
        conn.execute_batch(
            r#"INSERT INTO agents (id, name, description, system, llm, loop_style, max_steps,
                                   tools, created_at, updated_at, summary)
               VALUES ('agent-1', 'A', '', '', '{}', 'tool_loop', 50, '[]', 0, 0, 'so far'),
                      ('agent-2', 'B', '', '', '{}', 'tool_loop', 50, '[]', 0, 0, NULL);
               INSERT INTO messages (id, agent_id, seq, role, kind, content, in_context, created_at)
               VALUES ('m1', 'agent-1', 1024, 'user', 'chat', 'a', 0, 10),
                      ('m2', 'agent-1', 2048, 'user', 'chat', 'b', 0, 20),
                      ('m3', 'agent-1', 3072, 'user', 'chat', 'c', 1, 30),
                      ('m4', 'agent-2', 1024, 'user', 'chat', 'd', 0, 40);"#,
        )
        .unwrap();
        migrations().to_latest(&mut conn).unwrap();
        let rows: Vec<(String, i64, String, i64)> = conn
            .prepare("SELECT agent_id, seq, summary, evicted FROM compactions")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows, [("agent-1".to_owned(), 2048, "so far".to_owned(), 2)]);
    }

    #[test]
    fn tag_rows_gain_their_passage_agent_and_time_and_the_tag_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        let before = MIGRATIONS
            .iter()
            .position(|m| *m == M::up(PASSAGE_TAGS_BY_AGENT_AND_TIME))
            .unwrap();
        Migrations::from_slice(&MIGRATIONS[..before])
            .to_latest(&mut conn)
            .unwrap();
        conn.execute_batch(
            r#"INSERT INTO agents (id, name, description, system, llm, loop_style, max_steps,
                                   tools, created_at, updated_at)
               VALUES ('agent-1', 'A', '', '', '{}', 'tool_loop', 50, '[]', 0, 0),
                      ('agent-2', 'B', '', '', '{}', 'tool_loop', 50, '[]', 0, 0);
               INSERT INTO passages (pk, id, agent_id, text, created_at)
               VALUES (7, 'p1', 'agent-1', 'a', 100), (9, 'p2', 'agent-2', 'b', 200);
               INSERT INTO passage_tags (passage_id, tag, position)
               VALUES ('p1', 'x', 0), ('p1', 'y', 1), ('p2', 'x', 0);"#,
        )
        .unwrap();
        migrations().to_latest(&mut conn).unwrap();
        let rows: Vec<(String, String, i64, String, i64, i64)> = conn
            .prepare(
                "SELECT passage_id, tag, position, agent_id, created_at, passage_pk
                 FROM passage_tags ORDER BY passage_id, position",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let row = |p: &str, t: &str, pos, a: &str, at, pk| {
            (p.to_owned(), t.to_owned(), pos, a.to_owned(), at, pk)
        };
        assert_eq!(
            rows,
            [
                row("p1", "x", 0, "agent-1", 100, 7),
                row("p1", "y", 1, "agent-1", 100, 7),
                row("p2", "x", 0, "agent-2", 200, 9),
            ]
        );
        // The copies follow a passage that moves in time, and go with it.
        conn.execute_batch(
            "PRAGMA foreign_keys = ON;
             UPDATE passages SET created_at = 300 WHERE id = 'p1';
             DELETE FROM passages WHERE id = 'p2';",
        )
        .unwrap();
        let kept: Vec<(String, i64)> = conn
            .prepare("SELECT passage_id, created_at FROM passage_tags ORDER BY tag")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(kept, [("p1".to_owned(), 300), ("p1".to_owned(), 300)]);
    }

    #[test]
    fn text_of_every_agent_moves_to_its_own_full_text_tables() {
        let mut conn = Connection::open_in_memory().unwrap();
        let before = MIGRATIONS
            .iter()
            .position(|m| format!("{m:?}").contains("CREATE TABLE fts_partitions"))
            .unwrap();
        Migrations::from_slice(&MIGRATIONS[..before])
            .to_latest(&mut conn)
            .unwrap();
        conn.execute_batch(
            r#"INSERT INTO agents (id, name, description, system, llm, loop_style, max_steps,
                                   tools, created_at, updated_at)
               VALUES ('agent-1', 'A', '', '', '{}', 'tool_loop', 50, '[]', 0, 0),
                      ('agent-2', 'B', '', '', '{}', 'tool_loop', 50, '[]', 1, 0);
               INSERT INTO passages (id, agent_id, text, created_at)
               VALUES ('p1', 'agent-1', 'tulips in april', 0),
                      ('p2', 'agent-2', 'tulips in may', 0);
               INSERT INTO messages (id, agent_id, seq, role, kind, content, in_context, created_at)
               VALUES ('m1', 'agent-1', 1024, 'user', 'chat', 'gardening plans', 1, 10);"#,
        )
        .unwrap();
        run(&mut conn).unwrap();
        let hits = |sql: &str| -> Vec<i64> {
            conn.prepare(sql)
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        let n1: i64 = conn
            .query_row(
                "SELECT n FROM fts_partitions WHERE agent_id = 'agent-1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let n2: i64 = conn
            .query_row(
                "SELECT n FROM fts_partitions WHERE agent_id = 'agent-2'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let p1: i64 = conn
            .query_row("SELECT pk FROM passages WHERE id = 'p1'", [], |r| r.get(0))
            .unwrap();
        let p2: i64 = conn
            .query_row("SELECT pk FROM passages WHERE id = 'p2'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            hits(&format!(
                "SELECT rowid FROM passages_fts_{n1} WHERE passages_fts_{n1} MATCH 'tulip'"
            )),
            [p1]
        );
        assert_eq!(
            hits(&format!(
                "SELECT rowid FROM passages_fts_{n2} WHERE passages_fts_{n2} MATCH 'tulip'"
            )),
            [p2]
        );
        assert_eq!(
            hits(&format!(
                "SELECT count(*) FROM messages_fts_{n1} WHERE messages_fts_{n1} MATCH 'garden'"
            )),
            [1]
        );
        assert_eq!(
            hits(&format!(
                "SELECT count(*) FROM messages_fts_{n2} WHERE messages_fts_{n2} MATCH 'garden'"
            )),
            [0]
        );
        let shared: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name IN ('passages_fts', 'messages_fts')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(shared, 0, "the shared tables are gone");
    }
}
