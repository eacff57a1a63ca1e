//! Folders of documents in a real SQLite file: an unchanged re-upload is a no-op, a changed
//! one is re-indexed, passages are found by words and vectors over attached folders only,
//! attaching gives the file tools, and opening past the limit closes the least recently used.

use crate::support::{create, temp_store};
use engram_core::{FileStatus, NewFolder, Provenance};
use engram_retrieval::HybridSearch;
use engram_store::{FILE_TOOLS, FileUpload, NewChunk, ParsedFile, Store, Upserted};

fn upload(name: &str, sha: &str) -> FileUpload {
    FileUpload {
        name: name.into(),
        mime: "text/plain".into(),
        size: 10,
        sha256: sha.into(),
    }
}

fn parsed(lines: &[&str]) -> ParsedFile {
    ParsedFile {
        text: lines.join("\n"),
        page_starts: vec![],
        lines: lines.len() as u32,
        chunks: lines
            .iter()
            .enumerate()
            .map(|(i, l)| NewChunk {
                text: (*l).into(),
                provenance: Provenance {
                    page: None,
                    heading: None,
                    line_start: i as u32 + 1,
                    line_end: i as u32 + 1,
                },
            })
            .collect(),
    }
}

fn add(
    store: &Store,
    folder: &engram_core::FolderId,
    name: &str,
    sha: &str,
    lines: &[&str],
) -> engram_core::FolderFile {
    let Upserted::Changed(f) = store
        .folders()
        .upsert_file(folder, &upload(name, sha))
        .unwrap()
    else {
        panic!("expected a change");
    };
    store
        .folders()
        .store_parsed_file(&f.id, &parsed(lines), FileStatus::Completed)
        .unwrap()
}

#[test]
fn an_unchanged_upload_is_a_no_op_and_a_changed_one_is_reindexed() {
    let (_dir, store) = temp_store();
    let folder = store
        .folders()
        .create(&NewFolder {
            name: "docs".into(),
            ..NewFolder::default()
        })
        .unwrap();
    let first = add(
        &store,
        &folder.id,
        "a.txt",
        "aaa",
        &["red apples", "green pears"],
    );
    assert_eq!((first.chunks, first.lines), (2, 2));
    match store
        .folders()
        .upsert_file(&folder.id, &upload("a.txt", "aaa"))
        .unwrap()
    {
        Upserted::Unchanged(f) => assert_eq!(f.id, first.id),
        other => panic!("{other:?}"),
    }
    let second = add(&store, &folder.id, "a.txt", "bbb", &["blue plums"]);
    assert_eq!(second.id, first.id, "the same file, re-indexed");
    assert_eq!(second.chunks, 1);
    assert_eq!(
        store
            .folders()
            .list_chunks(&folder.id, 10, 0)
            .unwrap()
            .len(),
        1
    );
    let failed = store.folders().fail_file(&second.id, "broken").unwrap();
    assert_eq!(failed.status, FileStatus::Error);
    assert_eq!(failed.error.as_deref(), Some("broken"));
    assert!(
        store
            .folders()
            .list_chunks(&folder.id, 10, 0)
            .unwrap()
            .is_empty()
    );
    assert!(
        matches!(
            store
                .folders()
                .upsert_file(&folder.id, &upload("a.txt", "bbb"))
                .unwrap(),
            Upserted::Changed(_)
        ),
        "a failed file is read again"
    );
}

