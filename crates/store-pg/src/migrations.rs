//! The PostgreSQL schema, as an append-only list of numbered migrations.
//!
//! Never edit a released migration; add one at the end. Applied migrations are rows of
//! `engram_migrations`. Opening a store applies the pending ones in **one transaction** that
//! first takes a transaction-level advisory lock (`pg_advisory_xact_lock`): replicas that start
//! together queue on the lock, the first applies the migrations, the others find them applied.
//! PostgreSQL's DDL is transactional, so a failing migration leaves nothing of the batch behind
//! and the lock goes with the transaction, also when a replica dies half-way.
//!
//! Conventions: ids are `text` (`agent-<uuid>`), timestamps `timestamptz` (microseconds),
//! JSON-valued fields `jsonb`, lengths and limits `bigint` characters.

use crate::PgError;
use deadpool_postgres::GenericClient;

/// One schema change.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Its number, from 1, one more than the one before.
    pub version: i32,
    /// What it does, in a few words (kept in `engram_migrations`).
    pub name: &'static str,
    /// The statements.
    pub sql: &'static str,
}

/// Every migration, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "agents and blocks",
        sql: V1,
    },
    Migration {
        version: 2,
        name: "agent leases",
        sql: AGENT_LEASES,
    },
    Migration {
        version: 3,
        name: "messages",
        sql: MESSAGES,
    },
    Migration {
        version: 4,
        name: "passages",
        sql: PASSAGES,
    },
    Migration {
        version: 5,
        name: "users",
        sql: USERS,
    },
    Migration {
        version: 6,
        name: "settings",
        sql: SETTINGS,
    },
    Migration {
        version: 7,
        name: "steps",
        sql: STEPS,
    },
    Migration {
        version: 8,
        name: "context",
        sql: CONTEXT,
    },
    Migration {
        version: 9,
        name: "sleep-time",
        sql: SLEEPTIME,
    },
    Migration {
        version: 10,
        name: "tools",
        sql: TOOLS,
    },
    Migration {
        version: 11,
        name: "agent tags",
        sql: AGENT_TAGS,
    },
    Migration {
        version: 12,
        name: "pending endpoints",
        sql: PENDING_ENDPOINTS,
    },
    Migration {
        version: 13,
        name: "block history by step",
        sql: HISTORY_BY_STEP,
    },
    Migration {
        version: 14,
        name: "model prices",
        sql: MODEL_PRICES,
    },
    Migration {
        version: 15,
        name: "passages without a vector",
        sql: PASSAGES_WITHOUT_VECTOR,
    },
    Migration {
        version: 16,
        name: "lease fence",
        sql: LEASE_FENCE,
    },
    Migration {
        version: 17,
        name: "sleep-time claims",
        sql: SLEEPTIME_CLAIMS,
    },
    Migration {
        version: 18,
        name: "message vectors",
        sql: MESSAGE_VECTORS,
    },
];

/// The advisory lock key migrations run under (`"engram"` in ASCII, then 1): any number that
/// no other program on the database uses.
const LOCK_KEY: i64 = 0x656e_6772_616d_0001;

