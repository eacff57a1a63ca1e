//! The schema of folders of documents (appended to `migrations::MIGRATIONS`; never edit once
//! released). A file's passages ("chunks") have a full-text index of their own,
//! `file_chunks_fts`, shared by all folders (a folder is small next to an agent's memory, and
//! searches filter by the agent's attached folders), and their vectors live in the chunk row.

/// Folders, their files and passages, folder ↔ agent attachments and each agent's file state.
pub(crate) const FOLDERS: &str = r#"
CREATE TABLE folders (
    id           TEXT PRIMARY KEY NOT NULL,
    name         TEXT NOT NULL UNIQUE,
    description  TEXT NOT NULL DEFAULT '',
    instructions TEXT NOT NULL DEFAULT '',
    embedding    TEXT,                      -- JSON EmbeddingConfig, NULL: words alone
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE folder_files (
    pk          INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    folder_id   TEXT NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,              -- path relative to the folder, '/'-separated
    mime        TEXT NOT NULL,
    size        INTEGER NOT NULL,           -- bytes as uploaded
    sha256      TEXT NOT NULL,              -- lower-case hex of the bytes
    status      TEXT NOT NULL,              -- pending | parsing | embedding | completed | error
    error       TEXT,
    text        TEXT,                       -- the extracted text, NULL until parsed
    page_starts TEXT,                       -- JSON: first line (1-based) of each page, paged files
    lines       INTEGER NOT NULL DEFAULT 0,
    chunks      INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (folder_id, name)
);

CREATE TABLE file_chunks (
    pk          INTEGER PRIMARY KEY,
    file_id     TEXT NOT NULL REFERENCES folder_files (id) ON DELETE CASCADE,
    folder_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,           -- position in the file, 0-based
    text        TEXT NOT NULL,
    page        INTEGER,
    heading     TEXT,
    line_start  INTEGER NOT NULL,           -- 1-based, inclusive
    line_end    INTEGER NOT NULL,
    model       TEXT,                       -- embedding model handle of `embedding`
    embedding   BLOB,                       -- little-endian f32s
    UNIQUE (file_id, seq)
);
CREATE INDEX file_chunks_by_folder ON file_chunks (folder_id, pk);
CREATE INDEX file_chunks_unembedded ON file_chunks (folder_id) WHERE embedding IS NULL;

CREATE VIRTUAL TABLE file_chunks_fts USING fts5 (
    text, content = '', contentless_delete = 1, tokenize = 'porter unicode61'
);
CREATE TRIGGER file_chunks_ai AFTER INSERT ON file_chunks BEGIN
    INSERT INTO file_chunks_fts (rowid, text) VALUES (new.pk, new.text);
END;
CREATE TRIGGER file_chunks_ad AFTER DELETE ON file_chunks BEGIN
    DELETE FROM file_chunks_fts WHERE rowid = old.pk;
END;

CREATE TABLE agent_folders (
    agent_id    TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    folder_id   TEXT NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    attached_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, folder_id)
) WITHOUT ROWID;
CREATE INDEX agent_folders_by_folder ON agent_folders (folder_id);

-- An agent's state of one file of an attached folder. Rows go with the file, the agent or
-- the attachment (the service deletes them on detach, in the same transaction).
CREATE TABLE agent_files (
    agent_id      TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    file_id       TEXT NOT NULL REFERENCES folder_files (id) ON DELETE CASCADE,
    is_open       INTEGER NOT NULL,
    view_offset   INTEGER NOT NULL,         -- first visible line, 1-based
    view_length   INTEGER NOT NULL,         -- visible lines
    last_accessed INTEGER NOT NULL,
    PRIMARY KEY (agent_id, file_id)
) WITHOUT ROWID;
CREATE INDEX agent_files_by_file ON agent_files (file_id);
"#;

/// A folder's link to a directory on disk that long-lived processes keep it in step with, and
/// what the watching process last found (`state`: linked | syncing | watching | missing).
pub(crate) const FOLDER_WATCHES: &str = r#"
CREATE TABLE folder_watches (
    folder_id  TEXT PRIMARY KEY NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    path       TEXT NOT NULL,               -- absolute, symbolic links resolved
    state      TEXT NOT NULL,
    error      TEXT,
    synced_at  INTEGER,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Counts every change of a folder's passage vectors in `folders.vector_generation`, so the
/// in-memory copies `semantic_search_files` scans (`folder_vectors`) know when to read them
/// again, whichever process changed them.
pub(crate) const FOLDER_VECTOR_GENERATIONS: &str = r#"
ALTER TABLE folders ADD COLUMN vector_generation INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER file_chunks_vector_ai AFTER INSERT ON file_chunks
WHEN new.embedding IS NOT NULL BEGIN
    UPDATE folders SET vector_generation = vector_generation + 1 WHERE id = new.folder_id;
END;
CREATE TRIGGER file_chunks_vector_au AFTER UPDATE OF embedding, model ON file_chunks BEGIN
    UPDATE folders SET vector_generation = vector_generation + 1 WHERE id = new.folder_id;
END;
CREATE TRIGGER file_chunks_vector_ad AFTER DELETE ON file_chunks
WHEN old.embedding IS NOT NULL BEGIN
    UPDATE folders SET vector_generation = vector_generation + 1 WHERE id = old.folder_id;
END;
"#;

/// The text of a file read as a stream (a text file over 64 MiB), kept in pieces of about
/// 1 MiB cut at line ends instead of in `folder_files.text`, so a reader loads the pieces it
/// needs. `folder_files.text_pieces` counts them (0: the text is in `folder_files.text`).
pub(crate) const FILE_TEXT_PIECES: &str = r#"
ALTER TABLE folder_files ADD COLUMN text_pieces INTEGER NOT NULL DEFAULT 0;
CREATE TABLE file_text_pieces (
    pk          INTEGER PRIMARY KEY,
    file_id     TEXT NOT NULL REFERENCES folder_files (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,           -- 0-based, in file order
    first_line  INTEGER NOT NULL,           -- 1-based
    lines       INTEGER NOT NULL,
    text        TEXT NOT NULL,              -- lines joined by '\n', none at the end
    UNIQUE (file_id, idx),
    UNIQUE (file_id, first_line)
);
"#;
