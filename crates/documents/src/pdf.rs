//! PDF: the text layer of each page, by `pdf-extract` over a document `lopdf` loaded once.
//! A locked file fails as encrypted; a file whose pages give no text fails as scanned; a page
//! the extractor cannot read (or panics on) is left empty and noted, the others are kept.

use crate::chunk::{Builder, Document};
use crate::errors::ReadError;
use lopdf::Document as Pdf;

/// Reads a PDF's text layer, page by page.
pub(crate) fn read(bytes: &[u8]) -> Result<Document, ReadError> {
    let mut pdf = Pdf::load_mem(bytes).map_err(|e| match e {
        lopdf::Error::Decryption(_) => ReadError::Encrypted,
        other => ReadError::Broken(format!("not a readable PDF ({other})")),
    })?;
    // Files "encrypted" only to set permissions open with the empty password.
    if pdf.is_encrypted() && pdf.decrypt("").is_err() {
        return Err(ReadError::Encrypted);
    }
    let pages: Vec<u32> = pdf.get_pages().keys().copied().collect();
    if pages.is_empty() {
        return Err(ReadError::Broken("the PDF has no pages".into()));
    }
    let mut b = Builder::default();
    let mut failed = Vec::new();
    let mut chars = 0usize;
    for page in pages {
        let text = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| page_text(&pdf, page)));
        b.start_page();
        let text = match text {
            Ok(Ok(t)) => t,
            Ok(Err(_)) | Err(_) => {
                failed.push(page);
                String::new()
            }
        };
        chars += text.chars().filter(|c| !c.is_whitespace()).count();
        let mut lines = text.trim_matches('\n').lines().peekable();
        if lines.peek().is_none() {
            // An empty page still has a line, so each page starts on a line of its own.
            b.line("", None);
        }
        for line in lines {
            b.line(line.trim_end(), None);
        }
    }
    if chars == 0 {
        return Err(ReadError::NoTextLayer);
    }
    let mut doc = b.finish();
    if !failed.is_empty() {
        doc.notes.push(format!(
            "{} page(s) could not be read and are empty: {failed:?}",
            failed.len()
        ));
    }
    Ok(doc)
}

fn page_text(pdf: &Pdf, page: u32) -> Result<String, pdf_extract::OutputError> {
    let mut s = String::new();
    {
        let mut out = pdf_extract::PlainTextOutput::new(&mut s);
        pdf_extract::output_doc_page(pdf, &mut out, page)?;
    }
    Ok(s)
}
