//! Reading a file a directory walk listed: a symbolic link in its place is never followed.

use engram_documents::{ReadError, read_bytes, read_listed_bytes};

#[test]
fn a_listed_file_is_read_and_a_link_in_its_place_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "not for the folder").unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "meeting at noon").unwrap();
    assert_eq!(read_listed_bytes(&notes).unwrap(), b"meeting at noon");

    // The walk listed `notes.txt` as a file; by the time it is read, it is a link out.
    std::fs::remove_file(&notes).unwrap();
    std::os::unix::fs::symlink(&secret, &notes).unwrap();
    assert!(matches!(
        read_listed_bytes(&notes),
        Err(ReadError::Replaced)
    ));
    // A path a person named is read as they named it, link or not.
    assert_eq!(read_bytes(&notes).unwrap(), b"not for the folder");
    // A directory in its place is refused the same way.
    std::fs::remove_file(&notes).unwrap();
    std::fs::create_dir(&notes).unwrap();
    assert!(matches!(
        read_listed_bytes(&notes),
        Err(ReadError::Replaced)
    ));
}
