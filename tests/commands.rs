//! Each UI command is defined once (Engram issue #10): `engram_core::commands::APP_COMMANDS`.
//! The shell's permissions are generated from it (`src-tauri/build.rs`), and so are the UI's
//! command names (`ui/src/lib/bindings/commands.ts`, which the `Backend` types check against);
//! what is written by hand is checked here against the list, so a command added, renamed or
//! dropped in one place fails until every transport agrees: the Tauri handler list, the
//! window's capability file and the `/app` routes. (`src-tauri/tests/ipc.rs` also invokes
//! every listed command through the real handler and permission checks.)

use engram_core::commands::{APP_COMMANDS, names, typescript};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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
fn the_tauri_handler_list_registers_every_listed_command() {
    let lib = read("src-tauri/src/lib.rs");
    let start = lib
        .find("generate_handler![")
        .expect("the shell registers its commands with generate_handler!");
    let body = &lib[start + "generate_handler![".len()..];
    let body = &body[..body.find(']').expect("the handler list ends")];
    let registered = body
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.rsplit("::").next().unwrap_or(p).to_owned())
        .collect();
    assert_same(
        "src-tauri/src/lib.rs generate_handler!",
        registered,
        listed(),
    );
}

#[test]
fn the_capability_file_allows_exactly_the_listed_commands() {
    let file: serde_json::Value =
        serde_json::from_str(&read("src-tauri/capabilities/default.json")).expect("JSON");
    let allowed = file["permissions"]
        .as_array()
        .expect("permissions")
        .iter()
        .filter_map(|p| p.as_str())
        // Engram's own commands: plugin and core permissions carry a `prefix:`.
        .filter(|p| !p.contains(':'))
        .map(|p| {
            p.strip_prefix("allow-")
                .unwrap_or_else(|| panic!("{p}: only allow-<command> permissions are granted"))
                .replace('-', "_")
        })
        .collect();
    assert_same("src-tauri/capabilities/default.json", allowed, listed());
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_http_transport_routes_every_listed_command_at_app() {
    let mut files = Vec::new();
    rust_files(&root().join("crates/server/src"), &mut files);
    let mut routed = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source");
        for piece in text.split(".route(\"/app/").skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            // `/app/notices` is the app-wide notice stream (an event, not a command);
            // `/app/` serves the UI itself.
            if !name.is_empty() && name != "notices" {
                routed.insert(name);
            }
        }
    }
    let wanted = APP_COMMANDS
        .iter()
        .filter(|c| c.http)
        .map(|c| c.name.to_owned())
        .collect();
    assert_same("the /app routes of crates/server", routed, wanted);
}

#[test]
fn the_ui_command_names_are_generated_from_the_list() {
    assert_eq!(
        read("ui/src/lib/bindings/commands.ts"),
        typescript(),
        "ui/src/lib/bindings/commands.ts is stale: run `cargo test -p engram-core \
         export_bindings` and commit it"
    );
}
