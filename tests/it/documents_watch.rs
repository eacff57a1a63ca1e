//! A folder linked to a directory on disk follows it: files added, changed and deleted there
//! show in the folder with their passages; hidden and temporary files are left out; a symbolic
//! link out of the directory is listed as not followed; a directory that vanishes leaves the
//! folder as it was until it is back; the link survives a restart; and a directory of 10,000
//! files is taken in whole, then followed. Real files, the real OS watcher; each expected
//! state is polled for with a deadline.

use engram_core::{FileStatus, FolderFile, FolderId, NewFolder, WatchState};
use engram_service::Engram;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(30);

fn engram(home: &Path) -> Arc<Engram> {
    engram_suite::open_with_env(home, &[])
}

fn folder(engram: &Engram) -> FolderId {
    engram
        .folders()
        .create(NewFolder {
            name: "desk".into(),
            embedding: Some(engram_core::EmbeddingConfig {
                model: "none".into(),
                base_url: None,
            }),
            ..NewFolder::default()
        })
        .unwrap()
        .id
}

/// The folder's files by name.
fn files(engram: &Engram, folder: &FolderId) -> BTreeMap<String, FolderFile> {
    engram
        .folders()
        .files(folder)
        .unwrap()
        .into_iter()
        .map(|f| (f.name.clone(), f))
        .collect()
}

