//! `grep_files` and `semantic_search_files`: searching every file of the agent's attached
//! folders, with results that cite `folder/file:p12` (page of a PDF) or `folder/file:L40`.

use super::args::Args;
use super::context::ToolContext;
use engram_core::{AgentFile, FileStatus};
use engram_store_api::FolderStore;
use std::fmt::Write;

/// The longest pattern `grep_files` takes (**characters**).
pub const MAX_PATTERN_CHARS: usize = 500;
/// Matches one `grep_files` result shows; `offset` pages through the rest.
pub const GREP_PAGE: usize = 20;
/// The most context lines around a match.
pub const MAX_CONTEXT_LINES: usize = 5;
/// Compiled size cap of a pattern (bytes of the regex program): a pathological pattern fails
/// to compile instead of using memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Results `semantic_search_files` gives when the model does not say, and at most.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;

/// A glob over file names (`*.md`, `docs/*`) as a regex: `*` and `?` are wildcards, all else
/// is literal.
fn glob(include: &str) -> Result<regex::Regex, String> {
    let mut re = String::from("^");
    for c in include.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).map_err(|e| format!("Argument 'include' is not a usable pattern: {e}"))
}

/// The page (1-based) a line is on, given each page's first line.
fn page_of(page_starts: &[u32], line: u32) -> Option<u32> {
    if page_starts.is_empty() {
        return None;
    }
    Some(page_starts.partition_point(|&start| start <= line).max(1) as u32)
}

fn cite(name: &str, page: Option<u32>, line: u32) -> String {
    match page {
        Some(p) => format!("{name}:p{p} (L{line})"),
        None => format!("{name}:L{line}"),
    }
}

/// `grep_files(pattern, include?, context_lines?, offset?)`: a regular expression over every
/// line of every readable file (names filtered by the `include` glob, matched against both
/// `folder/file` and `file`), [`GREP_PAGE`] matches a page from match `offset` (0-based), each
/// with its citation and `context_lines` lines around it.
pub(super) async fn grep(ctx: &mut ToolContext<'_>, args: &Args) -> Result<String, String> {
    let folders = super::files::folders(ctx)?;
    let pattern = args.str("pattern")?;
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(format!(
            "The pattern is too long ({} characters; at most {MAX_PATTERN_CHARS}).",
            pattern.chars().count()
        ));
    }
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("Argument 'pattern' is not a valid regular expression: {e}"))?;
    let include = args.opt_str("include")?.map(glob).transpose()?;
    let context = args
        .opt_int("context_lines")?
        .unwrap_or(1)
        .clamp(0, MAX_CONTEXT_LINES as i64) as usize;
    let offset = args.opt_int("offset")?.unwrap_or(0).max(0) as usize;
    let files: Vec<AgentFile> = folders
        .agent_files(&ctx.agent.id)
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|f| {
            include.as_ref().is_none_or(|g| {
                let plain = f.file_name.split_once('/').map_or("", |(_, n)| n);
                g.is_match(&f.file_name) || g.is_match(plain)
            })
        })
        .collect();
    if files.is_empty() {
        return Ok("No files to search in your folders.".into());
    }
    let mut total = 0usize;
    let mut in_files = 0usize;
    let mut shown = String::new();
    for f in &files {
        let meta = folders
            .folder_file(&f.file_id)
            .await
            .map_err(|e| e.to_string())?;
        if !matches!(meta.status, FileStatus::Completed | FileStatus::Embedding) {
            continue;
        }
        let before = total;
        grep_file(
            folders,
            &f.file_id,
            &f.file_name,
            &re,
            context,
            offset,
            &mut total,
            &mut shown,
        )
        .await
        .map_err(|e| e.to_string())?;
        if total > before {
            in_files += 1;
        }
    }
    if total == 0 {
        return Ok(format!(
            "No line matches /{pattern}/ in {} file(s).",
            files.len()
        ));
    }
    if offset >= total {
        return Ok(format!(
            "{total} match(es) in {in_files} file(s); offset {offset} is past the last."
        ));
    }
    let last = (offset + GREP_PAGE).min(total);
    let mut out = format!(
        "{total} match(es) in {in_files} file(s); showing {}-{last}.",
        offset + 1
    );
    if last < total {
        let _ = write!(out, " Call again with offset={last} for more.");
    }
    out.push_str("\n\n");
    out.push_str(shown.trim_end());
    Ok(out)
}

