//! Documents the folder tests make with well-kept writers: a DOCX (docx-rs), PDFs with and
//! without a text layer and a locked one (lopdf), and a DOCX zip bomb (zip).

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};
use std::io::Write;

/// A DOCX with a heading and two paragraphs under it.
pub fn docx(heading: &str, paragraphs: &[&str]) -> Vec<u8> {
    use docx_rs::{Docx, Paragraph, Run};
    let mut doc = Docx::new().add_paragraph(
        Paragraph::new()
            .add_run(Run::new().add_text(heading))
            .style("Heading1"),
    );
    for p in paragraphs {
        doc = doc.add_paragraph(Paragraph::new().add_run(Run::new().add_text(*p)));
    }
    let mut out = std::io::Cursor::new(Vec::new());
    doc.build().pack(&mut out).expect("pack the DOCX");
    out.into_inner()
}

/// A one-page PDF whose page shows `text` (Some) or only an image, as a scan does (None).
fn pdf_document(text: Option<&str>) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let image_id = doc.add_object(Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => 2, "Height" => 2,
            "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8,
        },
        vec![0, 255, 255, 0],
    ));
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
        "XObject" => dictionary! { "Im0" => image_id },
    });
    let operations = match text {
        Some(t) => vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 700.into()]),
            Operation::new("Tj", vec![Object::string_literal(t)]),
            Operation::new("ET", vec![]),
        ],
        None => vec![
            Operation::new("q", vec![]),
            Operation::new(
                "cm",
                vec![
                    500.into(),
                    0.into(),
                    0.into(),
                    700.into(),
                    50.into(),
                    50.into(),
                ],
            ),
            Operation::new("Do", vec!["Im0".into()]),
            Operation::new("Q", vec![]),
        ],
    };
    let content = Content { operations };
    let content_id = doc.add_object(Stream::new(
        dictionary! {},
        content.encode().expect("encode content"),
    ));
    let page_id = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1,
            "Resources" => resources_id, "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    doc
}

fn save(mut doc: Document) -> Vec<u8> {
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("save the PDF");
    out
}

/// A one-page PDF with `text` in its text layer.
pub fn pdf_with_text(text: &str) -> Vec<u8> {
    save(pdf_document(Some(text)))
}

/// A one-page PDF whose page is an image only: no text layer.
pub fn scanned_pdf() -> Vec<u8> {
    save(pdf_document(None))
}

/// A PDF with `text`, locked with the user password `password` (RC4, 128-bit).
pub fn locked_pdf(text: &str, password: &str) -> Vec<u8> {
    use lopdf::encryption::{EncryptionState, EncryptionVersion, Permissions};
    let mut doc = pdf_document(Some(text));
    // An encrypted file needs an ID in its trailer (the key is derived from it).
    doc.trailer.set(
        "ID",
        Object::Array(vec![
            Object::string_literal(b"0123456789abcdef".to_vec()),
            Object::string_literal(b"0123456789abcdef".to_vec()),
        ]),
    );
    let version = EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password: password,
        key_length: 128,
        permissions: Permissions::all(),
    };
    let state = EncryptionState::try_from(version).expect("encryption state");
    doc.encrypt(&state).expect("encrypt");
    save(doc)
}

/// A DOCX whose document part inflates to `unpacked` bytes of spaces inside a small zip.
pub fn docx_bomb(unpacked: usize) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1))
        .large_file(true);
    zip.start_file("[Content_Types].xml", options).unwrap();
    zip.write_all(b"<Types/>").unwrap();
    zip.start_file("word/document.xml", options).unwrap();
    let block = vec![b' '; 1 << 20];
    let mut left = unpacked;
    while left > 0 {
        let n = left.min(block.len());
        zip.write_all(&block[..n]).unwrap();
        left -= n;
    }
    zip.finish().unwrap().into_inner()
}