/// Every passage of the folder, `name: text`, joined.
fn passages(engram: &Engram, folder: &FolderId) -> String {
    engram
        .folders()
        .passages(folder, 1000, 0)
        .unwrap()
        .into_iter()
        .map(|(name, c)| format!("{name}: {}", c.text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The folder's link to its directory, as stored.
fn watch_of(engram: &Engram, folder: &FolderId) -> Option<engram_core::FolderWatch> {
    engram
        .folders()
        .watches()
        .unwrap()
        .into_iter()
        .find(|w| &w.folder_id == folder)
}

fn state(engram: &Engram, folder: &FolderId) -> Option<WatchState> {
    watch_of(engram, folder).map(|w| w.state)
}

/// Waits until `check` holds, failing with `what` and the folder's last state at the deadline.
async fn until(engram: &Engram, folder: &FolderId, what: &str, check: impl Fn() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < DEADLINE,
            "{what}: not within {DEADLINE:?}; files {:?}, passages {:?}, watch {:?}",
            files(engram, folder).keys().collect::<Vec<_>>(),
            passages(engram, folder),
            engram.folders().watches().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn names(engram: &Engram, folder: &FolderId) -> Vec<String> {
    files(engram, folder).into_keys().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_directory_is_followed_file_by_file() {
    let home = tempfile::tempdir().unwrap();
    let desk = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let d = desk.path();
    std::fs::write(
        d.join("alpha.md"),
        "# Alpha\n\nthe otters sleep by the river\n",
    )
    .unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/beta.txt"), "beta line about herons\n").unwrap();
    std::fs::write(d.join(".secret.md"), "hidden\n").unwrap();
    std::fs::write(d.join("alpha.md~"), "an editor's backup\n").unwrap();
    std::fs::create_dir(d.join(".git")).unwrap();
    std::fs::write(d.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(outside.path().join("private.txt"), "not for the folder\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("private.txt"), d.join("escape.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), d.join("escape-dir")).unwrap();

    let engram = engram(home.path());
    let f = folder(&engram);
    let link = engram.folders().watch(&f, d).unwrap();
    assert_eq!(
        Path::new(&link.path),
        std::fs::canonicalize(d).unwrap().as_path()
    );

    until(&engram, &f, "the first sync", || {
        names(&engram, &f) == ["alpha.md", "escape-dir", "escape.txt", "sub/beta.txt"]
            && state(&engram, &f) == Some(WatchState::Watching)
    })
    .await;
    let listed = files(&engram, &f);
    assert_eq!(listed["alpha.md"].status, FileStatus::Completed);
    for link in ["escape.txt", "escape-dir"] {
        assert_eq!(listed[link].status, FileStatus::Error);
        assert_eq!(
            listed[link].error.as_deref(),
            Some("a symbolic link pointing outside the watched directory: not followed")
        );
    }
    let text = passages(&engram, &f);
    assert!(
        text.contains("alpha.md: # Alpha") && text.contains("otters"),
        "{text}"
    );
    assert!(
        !text.contains("not for the folder") && !text.contains("hidden"),
        "{text}"
    );

    // Changed: the old passages go, the new ones come.
    std::fs::write(
        d.join("alpha.md"),
        "# Alpha\n\nthe badgers dig by the river\n",
    )
    .unwrap();
    until(&engram, &f, "a changed file re-read", || {
        let t = passages(&engram, &f);
        t.contains("badgers") && !t.contains("otters")
    })
    .await;

    // Added, in a new subdirectory too; a temporary file beside them is left out.
    std::fs::write(d.join("gamma.md"), "gamma talks of kingfishers\n").unwrap();
    std::fs::create_dir(d.join("new")).unwrap();
    std::fs::write(d.join("new/delta.txt"), "delta: moorhens\n").unwrap();
    std::fs::write(d.join("gamma.md.swp"), "swap").unwrap();
    until(&engram, &f, "added files read", || {
        let t = passages(&engram, &f);
        t.contains("kingfishers") && t.contains("moorhens")
    })
    .await;
    assert!(!names(&engram, &f).contains(&"gamma.md.swp".to_owned()));

    // Deleted: a file, then a whole directory.
    std::fs::remove_file(d.join("sub/beta.txt")).unwrap();
    std::fs::remove_dir_all(d.join("new")).unwrap();
    until(&engram, &f, "deleted files gone", || {
        names(&engram, &f) == ["alpha.md", "escape-dir", "escape.txt", "gamma.md"]
    })
    .await;
    let t = passages(&engram, &f);
    assert!(!t.contains("herons") && !t.contains("moorhens"), "{t}");

    // A link replaced by a real file is read; a file replaced by a link out loses its text.
    std::fs::remove_file(d.join("escape.txt")).unwrap();
    std::fs::write(d.join("escape.txt"), "now a plain file about voles\n").unwrap();
    std::fs::remove_file(d.join("gamma.md")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("private.txt"), d.join("gamma.md")).unwrap();
    until(&engram, &f, "links and files swapped", || {
        let l = files(&engram, &f);
        l.get("escape.txt")
            .is_some_and(|x| x.status == FileStatus::Completed)
            && l.get("gamma.md")
                .is_some_and(|x| x.status == FileStatus::Error)
    })
    .await;
    let t = passages(&engram, &f);
    assert!(t.contains("voles") && !t.contains("kingfishers"), "{t}");

    // Unlinked: the files stay.
    assert!(engram.folders().unwatch(&f).unwrap());
    assert!(engram.folders().watches().unwrap().is_empty());
    assert_eq!(names(&engram, &f).len(), 4);
}

/// When the watch last went through the folder's directory.
fn synced_at(engram: &Engram, folder: &FolderId) -> Option<String> {
    watch_of(engram, folder).and_then(|w| w.synced_at.map(|t| t.to_rfc3339()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_files_is_not_taken_for_a_change() {
    // The OS reports a file opened for reading as an event too; Engram reads every file a
    // change names, so taking its own reads for changes would go through them forever.
    let home = tempfile::tempdir().unwrap();
    let desk = tempfile::tempdir().unwrap();
    std::fs::write(desk.path().join("a.txt"), "otters\n").unwrap();
    std::fs::write(desk.path().join("b.txt"), "herons\n").unwrap();
    let engram = engram(home.path());
    let f = folder(&engram);
    engram.folders().watch(&f, desk.path()).unwrap();
    until(&engram, &f, "the first sync", || {
        names(&engram, &f) == ["a.txt", "b.txt"] && state(&engram, &f) == Some(WatchState::Watching)
    })
    .await;
    std::fs::write(desk.path().join("a.txt"), "otters and seals\n").unwrap();
    until(&engram, &f, "the change", || {
        passages(&engram, &f).contains("seals")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let settled = synced_at(&engram, &f);
    // Someone else reading the files is no change either.
    std::fs::read(desk.path().join("b.txt")).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        synced_at(&engram, &f),
        settled,
        "went through the directory again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_directory_keeps_the_files_until_it_is_back() {
    let home = tempfile::tempdir().unwrap();
    let parent = tempfile::tempdir().unwrap();
    let d = parent.path().join("desk");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("one.md"), "one: larks\n").unwrap();
    let engram = engram(home.path());
    let f = folder(&engram);
    engram.folders().watch(&f, &d).unwrap();
    until(&engram, &f, "the first sync", || {
        names(&engram, &f) == ["one.md"] && state(&engram, &f) == Some(WatchState::Watching)
    })
    .await;

    std::fs::remove_dir_all(&d).unwrap();
    until(&engram, &f, "the directory marked missing", || {
        state(&engram, &f) == Some(WatchState::Missing)
    })
    .await;
    let link = &engram.folders().watches().unwrap()[0];
    assert!(
        link.error.as_deref().unwrap_or("").contains("is gone"),
        "{link:?}"
    );
    assert_eq!(
        names(&engram, &f),
        ["one.md"],
        "files kept while it is gone"
    );

    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("two.md"), "two: swifts\n").unwrap();
    until(&engram, &f, "watching resumed", || {
        names(&engram, &f) == ["two.md"] && state(&engram, &f) == Some(WatchState::Watching)
    })
    .await;
    std::fs::write(d.join("three.md"), "three: wrens\n").unwrap();
    until(&engram, &f, "changes followed again", || {
        passages(&engram, &f).contains("wrens")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_made_before_a_restart_is_watched_after_it() {
    let home = tempfile::tempdir().unwrap();
    let desk = tempfile::tempdir().unwrap();
    std::fs::write(desk.path().join("kept.md"), "kept: curlews\n").unwrap();
    let f = {
        // A short-lived process (the CLI) links and syncs once, then quits.
        let first = engram(home.path());
        let f = folder(&first);
        first.folders().link_dir(&f, desk.path()).unwrap();
        let report = first.folders().sync_watched(&f).await.unwrap();
        assert_eq!((report.added, report.removed), (1, 0));
        assert_eq!(state(&first, &f), Some(WatchState::Linked));
        f
    };
    std::fs::write(desk.path().join("later.md"), "later: plovers\n").unwrap();
    let second = engram(home.path());
    second.folders().resume_watches();
    until(&second, &f, "the link resumed", || {
        names(&second, &f) == ["kept.md", "later.md"]
            && state(&second, &f) == Some(WatchState::Watching)
    })
    .await;
    std::fs::write(desk.path().join("kept.md"), "kept: godwits\n").unwrap();
    until(&second, &f, "changes followed", || {
        passages(&second, &f).contains("godwits")
    })
    .await;
}

#[tokio::test]
async fn a_directory_holding_the_data_or_not_a_directory_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let engram = engram(home.path());
    let f = folder(&engram);
    let err = engram.folders().link_dir(&f, home.path()).unwrap_err();
    assert!(err.to_string().contains("Engram's own data"), "{err}");
    let err = engram
        .folders()
        .link_dir(&f, Path::new("/definitely/not/here"))
        .unwrap_err();
    assert!(err.to_string().contains("cannot watch"), "{err}");
    let desk = tempfile::tempdir().unwrap();
    std::fs::write(desk.path().join("a.md"), "a\n").unwrap();
    let err = engram
        .folders()
        .link_dir(&f, &desk.path().join("a.md"))
        .unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

/// Waits up to `deadline` until `check` holds, failing with `what` and the folder's file count.
async fn until_within(
    engram: &Engram,
    folder: &FolderId,
    deadline: Duration,
    what: &str,
    check: impl Fn() -> bool,
) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < deadline,
            "{what}: not within {deadline:?}; {} files, watch {:?}",
            files(engram, folder).len(),
            engram.folders().watches().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_files_are_taken_in_and_then_followed() {
    const FILES: usize = 10_000;
    let home = tempfile::tempdir().unwrap();
    let desk = tempfile::tempdir().unwrap();
    for i in 0..FILES {
        let dir = desk.path().join(format!("box-{:02}", i % 100));
        if i < 100 {
            std::fs::create_dir(&dir).unwrap();
        }
        std::fs::write(
            dir.join(format!("note-{i:05}.txt")),
            format!("note {i}: the tide table of harbour {}\n", i % 37),
        )
        .unwrap();
    }
    let engram = engram(home.path());
    let f = folder(&engram);
    let started = Instant::now();
    engram.folders().watch(&f, desk.path()).unwrap();
    until_within(
        &engram,
        &f,
        Duration::from_secs(600),
        "all files taken in",
        || files(&engram, &f).len() == FILES && state(&engram, &f) == Some(WatchState::Watching),
    )
    .await;
    let taken_in = started.elapsed();
    let all = files(&engram, &f);
    assert!(
        all.values()
            .all(|file| file.status == FileStatus::Completed),
        "{:?}",
        all.values()
            .find(|file| file.status != FileStatus::Completed)
    );
    assert!(all.contains_key("box-42/note-09942.txt"));

    // Afterwards a change, a deletion and a new file are each followed.
    std::fs::write(
        desk.path().join("box-07/note-00007.txt"),
        "note 7: the lighthouse keeper's log\n",
    )
    .unwrap();
    std::fs::remove_file(desk.path().join("box-08/note-00008.txt")).unwrap();
    std::fs::write(
        desk.path().join("box-09/late.txt"),
        "a late note on curlews\n",
    )
    .unwrap();
    until_within(&engram, &f, DEADLINE, "the later changes followed", || {
        let now = files(&engram, &f);
        now.len() == FILES
            && !now.contains_key("box-08/note-00008.txt")
            && now.contains_key("box-09/late.txt")
            && engram
                .folders()
                .file_text(&now["box-07/note-00007.txt"].id)
                .is_ok_and(|t| t.is_some_and(|t| t.contains("lighthouse")))
    })
    .await;
    eprintln!("{FILES} files taken in: {:.1} s", taken_in.as_secs_f64());
}