#[test]
fn search_covers_attached_folders_only_and_fuses_vectors() {
    let (_dir, store) = temp_store();
    let (agent, _) = create(&store, "Sam");
    let mine = store
        .folders()
        .create(&NewFolder {
            name: "mine".into(),
            ..NewFolder::default()
        })
        .unwrap();
    let other = store
        .folders()
        .create(&NewFolder {
            name: "other".into(),
            ..NewFolder::default()
        })
        .unwrap();
    add(
        &store,
        &mine.id,
        "fruit.txt",
        "1",
        &["red apples grow on trees", "the sky is blue"],
    );
    add(
        &store,
        &other.id,
        "secret.txt",
        "2",
        &["red apples are secret"],
    );
    assert!(
        store
            .search_agent_files(&agent.id, "apples", None, 5)
            .unwrap()
            .is_empty()
    );

    store.folders().attach(&agent.id, &mine.id).unwrap();
    let tools = store.agents().get(&agent.id).unwrap().tools;
    for t in FILE_TOOLS {
        assert!(tools.iter().any(|x| x == t), "{tools:?}");
    }
    let hits = store
        .search_agent_files(&agent.id, "apples", None, 5)
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].citation(), "fruit.txt:L1");

    // Vectors: the second line is nearest to the query vector, with no shared word.
    assert_eq!(embed_all(&store, &mine.id), 2);
    let q = [1.0f32, 0.1];
    let hits = store
        .search_agent_files(&agent.id, "heavens", Some(("test/model", &q)), 1)
        .unwrap();
    assert_eq!(hits[0].citation(), "fruit.txt:L2");
    let hits = store
        .search_agent_files(&agent.id, "heavens", Some(("other/model", &q)), 1)
        .unwrap();
    assert!(hits.is_empty(), "vectors of another model are not compared");

    store.folders().detach(&agent.id, &mine.id).unwrap();
    let tools = store.agents().get(&agent.id).unwrap().tools;
    assert!(!tools.iter().any(|t| t == "open_files"), "{tools:?}");
}

