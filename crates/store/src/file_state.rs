//! Each agent's state of the files of its attached folders: which are open, which lines each
//! open file shows, and when the agent last looked. An opened file past the limit closes the
//! least recently used one, in the same transaction.

use crate::rooms::FolderRows;
use crate::sql::{self, DbResult};
use engram_core::{AgentFile, AgentId, Error, FileId, FolderFile, FolderId, Result};
use rusqlite::{Connection, OptionalExtension, params};

pub use engram_store_api::FileWindow;

/// The most characters one open file shows in the context window; a window whose lines
/// hold more is cut at a line end (and says so).
pub const MAX_WINDOW_CHARS: usize = 12_000;

/// The agent-facing name of a file: `folder/file`.
pub fn qualified_name(folder: &str, file: &str) -> String {
    format!("{folder}/{file}")
}

impl FolderRows<'_> {
    /// Every file of the folders attached to `agent`, with the agent's state of it (closed
    /// and never accessed when it has none), by folder then name; `file_name` is `folder/file`.
    /// Errors: `NotFound("agent")`.
    pub fn files_of_agent(self, agent: &AgentId) -> Result<Vec<AgentFile>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(
                    "SELECT f.id, d.name, f.name, f.folder_id, coalesce(s.is_open, 0),
                            coalesce(s.view_offset, 1), coalesce(s.view_length, 0), s.last_accessed
                     FROM agent_folders a
                     JOIN folders d ON d.id = a.folder_id
                     JOIN folder_files f ON f.folder_id = a.folder_id
                     LEFT JOIN agent_files s ON s.agent_id = a.agent_id AND s.file_id = f.id
                     WHERE a.agent_id = ?1 ORDER BY d.name, f.name",
                )
                .db()?;
            let rows = stmt
                .query_map([agent.as_str()], |r| {
                    let last: Option<i64> = r.get(7)?;
                    Ok(AgentFile {
                        file_id: FileId::from(r.get::<_, String>(0)?),
                        file_name: qualified_name(&r.get::<_, String>(1)?, &r.get::<_, String>(2)?),
                        folder_id: FolderId::from(r.get::<_, String>(3)?),
                        is_open: r.get(4)?,
                        offset: r.get(5)?,
                        length: r.get(6)?,
                        last_accessed_at: last.and_then(chrono::DateTime::from_timestamp_micros),
                    })
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// The file of an attached folder that the agent calls `name`: `folder/file`, or `file`
    /// alone when exactly one attached folder has a file of that name. `Ok(None)` when none
    /// does. Errors: `NotFound("agent")`; `Invalid` when `name` alone is in two folders.
    pub fn file_of_agent(self, agent: &AgentId, name: &str) -> Result<Option<FolderFile>> {
        let files = self.files_of_agent(agent)?;
        let name = name.trim().trim_start_matches('/');
        if let Some(f) = files.iter().find(|f| f.file_name == name) {
            return self.get_file(&f.file_id).map(Some);
        }
        let mut plain = files
            .iter()
            .filter(|f| f.file_name.split_once('/').is_some_and(|(_, n)| n == name));
        match (plain.next(), plain.next()) {
            (Some(f), None) => self.get_file(&f.file_id).map(Some),
            (Some(a), Some(b)) => Err(Error::invalid(format!(
                "'{name}' is in more than one folder ({} and {}); name it as folder/file",
                a.file_name, b.file_name
            ))),
            (None, _) => Ok(None),
        }
    }

    /// Opens `file` for `agent` showing `length` lines from line `offset` (1-based), marks it
    /// just used, and closes the least recently used other open files until at most
    /// `max_open` are open. One transaction. Returns the ids of the files it closed.
    /// Errors: `NotFound("agent" | "file")`; `Invalid` when the file's folder is not attached.
    pub fn open_file(
        self,
        agent: &AgentId,
        file: &FileId,
        offset: u32,
        length: u32,
        max_open: usize,
    ) -> Result<Vec<FileId>> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            ensure_visible(tx, agent, file)?;
            tx.prepare_cached(
                "INSERT INTO agent_files (agent_id, file_id, is_open, view_offset, view_length,
                        last_accessed)
                 VALUES (?1, ?2, 1, ?3, ?4, ?5)
                 ON CONFLICT (agent_id, file_id) DO UPDATE SET is_open = 1,
                        view_offset = excluded.view_offset, view_length = excluded.view_length,
                        last_accessed = excluded.last_accessed",
            )
            .db()?
            .execute(params![
                agent.as_str(),
                file.as_str(),
                offset,
                length,
                sql::micros(sql::now())
            ])
            .db()?;
            let open: Vec<FileId> = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT file_id FROM agent_files WHERE agent_id = ?1 AND is_open = 1
                           AND file_id != ?2
                         ORDER BY last_accessed DESC, file_id",
                    )
                    .db()?;
                let rows = stmt
                    .query_map(params![agent.as_str(), file.as_str()], |r| {
                        Ok(FileId::from(r.get::<_, String>(0)?))
                    })
                    .db()?;
                rows.collect::<rusqlite::Result<_>>().db()?
            };
            let keep = max_open.saturating_sub(1);
            let closed: Vec<FileId> = open.into_iter().skip(keep).collect();
            for id in &closed {
                close(tx, agent, id)?;
            }
            Ok(closed)
        })
    }

    /// Sets an agent's state of a file as an agent file carried it: open or not, its window
    /// and when it was last accessed (an import; no least-recently-used closing). Errors:
    /// `NotFound("agent" | "file")`; `Invalid` when the file's folder is not attached.
    pub fn restore_file_state(
        self,
        agent: &AgentId,
        file: &FileId,
        state: &AgentFile,
    ) -> Result<()> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            ensure_visible(tx, agent, file)?;
            let accessed = state.last_accessed_at.unwrap_or_else(sql::now);
            tx.prepare_cached(
                "INSERT INTO agent_files (agent_id, file_id, is_open, view_offset, view_length,
                        last_accessed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (agent_id, file_id) DO UPDATE SET is_open = excluded.is_open,
                        view_offset = excluded.view_offset, view_length = excluded.view_length,
                        last_accessed = excluded.last_accessed",
            )
            .db()?
            .execute(params![
                agent.as_str(),
                file.as_str(),
                state.is_open,
                state.offset.max(1),
                state.length.max(1),
                sql::micros(accessed)
            ])
            .db()?;
            Ok(())
        })
    }

    /// Closes one of the agent's files; `false` when it was not open. Errors:
    /// `NotFound("agent")`.
    pub fn close_file(self, agent: &AgentId, file: &FileId) -> Result<bool> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            close(tx, agent, file)
        })
    }

    /// Closes all the agent's files; returns how many were open. Errors: `NotFound("agent")`.
    pub fn close_all_files(self, agent: &AgentId) -> Result<usize> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            tx.prepare_cached(
                "UPDATE agent_files SET is_open = 0 WHERE agent_id = ?1 AND is_open = 1",
            )
            .db()?
            .execute([agent.as_str()])
            .db()
        })
    }

    /// The agent's open files as shown in its context window, least recently used first
    /// (files not read yet are left out). Errors: `NotFound("agent")`.
    pub fn open_file_windows(self, agent: &AgentId) -> Result<Vec<FileWindow>> {
        let open: Vec<(FileId, String, u32, u32)> = self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(
                    "SELECT s.file_id, d.name, f.name, s.view_offset, s.view_length
                     FROM agent_files s
                     JOIN folder_files f ON f.id = s.file_id
                     JOIN folders d ON d.id = f.folder_id
                     WHERE s.agent_id = ?1 AND s.is_open = 1
                     ORDER BY s.last_accessed, s.file_id",
                )
                .db()?;
            let rows = stmt
                .query_map([agent.as_str()], |r| {
                    Ok((
                        FileId::from(r.get::<_, String>(0)?),
                        qualified_name(&r.get::<_, String>(1)?, &r.get::<_, String>(2)?),
                        r.get(3)?,
                        r.get(4)?,
                    ))
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })?;
        let mut windows = Vec::with_capacity(open.len());
        for (id, name, offset, length) in open {
            windows.extend(self.read_window(&id, name, offset, length)?);
        }
        Ok(windows)
    }

    /// The window of `length` lines from line `offset` (1-based) of a file, as [`window`]
    /// cuts it, loading only the text it shows (the pieces holding those lines, for a file
    /// read as a stream). `None` while the file has not been read. Errors: `NotFound("file")`.
    pub fn read_window(
        self,
        id: &FileId,
        name: String,
        offset: u32,
        length: u32,
    ) -> Result<Option<FileWindow>> {
        self.store.read(|c| {
            let row: Option<(Option<String>, u32, u32)> = c
                .prepare_cached("SELECT text, text_pieces, lines FROM folder_files WHERE id = ?1")
                .db()?
                .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
                .db()?;
            let Some((text, pieces, total)) = row else {
                return Err(Error::not_found("file", id.as_str()));
            };
            if let Some(text) = text {
                return Ok(Some(window(id.clone(), name, &text, offset, length)));
            }
            if pieces == 0 {
                return Ok(None);
            }
            let offset = offset.max(1);
            let to = offset.saturating_add(length).saturating_sub(1);
            let parts = crate::file_pieces::pieces_covering(c, id, offset, to)?;
            let lines = parts.iter().flat_map(|(first, text)| {
                text.split('\n')
                    .enumerate()
                    .map(move |(i, l)| (first + i as u32, l))
            });
            Ok(Some(window_of(
                id.clone(),
                name,
                lines,
                total,
                offset,
                length,
            )))
        })
    }
}

