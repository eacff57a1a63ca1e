//! Generates the shell's permission manifest: one `allow-<command>` per app command of the one
//! list (`engram_core::commands`), so the capability file lists exactly what the window may
//! call.

fn main() {
    println!("cargo:rerun-if-changed=../crates/core/src/commands.rs");
    let names: Vec<&'static str> = commands::APP_COMMANDS.iter().map(|c| c.name).collect();
    let manifest = tauri_build::AppManifest::new().commands(names.leak());
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest))
        .expect("tauri build script");
}

// The list is plain data with no dependencies, shared with the engine as source.
#[allow(dead_code)]
#[path = "../crates/core/src/commands.rs"]
mod commands;
