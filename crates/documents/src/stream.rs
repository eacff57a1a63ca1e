//! Text files read as a stream, a piece at a time, so a file of hundreds of MB is read in
//! bounded memory: plain text, source code, CSV, JSON and Markdown ([`Kind::streams`]).
//!
//! Each [`Piece`] is about [`PIECE_BYTES`] of the file cut at a line end: its text (lines
//! joined by `\n`, as in [`Document::text`](crate::Document::text)), its first line, and the
//! passages closed while it was read. Passages are cut by the same rules as a whole file's
//! ([`chunk`](crate::chunk)), and a passage still growing at a piece's end goes on into the
//! next, so a file read as a stream gives the passages it would give read whole. Decoding is
//! the whole file's too (see [`decode_noted`](crate::text)): a byte-order mark picks UTF-8 or
//! UTF-16, the first bytes decide text or binary, and UTF-8 broken somewhere is read as
//! Windows-1252 **from that byte on** (the whole-file reader reads all of it so; a stream
//! cannot go back), with a note. A character split between two reads is joined.
//!
//! Markdown headings are found within each piece: a heading's text carries on to the next
//! pieces, but a construct open across a cut (a fenced code block holding `# lines`) is seen
//! from the piece it is in only.

use crate::chunk::{Builder, Chunk};
use crate::errors::ReadError;
use crate::kind::Kind;
use encoding_rs::{Decoder, Encoding, UTF_8, WINDOWS_1252};
use std::io::Read;

/// Bytes read from the file for one piece (1 MiB); a piece's text is this plus the rest of
/// the line it stops in.
pub const PIECE_BYTES: usize = 1 << 20;

/// The largest file read as a stream, in **bytes** (1 GiB).
pub const MAX_STREAM_BYTES: u64 = 1 << 30;

/// The longest line kept whole, in **bytes** of text (8 MiB): a longer one (a minified JSON
/// file on one line) is cut into lines of this size, with a note, so memory stays bounded.
pub const MAX_LINE_BYTES: usize = 8 << 20;

/// How much of the start of a file decides whether it is text (bytes), as for a whole file.
const SNIFF_BYTES: usize = 8 * 1024;

/// A stretch of a streamed file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Piece {
    /// Its first line (1-based) in the file's text.
    pub first_line: u32,
    /// Lines in `text`.
    pub lines: u32,
    /// Its text, lines joined by `\n` (no line break at the end).
    pub text: String,
    /// The passages closed by the end of this piece, in order (they may start in an earlier
    /// piece).
    pub chunks: Vec<Chunk>,
}

/// How the bytes are decoded.
enum Decoding {
    /// UTF-8 so far; `held` are the first bytes of a character the last read split.
    Utf8 { held: Vec<u8> },
    /// A byte-order mark's encoding (UTF-16), with its state between reads.
    Marked(Decoder),
    /// Every byte a character, from some offset on.
    Windows1252,
}

/// Reads a text file as [`Piece`]s. Made by [`TextStream::new`], then [`TextStream::next_piece`]
/// until `None`.
pub struct TextStream<R: Read> {
    reader: R,
    kind: Kind,
    limit: u64,
    /// Bytes read from `reader`.
    read: u64,
    decoding: Decoding,
    /// Decoded text not yet cut into lines (the end of a line still being read).
    carry: String,
    builder: Builder,
    /// The heading found last (Markdown).
    heading: Option<String>,
    notes: Vec<String>,
    /// Bytes of the file read but not decoded yet (the first read, kept for sniffing).
    first: Option<Vec<u8>>,
    /// Offset in the file of the next byte to decode.
    decoded: u64,
    done: bool,
}

