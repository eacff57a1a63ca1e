//! Real documents the project did not write, as Debian ships them (`.ci/setup.sh` installs the
//! packages): the libtasn1 manual (PDF) and base-passwd's HTML guide.

use engram_documents::{Kind, parse, read_bytes};
use std::path::Path;

#[test]
fn the_libtasn1_manual_is_read_page_by_page() {
    let path = Path::new("/usr/share/doc/libtasn1-doc/libtasn1.pdf");
    let doc = parse("libtasn1.pdf", &read_bytes(path).unwrap()).unwrap();
    assert_eq!(doc.kind, Kind::Pdf);
    let pages = doc.pages().unwrap();
    assert!(pages > 30, "{pages} pages");
    // Each passage stays on one page, and its lines are on that page.
    for c in &doc.chunks {
        let page = c.page.unwrap() as usize;
        assert!(doc.page_starts[page - 1] <= c.line_start);
        if page < doc.page_starts.len() {
            assert!(c.line_end < doc.page_starts[page]);
        }
    }
    let hit = doc
        .chunks
        .iter()
        .find(|c| c.text.contains("asn1_parser2tree"))
        .expect("a passage names asn1_parser2tree");
    assert!(hit.page.unwrap() > 1);
    eprintln!(
        "{pages} pages, {} lines, {} passages; asn1_parser2tree first on page {:?}",
        doc.lines,
        doc.chunks.len(),
        hit.page
    );
}

#[test]
fn an_html_guide_is_read_with_its_headings() {
    let path = Path::new("/usr/share/doc/base-passwd/users-and-groups.html");
    let doc = parse("users-and-groups.html", &read_bytes(path).unwrap()).unwrap();
    assert_eq!(doc.kind, Kind::Html);
    assert!(!doc.text.contains("<p>"), "tags are gone");
    let root = doc
        .chunks
        .iter()
        .find(|c| c.text.contains("sys"))
        .expect("a passage names the sys group");
    assert!(root.heading.is_some(), "{root:?}");
    eprintln!("{} lines, {} passages", doc.lines, doc.chunks.len());
}