#[test]
fn opening_past_the_limit_closes_the_least_recently_used() {
    let (_dir, store) = temp_store();
    let (agent, _) = create(&store, "Sam");
    let folder = store
        .folders()
        .create(&NewFolder {
            name: "d".into(),
            ..NewFolder::default()
        })
        .unwrap();
    store.folders().attach(&agent.id, &folder.id).unwrap();
    let files: Vec<_> = (0..3)
        .map(|i| {
            add(
                &store,
                &folder.id,
                &format!("{i}.txt"),
                &i.to_string(),
                &["x", "y"],
            )
        })
        .collect();
    for f in &files[..2] {
        assert!(
            store
                .folders()
                .open_file(&agent.id, &f.id, 1, 10, 2)
                .unwrap()
                .is_empty()
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let closed = store
        .folders()
        .open_file(&agent.id, &files[2].id, 1, 10, 2)
        .unwrap();
    assert_eq!(closed, vec![files[0].id.clone()]);
    let open: Vec<_> = store
        .folders()
        .files_of_agent(&agent.id)
        .unwrap()
        .into_iter()
        .filter(|f| f.is_open)
        .map(|f| f.file_name)
        .collect();
    assert_eq!(open, vec!["d/1.txt", "d/2.txt"]);
    let windows = store.folders().open_file_windows(&agent.id).unwrap();
    assert_eq!(windows[1].text, "1: x\n2: y");
    assert_eq!(
        store
            .folders()
            .file_of_agent(&agent.id, "2.txt")
            .unwrap()
            .unwrap()
            .id,
        files[2].id
    );
    assert_eq!(store.folders().close_all_files(&agent.id).unwrap(), 2);
    assert!(
        store
            .folders()
            .open_file_windows(&agent.id)
            .unwrap()
            .is_empty()
    );

    store.folders().delete(&folder.id).unwrap();
    assert!(
        store
            .folders()
            .files_of_agent(&agent.id)
            .unwrap()
            .is_empty()
    );
    assert!(store.folders().list().unwrap().is_empty());
}

/// Vectors `[1, 0]` for passages mentioning the sky, `[0, 1]` for the others.
/// Returns how many were stored.
fn embed_all(store: &Store, folder: &engram_core::FolderId) -> usize {
    let pending = store.folders().chunks_without_vectors(folder, 100).unwrap();
    let filled: Vec<_> = pending
        .iter()
        .map(|c| {
            let v = if c.text.contains("sky") {
                vec![1.0, 0.0]
            } else {
                vec![0.0, 1.0]
            };
            (c.pk, c.text.clone(), v)
        })
        .collect();
    store
        .folders()
        .fill_chunk_vectors("test/model", &filled)
        .unwrap()
}

#[test]
fn the_vector_side_follows_every_change_of_the_folders_vectors() {
    let (dir, store) = temp_store();
    let (agent, _) = create(&store, "Sam");
    let folder = store
        .folders()
        .create(&NewFolder {
            name: "notes".into(),
            ..NewFolder::default()
        })
        .unwrap();
    store.folders().attach(&agent.id, &folder.id).unwrap();
    let file = add(
        &store,
        &folder.id,
        "a.txt",
        "1",
        &["the sky is blue", "bread"],
    );
    embed_all(&store, &folder.id);
    let q = [1.0f32, 0.0];
    let nearest = |store: &Store| -> Vec<String> {
        store
            .search_agent_files(&agent.id, "zzz", Some(("test/model", &q)), 3)
            .unwrap()
            .iter()
            .map(|h| h.citation())
            .collect()
    };
    let first = nearest(&store);
    assert_eq!(first, ["a.txt:L1", "a.txt:L2"]);

    // Re-indexed: the sky moved to the second line; the copy read before must not answer.
    add(&store, &folder.id, "a.txt", "2", &["bread", "a grey sky"]);
    embed_all(&store, &folder.id);
    let second = nearest(&store);
    assert_eq!(second, ["a.txt:L2", "a.txt:L1"]);

    // Written through a second connection to the same file (another process would do the
    // same): a new file whose passage is nearer than any.
    let other = Store::open(&dir.path().join("data").join("engram.db")).unwrap();
    add(&other, &folder.id, "b.txt", "3", &["sky", "more bread"]);
    embed_all(&other, &folder.id);
    let third = nearest(&store);
    assert_eq!(third.len(), 3, "{third:?}");
    assert!(third[..2].contains(&"b.txt:L1".to_owned()), "{third:?}");

    // Deleted there: gone here.
    other.folders().delete_file(&file.id).unwrap();
    let fourth = nearest(&store);
    assert_eq!(fourth, ["b.txt:L1", "b.txt:L2"]);
    assert!(store.vector_index_memory() > 0, "the folder's copy is held");
}

#[test]
fn words_found_in_a_small_attached_folder_beside_a_big_unattached_one() {
    let (_dir, store) = temp_store();
    let (agent, _) = create(&store, "Sam");
    let new = |name: &str| {
        store
            .folders()
            .create(&NewFolder {
                name: name.into(),
                ..NewFolder::default()
            })
            .unwrap()
    };
    let (mine, big) = (new("mine"), new("big"));
    // Hundreds of passages elsewhere that match better than the agent's one.
    let lines: Vec<String> = (0..600).map(|i| format!("apples apples {i}")).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    add(&store, &big.id, "orchard.txt", "1", &lines);
    add(
        &store,
        &mine.id,
        "note.txt",
        "2",
        &["one apples pie with a long crust of pastry"],
    );
    store.folders().attach(&agent.id, &mine.id).unwrap();
    let hits = store
        .search_agent_files(&agent.id, "apples", None, 5)
        .unwrap();
    let cited: Vec<String> = hits.iter().map(|h| h.citation()).collect();
    assert_eq!(cited, ["note.txt:L1"]);

    // Attached too: the best of both, the big folder's first.
    store.folders().attach(&agent.id, &big.id).unwrap();
    let hits = store
        .search_agent_files(&agent.id, "apples", None, 5)
        .unwrap();
    assert_eq!(hits.len(), 5);
    assert!(
        hits.iter().all(|h| h.file_name == "orchard.txt"),
        "{hits:?}"
    );
}
