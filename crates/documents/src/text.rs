//! Plain text, source code, CSV and JSON: decoded, checked to be text, read line by line.

use crate::chunk::{Builder, Document};
use crate::errors::ReadError;

/// How much of the start of a file decides whether it is text (bytes).
const SNIFF_BYTES: usize = 8 * 1024;

/// Decodes text: UTF-8 (a byte-order mark dropped), UTF-16 with a byte-order mark, or else
/// Windows-1252, which maps every byte (Latin-1 files read right). Returns the text and a note
/// when it was not UTF-8.
///
/// Errors: [`ReadError::Binary`] for bytes that are not text (NUL bytes, control bytes).
pub(crate) fn decode_noted(bytes: &[u8]) -> Result<(String, Option<String>), ReadError> {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some((encoding, _)) = encoding_rs::Encoding::for_bom(bytes) {
        let (text, _, _) = encoding.decode(bytes);
        let note = (encoding != encoding_rs::UTF_8)
            .then(|| format!("read as {} (byte-order mark)", encoding.name()));
        return Ok((text.into_owned(), note));
    }
    if content_inspector::inspect(head).is_binary() {
        let nul = head.iter().position(|b| *b == 0);
        return Err(ReadError::Binary(match nul {
            Some(at) => format!("a NUL byte at offset {at}"),
            None => "control bytes".into(),
        }));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok((s.to_owned(), None)),
        Err(e) => {
            let (text, _, _) = encoding_rs::WINDOWS_1252.decode(bytes);
            Ok((
                text.into_owned(),
                Some(format!(
                    "not UTF-8 (invalid byte at offset {}): read as Windows-1252",
                    e.valid_up_to()
                )),
            ))
        }
    }
}

/// Decodes text, dropping the note (see [`decode_noted`]).
pub(crate) fn decode(bytes: &[u8]) -> Result<String, ReadError> {
    decode_noted(bytes).map(|(t, _)| t)
}

/// Reads text line by line.
pub(crate) fn read(bytes: &[u8]) -> Result<Document, ReadError> {
    let (text, note) = decode_noted(bytes)?;
    let mut b = Builder::default();
    for line in text.lines() {
        b.line(line, None);
    }
    let mut doc = b.finish();
    doc.notes.extend(note);
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_is_read_as_windows_1252_with_a_note() {
        let (text, note) = decode_noted(b"caf\xe9 cr\xe8me").unwrap();
        assert_eq!(text, "café crème");
        assert!(note.unwrap().contains("not UTF-8"));
    }

    #[test]
    fn nul_bytes_are_not_text() {
        let err = decode_noted(b"ELF\x00\x01\x02\x00\x00").unwrap_err();
        assert!(err.to_string().starts_with("not text"), "{err}");
    }

    #[test]
    fn utf16_with_a_mark_is_decoded() {
        let bytes: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("hé".encode_utf16().flat_map(|u| u.to_le_bytes()))
            .collect();
        assert_eq!(decode(&bytes).unwrap(), "hé");
    }
}