/// Cuts the lines `offset ..= offset + length - 1` (1-based) of `text`, numbered, to at most
/// [`MAX_WINDOW_CHARS`] characters.
pub fn window(file_id: FileId, name: String, text: &str, offset: u32, length: u32) -> FileWindow {
    let total = text.lines().count() as u32;
    let lines = text.lines().enumerate().map(|(i, l)| (i as u32 + 1, l));
    window_of(file_id, name, lines, total, offset, length)
}

/// [`window`] over numbered lines (`(number, line)` in order, from any line up to `offset`)
/// of a file of `total` lines.
fn window_of<'a>(
    file_id: FileId,
    name: String,
    lines: impl Iterator<Item = (u32, &'a str)>,
    total: u32,
    offset: u32,
    length: u32,
) -> FileWindow {
    let offset = offset.max(1);
    let mut out = String::new();
    let mut last = offset - 1;
    let mut chars = 0usize;
    for (n, line) in lines {
        if n < offset {
            continue;
        }
        if n >= offset.saturating_add(length) {
            break;
        }
        let row = format!("{n}: {line}");
        let row_chars = row.chars().count() + 1;
        if chars + row_chars > MAX_WINDOW_CHARS && n > offset {
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        chars += row_chars;
        out.push_str(&row);
        last = n;
    }
    FileWindow {
        file_id,
        name,
        offset,
        last,
        lines: total,
        text: out,
    }
}

fn close(tx: &Connection, agent: &AgentId, file: &FileId) -> Result<bool> {
    let n = tx
        .prepare_cached(
            "UPDATE agent_files SET is_open = 0 WHERE agent_id = ?1 AND file_id = ?2 AND is_open = 1",
        )
        .db()?
        .execute(params![agent.as_str(), file.as_str()])
        .db()?;
    Ok(n > 0)
}

/// Fails unless the file exists and is in a folder attached to the agent.
fn ensure_visible(tx: &Connection, agent: &AgentId, file: &FileId) -> Result<()> {
    let folder: Option<String> = tx
        .prepare_cached("SELECT folder_id FROM folder_files WHERE id = ?1")
        .db()?
        .query_row([file.as_str()], |r| r.get(0))
        .optional()
        .db()?;
    let Some(folder) = folder else {
        return Err(Error::not_found("file", file.as_str()));
    };
    let attached = tx
        .prepare_cached("SELECT 1 FROM agent_folders WHERE agent_id = ?1 AND folder_id = ?2")
        .db()?
        .exists(params![agent.as_str(), folder])
        .db()?;
    if attached {
        Ok(())
    } else {
        Err(Error::invalid(
            "the file's folder is not attached to this agent",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_numbers_its_lines_and_counts_the_file() {
        let w = window(
            FileId::from("f"),
            "d/a.txt".into(),
            "one\ntwo\nthree\nfour",
            2,
            2,
        );
        assert_eq!(w.text, "2: two\n3: three");
        assert_eq!((w.offset, w.last, w.lines), (2, 3, 4));
    }

    #[test]
    fn a_window_of_long_lines_is_cut_at_a_line_end() {
        let line = "x".repeat(5_000);
        let text = [line.as_str(); 10].join("\n");
        let w = window(FileId::from("f"), "d/a.txt".into(), &text, 1, 10);
        assert_eq!(w.last, 2);
        assert_eq!(w.lines, 10);
        assert!(w.text.chars().count() <= MAX_WINDOW_CHARS);
    }
}