/// Version 1: agents, blocks, their links and the blocks' history.
const V1: &str = r#"
CREATE TABLE agents (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    description text NOT NULL,
    system      text NOT NULL,
    llm         jsonb NOT NULL,             -- LlmConfig
    embedding   jsonb,                      -- EmbeddingConfig
    loop_style  text NOT NULL CHECK (loop_style IN ('classic', 'tool_loop')),
    max_steps   bigint NOT NULL,
    tools       jsonb NOT NULL,             -- array of tool names
    tool_rules  jsonb NOT NULL,             -- array of ToolRule
    summary     text,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX agents_by_created ON agents (created_at, id);

CREATE TABLE blocks (
    id          text PRIMARY KEY,
    label       text NOT NULL,
    value       text NOT NULL,
    char_limit  bigint NOT NULL CHECK (char_limit >= 0),   -- characters, not bytes
    description text NOT NULL,
    read_only   boolean NOT NULL,
    version     bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX blocks_by_created ON blocks (created_at, id);
CREATE INDEX blocks_by_label ON blocks (label, created_at);

-- A label is unique per agent; it lives on the (shareable) block, so the store checks it under
-- the agent's row lock instead of an index.
CREATE TABLE agent_blocks (
    agent_id text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    block_id text NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    position bigint NOT NULL,
    PRIMARY KEY (agent_id, block_id)
);
CREATE INDEX agent_blocks_by_block ON agent_blocks (block_id);

CREATE TABLE block_history (
    pk          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,   -- edit order
    id          text NOT NULL UNIQUE,
    block_id    text NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    editor      jsonb NOT NULL,             -- Editor
    old_value   text NOT NULL,
    new_value   text NOT NULL,
    old_version bigint,
    new_version bigint,
    step_id     text,
    created_at  timestamptz NOT NULL
);
CREATE INDEX block_history_by_block ON block_history (block_id, pk);
"#;

/// Leases per agent: one row per agent that was ever leased, holding its current lease.
/// `token` only grows (the fencing token); `expires_at` is set from the database's clock.
const AGENT_LEASES: &str = r#"
CREATE TABLE agent_leases (
    agent_id   text PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
    holder     text NOT NULL,
    token      bigint NOT NULL,
    expires_at timestamptz NOT NULL
);
"#;

/// Recall memory: every message of every agent, numbered per agent by `seq`, with its words
/// indexed for full-text search.
///
/// The words are a stored generated column, so every write path keeps them in step with the
/// row. They are indexed with a text search configuration of our own, `engram_words`, made to
/// find what the SQLite store's FTS5 tokenizer (`porter unicode61`) finds: English Snowball
/// stemming like the built-in `english`, but **without** its stop-word list, as FTS5 keeps stop
/// words (a query of stop words only, "who are you", is searched as written on both); and
/// accents removed from non-ASCII words first (`unaccent`, a trusted contrib extension shipped
/// with PostgreSQL), as `unicode61` removes diacritics ("cafe" finds "café"). The function
/// building the words has a SQL-standard body, parsed once here, so the configuration it names
/// is bound by identity and does not depend on the `search_path` of whoever writes a row (or
/// restores a dump).
const MESSAGES: &str = r#"
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE TEXT SEARCH DICTIONARY engram_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION engram_words (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION engram_words
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart WITH engram_stem;
ALTER TEXT SEARCH CONFIGURATION engram_words
    ALTER MAPPING FOR word, hword, hword_part WITH unaccent, engram_stem;

-- The searchable text of a message: content, reasoning and the arguments of its tool calls.
CREATE FUNCTION engram_message_words(content text, reasoning text, tool_calls jsonb)
    RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('engram_words'::regconfig,
        content || ' ' || coalesce(reasoning, '') || ' ' ||
        coalesce((SELECT string_agg(c ->> 'arguments', ' ')
                  FROM jsonb_array_elements(tool_calls) AS c), ''));

CREATE TABLE messages (
    id           text PRIMARY KEY,
    agent_id     text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    seq          bigint NOT NULL,           -- SEQ_GAP apart, so repairs can slot in
    role         text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    kind         text NOT NULL CHECK (kind IN ('chat', 'heartbeat', 'alert', 'event')),
    content      text NOT NULL,
    reasoning    text,
    tool_calls   jsonb,                     -- array of ToolCall, NULL when none
    tool_call_id text,
    tool_name    text,
    run_id       text,
    step_id      text,
    in_context   boolean NOT NULL,
    created_at   timestamptz NOT NULL,
    words        tsvector NOT NULL
        GENERATED ALWAYS AS (engram_message_words(content, reasoning, tool_calls)) STORED,
    UNIQUE (agent_id, seq)
);
CREATE INDEX messages_in_context ON messages (agent_id, seq) WHERE in_context;
CREATE INDEX messages_by_time ON messages (agent_id, created_at);
CREATE INDEX messages_words ON messages USING gin (words);
"#;

/// Archival memory: passages with their tags (an ordered array, duplicates dropped by the
/// store), their vector as given (little-endian `f32`s, at its native dimension) and their
/// words, indexed as messages' are (`engram_words`). `pk` is the insertion order, which breaks
/// ties between passages stored at the same microsecond as the SQLite store's row key does.
/// The supersession columns mark a fact that changed (set by consolidation); lists and
/// searches leave such passages out.
const PASSAGES: &str = r#"
CREATE TABLE passages (
    pk              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id              text PRIMARY KEY,
    agent_id        text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    text            text NOT NULL,
    tags            text[] NOT NULL,
    created_at      timestamptz NOT NULL,
    embedding_dim   integer CHECK (embedding_dim > 0),
    embedding       bytea CHECK (octet_length(embedding) = 4 * embedding_dim),
    step_id         text,
    superseded_at   timestamptz,
    superseded_kind text CHECK (superseded_kind IN ('superseded', 'merged')),
    superseded_by   text,
    superseded_pass text,
    words           tsvector NOT NULL
        GENERATED ALWAYS AS (to_tsvector('engram_words'::regconfig, text)) STORED
);
CREATE INDEX passages_by_time ON passages (agent_id, created_at, pk);
CREATE INDEX passages_words ON passages USING gin (words);
CREATE INDEX passages_tags ON passages USING gin (tags);
"#;

/// A shared server's users, the SHA-256 of each of their tokens (never a token itself), which
/// agents each may use and the blocks each made on their own. An agent or block without rows
/// here is the administrator's alone.
const USERS: &str = r#"
CREATE TABLE users (
    id         text PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL
);

CREATE TABLE user_tokens (
    hash       bytea PRIMARY KEY CHECK (octet_length(hash) = 32),
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);
CREATE INDEX user_tokens_by_user ON user_tokens (user_id);

CREATE TABLE agent_access (
    agent_id text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    user_id  text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    access   text NOT NULL CHECK (access IN ('read', 'write', 'owner')),
    PRIMARY KEY (agent_id, user_id)
);
CREATE INDEX agent_access_by_user ON agent_access (user_id, agent_id);

CREATE TABLE block_owners (
    block_id text PRIMARY KEY REFERENCES blocks (id) ON DELETE CASCADE,
    user_id  text NOT NULL REFERENCES users (id) ON DELETE CASCADE
);
"#;

/// Model providers (never their keys) and the app's key-value settings.
const SETTINGS: &str = r#"
CREATE TABLE providers (
    name          text PRIMARY KEY,
    kind          text NOT NULL,
    base_url      text,
    default_model text,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

CREATE TABLE settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);
"#;

/// Steps (one model call each: usage and timings) and the tool call a paused run waits on, at
/// most one per agent (written only inside step commits).
const STEPS: &str = r#"
CREATE TABLE steps (
    id                text PRIMARY KEY,
    agent_id          text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    run_id            text NOT NULL,
    step_index        bigint NOT NULL,
    model             text NOT NULL,
    prompt_tokens     bigint NOT NULL,          -- tokens
    completion_tokens bigint NOT NULL,          -- tokens
    finish_reason     text,
    started_at        timestamptz NOT NULL,
    llm_ms            bigint NOT NULL,          -- milliseconds
    step_ms           bigint NOT NULL           -- milliseconds
);
CREATE INDEX steps_by_agent ON steps (agent_id, started_at);
CREATE INDEX steps_by_run ON steps (run_id, step_index);

CREATE TABLE pending_approvals (
    agent_id     text PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
    run_id       text NOT NULL,
    step_id      text NOT NULL,
    message_id   text NOT NULL,               -- the assistant message that made the call
    tool_call    jsonb NOT NULL,              -- ToolCall {id, name, arguments}
    requested_at timestamptz NOT NULL
);

CREATE INDEX passages_by_step ON passages (step_id) WHERE step_id IS NOT NULL;
"#;

/// The context window's bookkeeping: the compiled system prompt an agent last had (a cache,
/// with the memory section it was built from), compaction records (where the chat shows a
/// divider) and how each run ended.
const CONTEXT: &str = r#"
ALTER TABLE agents ADD COLUMN system_cache_memory text, ADD COLUMN system_cache_prompt text;

CREATE TABLE compactions (
    pk         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id   text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,             -- newest message folded in; the divider follows it
    summary    text NOT NULL,
    evicted    bigint NOT NULL,             -- messages this compaction took out of context
    created_at timestamptz NOT NULL
);
CREATE INDEX compactions_by_seq ON compactions (agent_id, seq);

CREATE TABLE runs (
    id                text PRIMARY KEY,
    agent_id          text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    stop_reason       text NOT NULL,
    error             jsonb,                -- ErrorBody
    prompt_tokens     bigint NOT NULL,      -- tokens
    completion_tokens bigint NOT NULL,      -- tokens
    step_count        bigint NOT NULL,
    ended_at          timestamptz NOT NULL
);
CREATE INDEX runs_by_agent ON runs (agent_id, ended_at, id);
"#;

/// Applies every pending migration, once, however many stores open the database at the same
/// moment.
///
/// Errors: [`PgError::Migration`] (nothing of the batch applied); [`PgError::TooNew`] when the
/// database knows migrations this build does not; [`PgError::Db`].
pub(crate) async fn run(client: &mut deadpool_postgres::Client) -> Result<(), PgError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS engram_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await?;
    let found: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM engram_migrations",
            &[],
        )
        .await?
        .get(0);
    let known = MIGRATIONS.last().map_or(0, |m| m.version);
    if found > known {
        return Err(PgError::TooNew { found, known });
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > found) {
        let failed = |source| PgError::Migration {
            version: m.version,
            name: m.name,
            source,
        };
        tx.batch_execute(m.sql).await.map_err(failed)?;
        tx.execute(
            "INSERT INTO engram_migrations (version, name) VALUES ($1, $2)",
            &[&m.version, &m.name],
        )
        .await
        .map_err(failed)?;
        tracing::info!(
            version = m.version,
            name = m.name,
            "applied database migration"
        );
    }
    tx.commit().await?;
    Ok(())
}

/// `(version, name)` of every applied migration, oldest first.
pub(crate) async fn applied(client: &impl GenericClient) -> Result<Vec<(i32, String)>, PgError> {
    let rows = client
        .query(
            "SELECT version, name FROM engram_migrations ORDER BY version",
            &[],
        )
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// Sleep-time passes: each agent's settings (JSON) and reading position (the `seq` of the last
/// message its passes read), every pass's record, and its changes in order (each a JSON
/// `PassChangeKind`; `undone_at` once undone). `pk` is the order passes were stored in, which
/// breaks ties between passes started at the same microsecond.
const SLEEPTIME: &str = r#"
CREATE TABLE sleeptime_settings (
    agent_id text PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
    settings jsonb NOT NULL,
    last_seq bigint NOT NULL DEFAULT 0
);

CREATE TABLE sleeptime_passes (
    pk                bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                text PRIMARY KEY,
    agent_id          text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    trigger           text NOT NULL,
    status            text NOT NULL,
    reason            text,
    model             text NOT NULL,
    started_at        timestamptz NOT NULL,
    ended_at          timestamptz NOT NULL,
    messages_read     bigint NOT NULL,
    last_seq          bigint NOT NULL,
    model_calls       bigint NOT NULL,
    prompt_tokens     bigint NOT NULL,      -- tokens
    completion_tokens bigint NOT NULL       -- tokens
);
CREATE INDEX sleeptime_passes_by_agent ON sleeptime_passes (agent_id, started_at, pk);

CREATE TABLE sleeptime_changes (
    pass_id   text NOT NULL REFERENCES sleeptime_passes (id) ON DELETE CASCADE,
    idx       bigint NOT NULL,
    change    jsonb NOT NULL,
    undone_at timestamptz,
    PRIMARY KEY (pass_id, idx)
);
"#;

/// User tools, unique by name (byte order, as the SQLite store compares them). Agents refer to
/// them by name in `agents.tools` and `agents.tool_rules`; the store rewrites those when a tool
/// is renamed or deleted.
const TOOLS: &str = r#"
CREATE TABLE tools (
    id                text PRIMARY KEY,
    name              text NOT NULL UNIQUE,
    description       text NOT NULL,
    json_schema       jsonb NOT NULL,         -- the OpenAI function object
    source_code       text,
    language          text NOT NULL CHECK (language IN ('python', 'builtin', 'mcp')),
    return_char_limit bigint NOT NULL,        -- characters
    tags              jsonb NOT NULL,         -- array of strings
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    network           boolean NOT NULL,
    allow_unsandboxed boolean NOT NULL,
    origin            jsonb NOT NULL,         -- ToolOrigin
    trusted_hash      text,                   -- SHA-256 of the source the person trusted
    mcp               jsonb                   -- McpToolSource, for tools of MCP servers
);
"#;

/// Version 11: an agent's tags, in their order (Letta's `tags` of an agent).
const AGENT_TAGS: &str = r#"
ALTER TABLE agents ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
CREATE INDEX agents_tags ON agents USING gin (tags);
"#;

/// Version 12: base URLs an imported agent file asked for, kept inactive until the person
/// accepts them (one per agent and kind).
const PENDING_ENDPOINTS: &str = r#"
CREATE TABLE pending_endpoints (
    agent_id   text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('llm', 'embedding')),
    base_url   text NOT NULL,
    source     text NOT NULL,                 -- the agent file's name
    created_at timestamptz NOT NULL,
    PRIMARY KEY (agent_id, kind)
);
"#;

/// Version 13: the block edits of given steps, found without reading every block's history
/// (what a rollback undoes, and the diffs a reloaded chat shows under each tool call).
const HISTORY_BY_STEP: &str = r#"
CREATE INDEX block_history_by_step ON block_history (step_id) WHERE step_id IS NOT NULL;
"#;

/// Version 14: the prices people set per model (US dollars per million tokens), over the
/// built-in table; one price list for every replica, so a cost reads the same on each.
const MODEL_PRICES: &str = r#"
CREATE TABLE model_prices (
    model           text PRIMARY KEY,             -- provider/model handle
    input_per_mtok  double precision NOT NULL,    -- USD per million prompt tokens
    output_per_mtok double precision NOT NULL,    -- USD per million completion tokens
    updated_at      timestamptz NOT NULL
);
"#;

/// Version 15: the passages still waiting for a vector (imported without one, or written
/// while the embedding model was down), found without reading an agent's whole archive: a
/// backfill looks for them after every chat step.
const PASSAGES_WITHOUT_VECTOR: &str = r#"
CREATE INDEX passages_without_vector ON passages (agent_id, pk) WHERE embedding IS NULL;
"#;

/// Version 16: the check a write under a lease makes (the lease is still the agent's current,
/// unexpired one: its row is then locked until the transaction ends) as a statement that
/// fails when it is not, with SQLSTATE `EG001`. A failed statement aborts the transaction, so
/// a write sent in one pipeline with its `COMMIT` is rolled back without a word from the client.
const LEASE_FENCE: &str = r#"
CREATE FUNCTION engram_hold_lease(agent text, lease bigint) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM agent_leases
        WHERE agent_id = agent AND token = lease AND expires_at > clock_timestamp()
        FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'agent % is no longer leased under token %', agent, lease
            USING ERRCODE = 'EG001';
    END IF;
END
$$;
"#;

/// Version 17: which pass runs for each agent now, until when (by the database's clock): one
/// pass per agent across replicas, and a claim left by a replica that died expires on its own.
const SLEEPTIME_CLAIMS: &str = r#"
ALTER TABLE sleeptime_settings ADD COLUMN running_pass text, ADD COLUMN running_until timestamptz;
"#;

/// Version 18: a vector per message of the agent's embedding model at the time (`dim` 0 and
/// no bytes: the message has nothing to embed), for recall search by meaning. A change of a
/// message's text takes its vector away, so no write path can leave a stale one.
const MESSAGE_VECTORS: &str = r#"
CREATE TABLE message_vectors (
    message_id text PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    model      text NOT NULL,
    dim        integer NOT NULL,
    vector     bytea NOT NULL
);

CREATE FUNCTION engram_message_vector_stale() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM message_vectors WHERE message_id = OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER message_vectors_stale AFTER UPDATE OF content, tool_calls ON messages
    FOR EACH ROW
    WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.tool_calls IS DISTINCT FROM NEW.tool_calls)
    EXECUTE FUNCTION engram_message_vector_stale();
"#;
