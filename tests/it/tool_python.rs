//! The Python tools run in: `engram python status` tells which one and whether it has
//! letta-client; `engram python setup` makes one in the data directory with the tutorials'
//! letta-client (from PyPI, like the SDK tests), and from then on tools run in it.

use engram_suite::{cli_command, stdout_ok};
use serde_json::Value;

fn status(home: &std::path::Path) -> Value {
    let out = cli_command(home)
        .env_remove("ENGRAM_PYTHON")
        .args(["python", "status", "--json"])
        .output()
        .unwrap();
    serde_json::from_str(&stdout_ok(&out)).unwrap()
}

#[test]
fn python_setup_installs_letta_client_and_tools_use_it() {
    let home = tempfile::tempdir().unwrap();
    let before = status(home.path());
    assert_eq!(before["program"], "python3", "{before}");
    assert_eq!(before["managed"], false);

    let out = cli_command(home.path())
        .env_remove("ENGRAM_PYTHON")
        .args(["python", "setup"])
        .output()
        .unwrap();
    let text = stdout_ok(&out);
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.contains("Installing letta-client==0.1.324"),
        "{progress}"
    );
    assert!(text.contains("(set up by Engram)"), "{text}");
    assert!(text.contains("letta-client: 0.1.324"), "{text}");

    // A new process picks the environment up by itself.
    let after = status(home.path());
    assert_eq!(after["managed"], true, "{after}");
    assert_eq!(after["letta_client"], "0.1.324");
    assert!(
        after["program"]
            .as_str()
            .unwrap()
            .starts_with(home.path().join("python").to_str().unwrap()),
        "{after}"
    );

    // ENGRAM_PYTHON still wins.
    let out = cli_command(home.path())
        .env("ENGRAM_PYTHON", "python3")
        .args(["python", "status", "--json"])
        .output()
        .unwrap();
    let chosen: Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    assert_eq!(chosen["program"], "python3");
}
