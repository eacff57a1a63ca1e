//! The CLI's output to a reader that goes away: `engram agent show | head -1` ends quietly
//! (exit 0, no panic message) instead of panicking on the broken pipe.

use engram_suite::cli_command;
use std::process::Stdio;

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let home = tempfile::tempdir().unwrap();
    let created = engram_suite::cli(
        home.path(),
        &["agent", "create", "--name", "Sam", "--embedding", "none"],
    );
    assert!(created.status.success(), "{created:?}");
    let id = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    for args in [vec!["agent", "show", id.as_str()], vec!["agent", "list"]] {
        let mut child = cli_command(home.path())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader leaves before a byte is read, as `head` does once it has its lines.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
    }
}
