//! HTML: rendered to text by `html2text` (scripts and styles left out), then read like
//! Markdown, whose headings its output marks with `#`.

use crate::chunk::Document;
use crate::errors::ReadError;

/// Width of the rendered text, in characters: wide, so lines break where the page's do.
const WIDTH: usize = 400;

/// Reads an HTML page.
pub(crate) fn read(bytes: &[u8]) -> Result<Document, ReadError> {
    let text = crate::text::decode(bytes)?;
    let rendered = html2text::config::plain()
        .string_from_read(text.as_bytes(), WIDTH)
        .map_err(|e| ReadError::Broken(format!("HTML: {e}")))?;
    crate::markdown::read(&rendered)
}
