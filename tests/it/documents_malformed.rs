//! Bad input to a folder gets a clear result and loses nothing: each file that cannot be read
//! is kept as failed with the reason, and the files beside it are read.

use crate::documents_made;
use engram_core::{FileStatus, FolderFile, FolderId, NewFolder};
use engram_suite::Home;

fn folder(home: &Home) -> FolderId {
    home.engram
        .folders()
        .create(NewFolder {
            name: "inbox".into(),
            embedding: Some(engram_core::EmbeddingConfig {
                model: "none".into(),
                base_url: None,
            }),
            ..NewFolder::default()
        })
        .unwrap()
        .id
}

async fn add(home: &Home, folder: &FolderId, name: &str, bytes: Vec<u8>) -> FolderFile {
    home.engram
        .folders()
        .add_file(folder, name, bytes)
        .await
        .unwrap()
        .file
        .unwrap()
}

fn failed_with(file: &FolderFile, reason: &str) {
    assert_eq!(file.status, FileStatus::Error, "{file:?}");
    let error = file.error.as_deref().unwrap_or("");
    assert!(error.starts_with(reason), "{error}");
    assert_eq!(file.chunks, 0);
}

#[tokio::test]
async fn a_locked_pdf_fails_as_encrypted_and_the_same_pdf_unlocked_reads() {
    let home = Home::new();
    let f = folder(&home);
    let open = add(
        &home,
        &f,
        "plans.pdf",
        documents_made::pdf_with_text("Secret plans"),
    )
    .await;
    assert_eq!(open.status, FileStatus::Completed, "{open:?}");
    let locked = add(
        &home,
        &f,
        "locked.pdf",
        documents_made::locked_pdf("Secret plans", "hunter2"),
    )
    .await;
    failed_with(&locked, "encrypted PDF: it needs a password");
}

#[tokio::test]
async fn a_broken_pdf_fails_with_the_reason() {
    let home = Home::new();
    let f = folder(&home);
    let mut bytes = b"%PDF-1.7\n1 0 obj << /Type /Catalog".to_vec();
    bytes.extend(std::iter::repeat_n(0x9c, 2048));
    let broken = add(&home, &f, "broken.pdf", bytes).await;
    failed_with(&broken, "cannot read it: not a readable PDF");
    // A real PDF cut short is as broken.
    let real = std::fs::read("/usr/share/doc/libtasn1-doc/libtasn1.pdf").unwrap();
    let cut = add(&home, &f, "cut.pdf", real[..real.len() / 3].to_vec()).await;
    assert!(
        cut.status == FileStatus::Error || cut.chunks > 0,
        "either refused or what could be read is kept: {cut:?}"
    );
}

#[tokio::test]
async fn a_scanned_pdf_has_no_text_layer() {
    let home = Home::new();
    let f = folder(&home);
    let scan = add(&home, &f, "scan.pdf", documents_made::scanned_pdf()).await;
    failed_with(&scan, "no text layer: scanned PDF, nothing to read");
}

#[tokio::test]
async fn a_docx_zip_bomb_is_refused() {
    let home = Home::new();
    let f = folder(&home);
    let bomb = documents_made::docx_bomb(300 << 20);
    assert!(bomb.len() < 4 << 20, "{} bytes", bomb.len());
    let file = add(&home, &f, "bomb.docx", bomb).await;
    failed_with(&file, "refused: the DOCX unpacks to more than");
}

#[tokio::test]
async fn a_binary_renamed_txt_is_not_text() {
    let home = Home::new();
    let f = folder(&home);
    let binary = std::fs::read("/bin/ls").unwrap();
    let file = add(&home, &f, "ls.txt", binary).await;
    failed_with(&file, "not text: the file holds binary data");
}

#[tokio::test]
async fn latin1_text_is_read_as_windows_1252_with_a_note() {
    let home = Home::new();
    let f = folder(&home);
    let added = home
        .engram
        .folders()
        .add_file(&f, "menu.txt", b"Caf\xe9 cr\xe8me br\xfbl\xe9e\n".to_vec())
        .await
        .unwrap();
    let file = added.file.unwrap();
    assert_eq!(file.status, FileStatus::Completed);
    assert!(added.notes[0].starts_with("not UTF-8"), "{:?}", added.notes);
    let (text, _) = home
        .engram
        .store()
        .folders()
        .file_text(&file.id)
        .unwrap()
        .unwrap();
    assert_eq!(text, "Café crème brûlée");
}

