//! A read document and how it is cut into passages: consecutive lines under one page and one
//! heading, up to [`CHUNK_CHARS`] characters each, never across a page or heading boundary, so
//! each passage can be cited by page or by line range.

use crate::Kind;

/// The size a passage grows to before a new one starts, in **characters** (about 250 word
/// pieces of English: what the built-in embedding model reads of a passage).
pub const CHUNK_CHARS: usize = 1_000;

/// A line longer than this (**characters**) is cut into pieces of this size, each a passage
/// with the line's number (minified code, a PDF page without line breaks).
const LONG_LINE_CHARS: usize = 2 * CHUNK_CHARS;

/// A passage of a document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    /// Its text.
    pub text: String,
    /// The page it is on (paged documents).
    pub page: Option<u32>,
    /// The heading it sits under.
    pub heading: Option<String>,
    /// Its first line (1-based) in [`Document::text`].
    pub line_start: u32,
    /// Its last line (inclusive).
    pub line_end: u32,
}

/// A document as read: its text, its pages and its passages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Document {
    /// What was read.
    pub kind: Kind,
    /// The text, lines joined by `\n`.
    pub text: String,
    /// Lines in `text`.
    pub lines: u32,
    /// The first line (1-based) of each page; empty for documents without pages.
    pub page_starts: Vec<u32>,
    /// The passages, in order.
    pub chunks: Vec<Chunk>,
    /// Things a person should know about how it was read (e.g. "not UTF-8: read as
    /// Windows-1252").
    pub notes: Vec<String>,
}

impl Document {
    /// Pages of a paged document (`None` for the others).
    pub fn pages(&self) -> Option<u32> {
        (!self.page_starts.is_empty()).then_some(self.page_starts.len() as u32)
    }
}

/// Builds a [`Document`] line by line.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    doc: Document,
    open: Option<Chunk>,
    open_chars: usize,
    /// Lines in `doc.text` since it was last taken ([`Builder::take_piece`]).
    text_lines: u32,
}

impl Builder {
    /// Starts the next page at the next line.
    pub(crate) fn start_page(&mut self) {
        self.doc.page_starts.push(self.doc.lines + 1);
    }

    /// Adds one line (without its line break) under `heading`.
    pub(crate) fn line(&mut self, line: &str, heading: Option<&str>) {
        if self.text_lines > 0 {
            self.doc.text.push('\n');
        }
        self.doc.text.push_str(line);
        self.doc.lines += 1;
        self.text_lines += 1;
        let n = self.doc.lines;
        let page = self.doc.pages();
        if line.trim().is_empty() {
            if let Some(open) = &mut self.open {
                open.text.push('\n');
            }
            return;
        }
        let same_place = self
            .open
            .as_ref()
            .is_some_and(|c| c.page == page && c.heading.as_deref() == heading);
        let chars = line.chars().count();
        if !same_place || self.open_chars + chars > CHUNK_CHARS {
            self.flush();
        }
        if chars > LONG_LINE_CHARS {
            let all: Vec<char> = line.chars().collect();
            for piece in all.chunks(LONG_LINE_CHARS) {
                self.doc.chunks.push(Chunk {
                    text: piece.iter().collect(),
                    page,
                    heading: heading.map(str::to_owned),
                    line_start: n,
                    line_end: n,
                });
            }
            return;
        }
        let open = self.open.get_or_insert_with(|| Chunk {
            page,
            heading: heading.map(str::to_owned),
            line_start: n,
            ..Chunk::default()
        });
        if !open.text.is_empty() {
            open.text.push('\n');
        }
        open.text.push_str(line);
        open.line_end = n;
        self.open_chars += chars;
    }

    /// Closes the passage still growing.
    pub(crate) fn close_open(&mut self) {
        self.flush();
    }

    fn flush(&mut self) {
        if let Some(mut c) = self.open.take() {
            let trimmed = c.text.trim_end().len();
            c.text.truncate(trimmed);
            self.doc.chunks.push(c);
        }
        self.open_chars = 0;
    }

    /// Lines added so far.
    pub(crate) fn lines(&self) -> u32 {
        self.doc.lines
    }

    /// Takes the text added since the last call (its lines joined by `\n`) and the passages
    /// closed meanwhile; the passage still growing stays, so passages come out as they would
    /// from one whole text.
    pub(crate) fn take_piece(&mut self) -> (String, Vec<Chunk>) {
        self.text_lines = 0;
        (
            std::mem::take(&mut self.doc.text),
            std::mem::take(&mut self.doc.chunks),
        )
    }

    /// The document, its last passage closed.
    pub(crate) fn finish(mut self) -> Document {
        self.flush();
        self.doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passages_keep_to_their_page_and_heading() {
        let mut b = Builder::default();
        b.start_page();
        b.line("one", None);
        b.line("two", None);
        b.start_page();
        b.line("three", None);
        b.line("", Some("H"));
        b.line("four", Some("H"));
        let d = b.finish();
        assert_eq!(d.text, "one\ntwo\nthree\n\nfour");
        assert_eq!(d.page_starts, vec![1, 3]);
        let got: Vec<_> = d
            .chunks
            .iter()
            .map(|c| (c.text.as_str(), c.page, c.line_start, c.line_end))
            .collect();
        assert_eq!(
            got,
            vec![
                ("one\ntwo", Some(1), 1, 2),
                ("three", Some(2), 3, 3),
                ("four", Some(2), 5, 5)
            ]
        );
    }

    #[test]
    fn passages_stop_growing_at_the_size() {
        let mut b = Builder::default();
        let line = "word ".repeat(50);
        for _ in 0..10 {
            b.line(&line, None);
        }
        let d = b.finish();
        assert!(d.chunks.len() >= 2);
        assert!(
            d.chunks
                .iter()
                .all(|c| c.text.chars().count() <= CHUNK_CHARS + 10)
        );
        assert_eq!(d.chunks.last().unwrap().line_end, 10);
    }
}