/// Greps one file: counts its matches of `re` on `total` and writes those numbered
/// `offset + 1 ..= offset + GREP_PAGE` (counted over all files) on `shown`, each with its
/// citation and `context` lines around it. The text is read a part at a time (a file read as
/// a stream has pieces of about 1 MiB), so a file of hundreds of MB is never held whole.
#[allow(clippy::too_many_arguments)]
async fn grep_file(
    store: &dyn FolderStore,
    file: &engram_core::FileId,
    name: &str,
    re: &regex::Regex,
    context: usize,
    offset: usize,
    total: &mut usize,
    shown: &mut String,
) -> engram_core::Result<()> {
    let pages = store.file_page_starts(file).await?;
    let mut lines = LineWindow::new(context);
    let mut part = 0;
    while let Some(text) = store.file_text_part(file, part).await? {
        part += 1;
        for (i, line) in text.text.split('\n').enumerate() {
            let n = text.first_line + i as u32;
            let show = re.is_match(line) && {
                *total += 1;
                *total > offset && *total <= offset + GREP_PAGE
            };
            lines.push(n, line, show.then(|| cite(name, page_of(&pages, n), n)));
        }
    }
    lines.finish(shown);
    Ok(())
}

/// Matches of one file shown with `context` lines around each, as a file is walked line by
/// line (its parts one after the other): the lines before a match are kept in a ring, those
/// after it are added as they come.
struct LineWindow {
    context: usize,
    /// The last `context` lines seen (number, text).
    before: std::collections::VecDeque<(u32, String)>,
    /// Shown matches still waiting for lines after them: (text so far, last line to add).
    open: Vec<(String, u32)>,
    /// Finished matches, in order.
    done: String,
}

impl LineWindow {
    fn new(context: usize) -> Self {
        LineWindow {
            context,
            before: Default::default(),
            open: Vec::new(),
            done: String::new(),
        }
    }

    /// Line `n`; `cite` when it is a match to show.
    fn push(&mut self, n: u32, line: &str, cite: Option<String>) {
        for (out, _) in &mut self.open {
            let _ = writeln!(out, " {n}: {line}");
        }
        if let Some(cite) = cite {
            let mut out = format!("{cite}\n");
            for (j, l) in &self.before {
                let _ = writeln!(out, " {j}: {l}");
            }
            let _ = writeln!(out, ">{n}: {line}");
            self.open.push((out, n + self.context as u32));
        }
        while self.open.first().is_some_and(|(_, last)| *last <= n) {
            let (out, _) = self.open.remove(0);
            self.done.push_str(&out);
        }
        if self.context > 0 {
            if self.before.len() == self.context {
                self.before.pop_front();
            }
            self.before.push_back((n, line.to_owned()));
        }
    }

    /// Adds the file's shown matches to `shown`.
    fn finish(self, shown: &mut String) {
        shown.push_str(&self.done);
        for (out, _) in self.open {
            shown.push_str(&out);
        }
    }
}

