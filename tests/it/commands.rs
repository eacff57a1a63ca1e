//! Each UI command is defined once: its arguments, result and answer in
//! `engram_service::commands`, whose names and kinds equal `engram_core::commands::
//! APP_COMMANDS` (plain data the shell's build script turns into one permission each and the
//! set `app-commands` the capability file grants; the service does not compile unless the
//! two lists agree). The `/app` routes and the shell's invoke handler dispatch by name over the
//! service's list, and the UI's `Commands` types are generated from it
//! (`ui/src/lib/bindings/commands.ts`). The rest is checked here, so a command added, renamed
//! or dropped in one place fails until every transport agrees: the window's capability, the
//! shell's hand-written commands, and the UI's types.
//! (`src-tauri/tests/ipc.rs` invokes every listed command through the shell's real handler
//! and permission checks; `tests/it/app_api.rs` posts every one to `engram serve`.)

use engram_core::commands::{APP_COMMANDS, names};
use engram_service::commands::{list, typescript};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn listed() -> BTreeSet<String> {
    names().map(str::to_owned).collect()
}

/// Says what is missing on each side.
fn assert_same(what: &str, found: BTreeSet<String>, wanted: BTreeSet<String>) {
    let missing: Vec<_> = wanted.difference(&found).collect();
    let extra: Vec<_> = found.difference(&wanted).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what} disagrees with engram_core::commands::APP_COMMANDS: missing {missing:?}, \
         not listed {extra:?}"
    );
}

#[test]
fn the_shell_answers_by_hand_exactly_the_desktop_adapters() {
    let lib = read("src-tauri/src/commands.rs");
    let start = lib
        .find("generate_handler![")
        .expect("the shell registers its own commands with generate_handler!");
    let body = &lib[start + "generate_handler![".len()..];
    let body = &body[..body.find(']').expect("the handler list ends")];
    let registered = body
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.rsplit("::").next().unwrap_or(p).to_owned())
        .collect();
    // Every other command reaches the service's dispatch; these need the shell itself.
    let adapters = list()
        .iter()
        .filter(|c| c.is_adapter())
        .map(|c| c.name.to_owned())
        .collect();
    assert_same(
        "src-tauri/src/commands.rs generate_handler!",
        registered,
        adapters,
    );
}

#[test]
fn the_capability_file_allows_exactly_the_listed_commands() {
    let file: serde_json::Value =
        serde_json::from_str(&read("src-tauri/capabilities/default.json")).expect("JSON");
    let own: Vec<&str> = file["permissions"]
        .as_array()
        .expect("permissions")
        .iter()
        .filter_map(|p| p.as_str())
        // Engram's own: plugin and core permissions carry a `prefix:`.
        .filter(|p| !p.contains(':'))
        .collect();
    assert_eq!(
        own,
        ["app-commands"],
        "the window gets Engram's commands through the generated set only"
    );
    // The set the shell's build script writes from the list (committed, as tauri-build's own
    // permission files are).
    let set = read("src-tauri/permissions/app-commands.toml");
    let allowed = set
        .lines()
        .filter_map(|l| l.trim().strip_prefix("\"allow-")?.strip_suffix("\","))
        .map(|p| p.replace('-', "_"))
        .collect();
    assert_same("src-tauri/permissions/app-commands.toml", allowed, listed());
}

#[test]
fn the_http_transport_answers_by_hand_only_attach_run() {
    // Every other `/app` command goes through the one generic route over the service's list.
    let chat = read("crates/server/src/app_chat.rs");
    let routed: BTreeSet<String> = chat
        .split(".route(\"/app/")
        .skip(1)
        .map(|piece| {
            piece
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect()
        })
        .collect();
    let wanted = list()
        .iter()
        .filter(|c| c.http && c.is_adapter())
        .map(|c| c.name.to_owned())
        .collect();
    assert_same("crates/server/src/app_chat.rs", routed, wanted);
    assert!(
        APP_COMMANDS
            .iter()
            .any(|c| c.name == "attach_run" && c.http)
    );
}

#[test]
fn the_ui_command_types_are_generated_from_the_list() {
    assert_eq!(
        read("ui/src/lib/bindings/commands.ts"),
        typescript(),
        "ui/src/lib/bindings/commands.ts is stale: run `cargo test -p engram-service \
         export_bindings` and commit it"
    );
}
