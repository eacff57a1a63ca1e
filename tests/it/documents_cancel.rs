//! A file can be cancelled while it is read: here its folder's embedding server accepts the
//! request and never answers, so the file waits in `embedding` until it is cancelled; then
//! the add answers at once that it was cancelled, and neither the file nor its passages stay.

use engram_core::{EmbeddingConfig, FileStatus, NewFolder};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_being_read_is_cancelled_and_leaves_nothing() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let home = tempfile::tempdir().unwrap();
    let engram = engram_suite::open_with_env(home.path(), &[]);
    let folder = engram
        .folders()
        .create(NewFolder {
            name: "slow".into(),
            embedding: Some(EmbeddingConfig {
                model: "openai/mock-embed".into(),
                base_url: Some(format!("http://127.0.0.1:{port}/v1")),
            }),
            ..NewFolder::default()
        })
        .unwrap()
        .id;
    let adding = {
        let (engram, folder) = (Arc::clone(&engram), folder.clone());
        tokio::spawn(async move {
            engram
                .folders()
                .add_file(
                    &folder,
                    "notes.md",
                    b"# Notes\n\nthe heron waits\n".to_vec(),
                )
                .await
        })
    };
    let start = Instant::now();
    loop {
        let files = engram.folders().files(&folder).unwrap();
        if files
            .first()
            .is_some_and(|f| f.status == FileStatus::Embedding)
        {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{files:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!engram.folders().cancel_read(&folder, "other.md"));
    assert!(engram.folders().cancel_read(&folder, "notes.md"));
    let added = tokio::time::timeout(Duration::from_secs(10), adding)
        .await
        .expect("the add answers once cancelled")
        .unwrap()
        .unwrap();
    assert!(added.file.is_none(), "{added:?}");
    assert!(
        added
            .skipped
            .as_deref()
            .unwrap_or("")
            .starts_with("cancelled"),
        "{added:?}"
    );
    assert!(engram.folders().files(&folder).unwrap().is_empty());
    assert!(
        engram
            .folders()
            .passages(&folder, 10, 0)
            .unwrap()
            .is_empty()
    );
    assert!(
        !engram.folders().cancel_read(&folder, "notes.md"),
        "nothing left to cancel"
    );
}