impl<R: Read> TextStream<R> {
    /// Starts reading `reader`, a file of kind `kind` (one that [`Kind::streams`]), refusing
    /// more than `limit` bytes. The first piece's bytes are read now to tell text from binary.
    ///
    /// Errors: [`ReadError::Binary`] for bytes that are not text; [`ReadError::Broken`] for a
    /// kind read only whole; [`ReadError::TooLarge`]; [`ReadError::Io`].
    pub fn new(reader: R, kind: Kind, limit: u64) -> Result<Self, ReadError> {
        if !kind.streams() {
            return Err(ReadError::Broken(format!(
                "{} files are read whole, not as a stream",
                kind.label()
            )));
        }
        let mut stream = TextStream {
            reader,
            kind,
            limit,
            read: 0,
            decoding: Decoding::Utf8 { held: Vec::new() },
            carry: String::new(),
            builder: Builder::default(),
            heading: None,
            notes: Vec::new(),
            first: None,
            decoded: 0,
            done: false,
        };
        let mut head = stream.read_some()?;
        if let Some((encoding, bom)) = Encoding::for_bom(&head) {
            head.drain(..bom);
            stream.decoded = bom as u64;
            if encoding != UTF_8 {
                stream.decoding = Decoding::Marked(encoding.new_decoder_without_bom_handling());
                stream
                    .notes
                    .push(format!("read as {} (byte-order mark)", encoding.name()));
            }
        } else if content_inspector::inspect(&head[..head.len().min(SNIFF_BYTES)]).is_binary() {
            let nul = head[..head.len().min(SNIFF_BYTES)]
                .iter()
                .position(|b| *b == 0);
            return Err(ReadError::Binary(match nul {
                Some(at) => format!("a NUL byte at offset {at}"),
                None => "control bytes".into(),
            }));
        }
        stream.first = Some(head);
        Ok(stream)
    }

    /// The kind being read.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Bytes read from the file so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// Lines read so far (all of them once [`TextStream::next_piece`] said `None`).
    pub fn lines(&self) -> u32 {
        self.builder.lines()
    }

