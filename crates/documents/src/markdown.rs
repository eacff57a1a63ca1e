//! Markdown: the source text as it is (so line numbers match the file), each line under the
//! heading `pulldown-cmark` finds above it.

use crate::chunk::{Builder, Document};
use crate::errors::ReadError;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// Reads Markdown source text.
pub(crate) fn read(text: &str) -> Result<Document, ReadError> {
    let headings = headings(text);
    let mut b = Builder::default();
    let mut next = 0;
    let mut heading: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i as u32 + 1;
        while next < headings.len() && headings[next].0 <= n {
            heading = Some(headings[next].1.trim());
            next += 1;
        }
        b.line(line, heading);
    }
    Ok(b.finish())
}

/// The headings of Markdown source text: (first line of the heading, 1-based; its text), in
/// order.
pub(crate) fn headings(text: &str) -> Vec<(u32, String)> {
    let mut headings: Vec<(u32, String)> = Vec::new();
    let mut current: Option<(u32, String)> = None;
    // Headings come in the order of their offsets: count line breaks from the last one.
    let (mut counted_to, mut line) = (0usize, 1u32);
    let mut line_of = |offset: usize| {
        if offset >= counted_to {
            line += text[counted_to..offset].matches('\n').count() as u32;
            counted_to = offset;
        }
        line
    };
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => {
                current = Some((line_of(range.start), String::new()))
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, h)) = &mut current {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => headings.extend(current.take()),
            _ => {}
        }
    }
    headings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_sit_under_their_heading() {
        let d = read("intro\n\n# Setup\n\nrun `make`\n\nSecond\n------\nmore").unwrap();
        let got: Vec<_> = d
            .chunks
            .iter()
            .map(|c| (c.heading.as_deref(), c.line_start, c.line_end))
            .collect();
        assert_eq!(
            got,
            vec![(None, 1, 1), (Some("Setup"), 3, 5), (Some("Second"), 7, 9)]
        );
    }
}