#[tokio::test]
async fn a_name_with_dot_dot_is_refused_and_nothing_is_stored() {
    let home = Home::new();
    let f = folder(&home);
    for name in ["../../etc/passwd", "notes/../../x.txt", "/etc/passwd"] {
        let err = home
            .engram
            .folders()
            .add_file(&f, name, b"root:x:0:0".to_vec())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("folder"), "{name}: {err}");
    }
    assert!(home.engram.folders().files(&f).unwrap().is_empty());
}

#[tokio::test]
async fn a_symlink_loop_is_not_followed_and_the_other_files_are_read() {
    let home = Home::new();
    let f = folder(&home);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("docs");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("a.md"), "# A\n\nalpha\n").unwrap();
    std::fs::write(root.join("sub/b.txt"), "beta\n").unwrap();
    std::fs::write(root.join("sub/bad.txt"), [0u8, 1, 2, 3, 0, 0]).unwrap();
    std::os::unix::fs::symlink(&root, root.join("sub/loop")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
    let added = home.engram.folders().add_paths(&f, &[root]).await.unwrap();
    let skipped: Vec<_> = added.iter().filter(|a| a.skipped.is_some()).collect();
    assert_eq!(skipped.len(), 2, "{added:?}");
    assert!(
        skipped
            .iter()
            .all(|a| a.skipped.as_deref() == Some("a symbolic link: not followed"))
    );
    let files = home.engram.folders().files(&f).unwrap();
    let names: Vec<(&str, FileStatus)> =
        files.iter().map(|f| (f.name.as_str(), f.status)).collect();
    assert_eq!(
        names,
        vec![
            ("a.md", FileStatus::Completed),
            ("sub/b.txt", FileStatus::Completed),
            ("sub/bad.txt", FileStatus::Error)
        ]
    );
}

#[tokio::test]
async fn a_file_over_the_size_limit_is_kept_as_failed_without_being_read() {
    let home = Home::new();
    let f = folder(&home);
    let dir = tempfile::tempdir().unwrap();
    // Sparse: no disk or memory is spent on them.
    let sparse = |name: &str, len: u64| {
        std::fs::File::create(dir.path().join(name))
            .unwrap()
            .set_len(len)
            .unwrap();
    };
    // Text is read as a stream up to 1 GiB; a PDF is read whole, up to 64 MiB.
    sparse("huge.txt", engram_service::MAX_STREAMED_DOCUMENT_BYTES + 1);
    sparse("huge.pdf", engram_service::MAX_DOCUMENT_BYTES + 1);
    // Over 64 MiB of text is streamed: these zeros are binary, found on the first piece.
    sparse("zeros.txt", engram_service::MAX_DOCUMENT_BYTES + 1);
    std::fs::write(dir.path().join("small.txt"), "small\n").unwrap();
    let added = home
        .engram
        .folders()
        .add_paths(&f, &[dir.path().to_owned()])
        .await
        .unwrap();
    let file = |name: &str| {
        added
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| a.file.clone())
            .unwrap()
    };
    failed_with(&file("huge.txt"), "too large");
    failed_with(&file("huge.pdf"), "too large");
    assert!(
        file("huge.pdf").error.unwrap().contains("read whole"),
        "a PDF says why it is not streamed"
    );
    failed_with(&file("zeros.txt"), "not text");
    assert_eq!(file("small.txt").status, FileStatus::Completed);
}

#[tokio::test]
async fn an_unchanged_file_is_a_no_op_and_a_changed_one_is_read_again() {
    let home = Home::new();
    let f = folder(&home);
    let first = add(&home, &f, "a.txt", b"first version\n".to_vec()).await;
    let again = home
        .engram
        .folders()
        .add_file(&f, "a.txt", b"first version\n".to_vec())
        .await
        .unwrap();
    assert!(again.unchanged);
    assert_eq!(again.file.unwrap().updated_at, first.updated_at);
    let changed = add(
        &home,
        &f,
        "a.txt",
        b"second version\nwith two lines\n".to_vec(),
    )
    .await;
    assert_eq!(changed.id, first.id);
    assert_eq!(changed.lines, 2);
    let (text, _) = home
        .engram
        .store()
        .folders()
        .file_text(&changed.id)
        .unwrap()
        .unwrap();
    assert!(text.starts_with("second version"));
}
