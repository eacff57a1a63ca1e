//! Reading documents, as a report: `cargo bench --bench documents`.
//!
//! Two figures on real files the project did not write (Debian's `libtasn1.pdf` manual, 36
//! pages, from the `libtasn1-doc` package; base-passwd's HTML guide):
//! - **parsing**: text extraction and cutting into passages alone, in pages per second (PDF)
//!   and MB per second (HTML), the median of several runs;
//! - **reading and embedding**: a whole upload through the service into a folder on the
//!   built-in embedding model (weights from `ENGRAM_LOCAL_MODEL_DIR`), in passages per second.

use engram_core::{EmbeddingConfig, NewFolder};
use engram_suite::Home;
use std::time::{Duration, Instant};

const PDF: &str = "/usr/share/doc/libtasn1-doc/libtasn1.pdf";
const HTML: &str = "/usr/share/doc/base-passwd/users-and-groups.html";
const RUNS: usize = 7;

/// The median time of `RUNS` calls of `f`.
fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn main() {
    let pdf = std::fs::read(PDF).expect("install libtasn1-doc for the PDF manual");
    let html = std::fs::read(HTML).expect("install base-passwd for its HTML guide");

    let doc = engram_documents::parse("libtasn1.pdf", &pdf).expect("the manual reads");
    let pages = doc.pages().unwrap_or(0);
    let t = median(|| {
        engram_documents::parse("libtasn1.pdf", &pdf).unwrap();
    });
    println!(
        "parse PDF: {pages} pages, {} passages in {:.0} ms: {:.0} pages/s",
        doc.chunks.len(),
        t.as_secs_f64() * 1e3,
        f64::from(pages) / t.as_secs_f64()
    );
    let t = median(|| {
        engram_documents::parse("users-and-groups.html", &html).unwrap();
    });
    println!(
        "parse HTML: {} KB in {:.1} ms: {:.1} MB/s",
        html.len() / 1024,
        t.as_secs_f64() * 1e3,
        html.len() as f64 / 1e6 / t.as_secs_f64()
    );

    let Ok(weights) = std::env::var("ENGRAM_LOCAL_MODEL_DIR") else {
        println!(
            "read and embed: skipped (set ENGRAM_LOCAL_MODEL_DIR to the built-in model's weights)"
        );
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let home = Home::with_env(&[("ENGRAM_LOCAL_MODEL_DIR", &weights)]);
        let folder = home
            .engram
            .folders()
            .create(NewFolder {
                name: "manuals".into(),
                embedding: Some(EmbeddingConfig {
                    model: engram_service::LOCAL_EMBEDDING_MODEL.into(),
                    base_url: None,
                }),
                ..NewFolder::default()
            })
            .unwrap();
        // The model loads on first use: a small file first, so the timing is of the work.
        home.engram
            .folders()
            .add_file(&folder.id, "warm-up.txt", b"The model loads once.".to_vec())
            .await
            .unwrap();
        let started = Instant::now();
        let added = home
            .engram
            .folders()
            .add_file(&folder.id, "libtasn1.pdf", pdf.clone())
            .await
            .unwrap();
        let t = started.elapsed();
        let file = added.file.expect("stored");
        assert!(added.notes.is_empty(), "{:?}", added.notes);
        println!(
            "read and embed PDF: {} passages in {:.1} s: {:.0} passages/s",
            file.chunks,
            t.as_secs_f64(),
            f64::from(file.chunks) / t.as_secs_f64()
        );
    });
}
