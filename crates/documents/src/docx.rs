//! DOCX: the paragraphs of `word/document.xml`, read with `quick-xml` from a zip opened with
//! `zip`. Each paragraph is a line; paragraphs styled as headings (`Heading1` …, `Title`) are
//! the headings of the lines below them. The unpacked size is bounded twice: by what the zip
//! declares for every entry, and by what is actually inflated.

use crate::chunk::{Builder, Document};
use crate::errors::ReadError;
use quick_xml::events::Event;
use std::io::{Cursor, Read};

/// The most a DOCX may unpack to, in **bytes** (all entries together, as declared, and the
/// document part as inflated): 256 MiB.
pub const MAX_UNPACKED_BYTES: u64 = 256 * 1024 * 1024;

/// Reads a DOCX's paragraphs.
pub(crate) fn read(bytes: &[u8]) -> Result<Document, ReadError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| ReadError::Broken(format!("not a DOCX (zip): {e}")))?;
    let mut declared = 0u64;
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| ReadError::Broken(format!("damaged zip: {e}")))?;
        declared = declared.saturating_add(entry.size());
    }
    if declared > MAX_UNPACKED_BYTES {
        return Err(ReadError::ZipBomb {
            limit: MAX_UNPACKED_BYTES,
        });
    }
    let part = zip
        .by_name("word/document.xml")
        .map_err(|_| ReadError::Broken("not a DOCX: no word/document.xml".into()))?;
    let mut xml = Vec::new();
    // The declared sizes may lie: stop inflating at the limit whatever they say.
    part.take(MAX_UNPACKED_BYTES + 1)
        .read_to_end(&mut xml)
        .map_err(|e| ReadError::Broken(format!("damaged zip: {e}")))?;
    if xml.len() as u64 > MAX_UNPACKED_BYTES {
        return Err(ReadError::ZipBomb {
            limit: MAX_UNPACKED_BYTES,
        });
    }
    paragraphs(&xml)
}

/// Reads the paragraphs of a `word/document.xml`.
fn paragraphs(xml: &[u8]) -> Result<Document, ReadError> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut b = Builder::default();
    let mut buf = Vec::new();
    let mut para = String::new();
    let mut style: Option<String> = None;
    let mut heading: Option<String> = None;
    let mut in_text = false;
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| ReadError::Broken(format!("DOCX XML: {e}")))?;
        match event {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "pStyle" => {
                style = e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.local_name().as_ref() == "val")
                    .map(|a| a.value.into_owned());
            }
            Event::Start(e) if e.local_name().as_ref() == "t" => in_text = true,
            Event::End(e) if e.local_name().as_ref() == "t" => in_text = false,
            Event::Empty(e) if e.local_name().as_ref() == "tab" => para.push('\t'),
            Event::Empty(e) if matches!(e.local_name().as_ref(), "br" | "cr") => para.push('\n'),
            Event::Text(t) if in_text => para.push_str(&t),
            Event::GeneralRef(r) if in_text => {
                // Entities (`&amp;`, `&#8217;`) arrive apart from the text around them.
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    para.push(c);
                } else {
                    para.push_str(match &*r {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => "",
                    });
                }
            }
            Event::End(e) if e.local_name().as_ref() == "p" => {
                let is_heading = style
                    .as_deref()
                    .is_some_and(|s| s.starts_with("Heading") || s == "Title");
                if is_heading && !para.trim().is_empty() {
                    heading = Some(para.trim().to_owned());
                }
                for line in para.split('\n') {
                    b.line(line, heading.as_deref());
                }
                para.clear();
                style = None;
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(b.finish())
}