/// `semantic_search_files(query, limit?)`: the passages of the agent's folders nearest to
/// `query` by meaning and words (the same fusion as archival search), each with its citation.
/// The query is embedded with the agent's model; passages embedded by another model are
/// found by their words alone.
pub(super) async fn semantic(ctx: &mut ToolContext<'_>, args: &Args) -> Result<String, String> {
    let query = args.str("query")?.to_owned();
    let limit = args
        .opt_int("limit")?
        .unwrap_or(DEFAULT_LIMIT as i64)
        .clamp(1, MAX_LIMIT as i64) as usize;
    let embedding = match (ctx.embedder, ctx.agent.embedding.as_ref()) {
        (Some(e), Some(cfg)) if !query.trim().is_empty() => match e.embed_query(&query).await {
            Ok(v) => Some((cfg.model.clone(), v)),
            Err(err) => {
                tracing::warn!(%err, "file search by words alone");
                None
            }
        },
        _ => None,
    };
    let folders = super::files::folders(ctx)?;
    let hits = engram_retrieval::hybrid::files(
        folders,
        &ctx.agent.id,
        &query,
        embedding.as_ref().map(|(m, v)| (m.as_str(), v.as_slice())),
        limit,
    )
    .await
    .map_err(|e| format!("Search failed: {e}"))?;
    if hits.is_empty() {
        return Ok("No passage of your files matches.".into());
    }
    let attached = folders
        .agent_folders(&ctx.agent.id)
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    for (i, h) in hits.iter().enumerate() {
        let folder = attached
            .iter()
            .find(|f| f.id == h.folder_id)
            .map_or("", |f| f.name.as_str());
        let name = engram_store::qualified_name(folder, &h.file_name);
        let _ = write!(
            out,
            "{}. {} (relevance {:.2})",
            i + 1,
            h.provenance.cite(&name),
            h.score
        );
        if let Some(heading) = &h.provenance.heading {
            let _ = write!(out, " under \"{heading}\"");
        }
        let _ = write!(out, "\n{}\n\n", h.text.trim());
    }
    Ok(out.trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_found_from_their_first_lines() {
        let starts = [1, 10, 25];
        assert_eq!(page_of(&starts, 1), Some(1));
        assert_eq!(page_of(&starts, 9), Some(1));
        assert_eq!(page_of(&starts, 10), Some(2));
        assert_eq!(page_of(&starts, 400), Some(3));
        assert_eq!(page_of(&[], 4), None);
    }

    /// A file stored in three pieces: grep numbers lines across them, shows context that
    /// crosses a cut, and pages 20 matches at a time.
    #[tokio::test]
    async fn grep_walks_a_file_stored_in_pieces() {
        use engram_core::{FileStatus, NewFolder};
        use engram_store::{FileUpload, NewPiece, Store, Upserted};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("engram.db")).unwrap();
        let folder = store
            .folders()
            .create(&NewFolder {
                name: "logs".into(),
                ..NewFolder::default()
            })
            .unwrap();
        let upload = FileUpload {
            name: "big.log".into(),
            mime: "text/plain".into(),
            size: 1,
            sha256: "x".into(),
        };
        let Upserted::Changed(file) = store.folders().upsert_file(&folder.id, &upload).unwrap()
        else {
            panic!("new file");
        };
        store.folders().begin_streamed_file(&file.id).unwrap();
        // Lines 1..=30 (`row n`, `needle` on every third line), cut after lines 10 and 20.
        for (idx, first) in [1u32, 11, 21].into_iter().enumerate() {
            let text = (first..first + 10)
                .map(|n| {
                    if n.is_multiple_of(3) {
                        format!("row {n} needle")
                    } else {
                        format!("row {n}")
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            let piece = NewPiece {
                idx: idx as u32,
                first_line: first,
                lines: 10,
                text,
                chunks: Vec::new(),
                first_seq: 0,
            };
            store.folders().append_text_piece(&file.id, &piece).unwrap();
        }
        store
            .folders()
            .finish_streamed_file(&file.id, 30, FileStatus::Completed)
            .unwrap();
        let re = regex::Regex::new("needle").unwrap();
        let (mut total, mut shown) = (0, String::new());
        let id = &file.id;
        grep_file(
            &store,
            id,
            "logs/big.log",
            &re,
            1,
            0,
            &mut total,
            &mut shown,
        )
        .await
        .unwrap();
        assert_eq!(total, 10);
        // Line 9 has a match; its context line 11 is in the next piece.
        assert!(
            shown.contains("logs/big.log:L9\n 8: row 8\n>9: row 9 needle\n 10: row 10\n"),
            "{shown}"
        );
        assert!(
            shown.contains("logs/big.log:L21\n 20: row 20\n>21: row 21 needle\n 22: row 22\n"),
            "{shown}"
        );
        // Paging: from match 9 on, only lines 27 and 30 are shown (and all 10 counted).
        let (mut total, mut shown) = (0, String::new());
        grep_file(
            &store,
            id,
            "logs/big.log",
            &re,
            0,
            8,
            &mut total,
            &mut shown,
        )
        .await
        .unwrap();
        assert_eq!(total, 10);
        assert_eq!(
            shown,
            "logs/big.log:L27\n>27: row 27 needle\nlogs/big.log:L30\n>30: row 30 needle\n"
        );
    }

    #[test]
    fn globs_match_names_literally_but_for_wildcards() {
        let g = glob("*.md").unwrap();
        assert!(g.is_match("notes/a.md"));
        assert!(!g.is_match("a.mdx"));
        assert!(glob("a+b?.txt").unwrap().is_match("a+bc.txt"));
    }
}