    /// Things a person should know about how it was read (as [`Document::notes`](crate::Document::notes)).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The next piece, or `None` after the last. The last piece closes the last passage (it
    /// may hold no text).
    ///
    /// Errors: [`ReadError::TooLarge`] once more than the limit was read; [`ReadError::Io`].
    pub fn next_piece(&mut self) -> Result<Option<Piece>, ReadError> {
        if self.done {
            return Ok(None);
        }
        let first_line = self.builder.lines() + 1;
        loop {
            let bytes = match self.first.take() {
                Some(b) => b,
                None => self.read_some()?,
            };
            let end = bytes.is_empty();
            self.decode(&bytes, end);
            if end {
                let rest = std::mem::take(&mut self.carry);
                self.add_lines(&rest);
                self.builder.close_open();
                let (text, chunks) = self.builder.take_piece();
                self.done = true;
                let lines = self.builder.lines() + 1 - first_line;
                if lines == 0 && chunks.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(Piece {
                    first_line,
                    lines,
                    text,
                    chunks,
                }));
            }
            let cut = match self.carry.rfind('\n') {
                Some(at) => Some(at + 1),
                None if self.carry.len() > MAX_LINE_BYTES => {
                    let mut at = MAX_LINE_BYTES;
                    while !self.carry.is_char_boundary(at) {
                        at -= 1;
                    }
                    self.notes.push(format!(
                        "line {} is longer than {MAX_LINE_BYTES} bytes: cut into lines of \
                         that size, so later line numbers are off by the cuts",
                        self.builder.lines() + 1
                    ));
                    Some(at)
                }
                None => None,
            };
            let Some(cut) = cut else { continue };
            let rest = self.carry.split_off(cut);
            let whole = std::mem::replace(&mut self.carry, rest);
            self.add_lines(&whole);
            let (text, chunks) = self.builder.take_piece();
            return Ok(Some(Piece {
                first_line,
                lines: self.builder.lines() + 1 - first_line,
                text,
                chunks,
            }));
        }
    }

    /// Reads up to [`PIECE_BYTES`] (fewer only at the end of the file).
    fn read_some(&mut self) -> Result<Vec<u8>, ReadError> {
        let mut buf = Vec::with_capacity(PIECE_BYTES);
        (&mut self.reader)
            .take(PIECE_BYTES as u64)
            .read_to_end(&mut buf)?;
        self.read += buf.len() as u64;
        if self.read > self.limit {
            return Err(ReadError::TooLarge {
                size: self.read,
                limit: self.limit,
            });
        }
        Ok(buf)
    }

    /// Decodes the next `bytes` of the file onto `carry`.
    fn decode(&mut self, bytes: &[u8], end: bool) {
        let start = self.decoded;
        self.decoded += bytes.len() as u64;
        match &mut self.decoding {
            Decoding::Utf8 { held } => {
                let mut joined = std::mem::take(held);
                let start = start - joined.len() as u64;
                joined.extend_from_slice(bytes);
                match std::str::from_utf8(&joined) {
                    Ok(s) => self.carry.push_str(s),
                    Err(e) if e.error_len().is_none() && !end => {
                        // A character the read split: its first bytes wait for the rest.
                        let valid = e.valid_up_to();
                        self.carry
                            .push_str(std::str::from_utf8(&joined[..valid]).unwrap_or_default());
                        *held = joined[valid..].to_vec();
                    }
                    Err(e) => {
                        let valid = e.valid_up_to();
                        self.carry
                            .push_str(std::str::from_utf8(&joined[..valid]).unwrap_or_default());
                        self.notes.push(format!(
                            "not UTF-8 (invalid byte at offset {}): read as Windows-1252 from there",
                            start + valid as u64
                        ));
                        self.decoding = Decoding::Windows1252;
                        let (text, _) = WINDOWS_1252.decode_without_bom_handling(&joined[valid..]);
                        self.carry.push_str(&text);
                    }
                }
            }
            Decoding::Marked(decoder) => {
                let room = decoder
                    .max_utf8_buffer_length(bytes.len())
                    .unwrap_or(bytes.len() * 3 + 16);
                self.carry.reserve(room);
                let _ = decoder.decode_to_string(bytes, &mut self.carry, end);
            }
            Decoding::Windows1252 => {
                let (text, _) = WINDOWS_1252.decode_without_bom_handling(bytes);
                self.carry.push_str(&text);
            }
        }
    }

    /// Adds whole lines (`text` ends at a line end, or is the file's last line).
    fn add_lines(&mut self, text: &str) {
        if self.kind == Kind::Markdown {
            let headings = crate::markdown::headings(text);
            let mut next = 0;
            for (i, line) in text.lines().enumerate() {
                let n = i as u32 + 1;
                while next < headings.len() && headings[next].0 <= n {
                    self.heading = Some(headings[next].1.trim().to_owned());
                    next += 1;
                }
                self.builder.line(line, self.heading.as_deref());
            }
        } else {
            for line in text.lines() {
                self.builder.line(line, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: &[u8], kind: Kind) -> (String, Vec<Piece>, Vec<String>) {
        let mut s = TextStream::new(bytes, kind, MAX_STREAM_BYTES).unwrap();
        let mut pieces = Vec::new();
        while let Some(p) = s.next_piece().unwrap() {
            pieces.push(p);
        }
        let text = pieces
            .iter()
            .filter(|p| p.lines > 0)
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        (text, pieces, s.notes().to_vec())
    }

    /// A few MiB of varied lines: short ones, blank runs, long lines cut into passages,
    /// multibyte characters, Windows line ends.
    fn sample(lines: usize) -> String {
        let mut out = String::new();
        for i in 0..lines {
            match i % 97 {
                0 => out.push_str("\r\n"),
                1 => out.push_str("\n\n"),
                5 => out.push_str(&format!("{i} {}\n", "long ".repeat(500))),
                7 => out.push_str(&format!("# Heading {i}\n")),
                _ => out.push_str(&format!("line {i}: naïve café, ünïcödé — {}\n", i * 7)),
            }
        }
        out
    }

    #[test]
    fn a_stream_gives_the_whole_files_text_and_passages() {
        for (name, kind) in [("big.txt", Kind::Text), ("big.md", Kind::Markdown)] {
            let text = sample(80_000);
            assert!(text.len() > 3 * PIECE_BYTES, "{}", text.len());
            let whole = crate::parse(name, text.as_bytes()).unwrap();
            let (streamed, pieces, notes) = all(text.as_bytes(), kind);
            assert!(notes.is_empty());
            assert!(pieces.len() >= 4, "{}", pieces.len());
            assert_eq!(streamed, whole.text);
            let lines: u32 = pieces.iter().map(|p| p.lines).sum();
            assert_eq!(lines, whole.lines);
            for w in pieces.windows(2) {
                assert_eq!(w[1].first_line, w[0].first_line + w[0].lines);
            }
            let chunks: Vec<Chunk> = pieces.into_iter().flat_map(|p| p.chunks).collect();
            assert_eq!(chunks.len(), whole.chunks.len(), "{name}");
            assert!(chunks == whole.chunks, "{name}: passages differ");
        }
    }

    #[test]
    fn a_character_split_between_reads_is_joined() {
        // "é" is two bytes; put its first byte last in the first read.
        let mut bytes = vec![b'a'; PIECE_BYTES - 1];
        bytes.extend_from_slice("é\nnext line\n".as_bytes());
        let (text, pieces, notes) = all(&bytes, Kind::Text);
        assert!(notes.is_empty(), "{notes:?}");
        assert!(text.ends_with("é\nnext line"));
        assert_eq!(
            pieces.last().unwrap().first_line + pieces.last().unwrap().lines - 1,
            2
        );
    }

    #[test]
    fn broken_utf8_is_read_as_windows_1252_from_there() {
        let mut bytes = "caf\u{e9}\n".as_bytes().to_vec();
        bytes.extend_from_slice(b"cr\xe8me\n");
        let (text, _, notes) = all(&bytes, Kind::Text);
        assert_eq!(text, "café\ncrème");
        assert!(notes[0].contains("offset 8"), "{notes:?}");
    }

    #[test]
    fn utf16_with_a_mark_is_decoded_and_noted() {
        let bytes: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(
                "h\u{e9}\nl\u{e0}"
                    .encode_utf16()
                    .flat_map(|u| u.to_le_bytes()),
            )
            .collect();
        let (text, _, notes) = all(&bytes, Kind::Text);
        assert_eq!(text, "hé\nlà");
        assert!(notes[0].contains("UTF-16LE"), "{notes:?}");
    }

    #[test]
    fn binary_bytes_are_refused_at_the_start() {
        let err = TextStream::new(
            &b"ELF\x00\x01\x02\x00\x00"[..],
            Kind::Text,
            MAX_STREAM_BYTES,
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("NUL byte at offset 3"), "{err}");
    }

    #[test]
    fn more_than_the_limit_is_too_large() {
        let bytes = vec![b'a'; 3000];
        let err = TextStream::new(&bytes[..], Kind::Text, 1000).err();
        assert!(matches!(
            err,
            Some(ReadError::TooLarge {
                size: 3000,
                limit: 1000
            })
        ));
    }

    #[test]
    fn a_line_without_end_is_cut_at_the_bound() {
        let bytes = vec![b'x'; MAX_LINE_BYTES + PIECE_BYTES + 10];
        let (text, pieces, notes) = all(&bytes, Kind::Json);
        assert_eq!(text.len(), bytes.len() + 1);
        assert_eq!(pieces.iter().map(|p| p.lines).sum::<u32>(), 2);
        assert!(notes[0].contains("line 1 is longer"), "{notes:?}");
    }

    #[test]
    fn pdf_is_read_whole() {
        assert!(TextStream::new(&b"%PDF-1.4"[..], Kind::Pdf, MAX_STREAM_BYTES).is_err());
    }
}
