//! Generates the shell's permission manifest: one `allow-<command>` per app command, so the
//! capability file lists exactly what the window may call.

fn main() {
    let manifest = tauri_build::AppManifest::new().commands(engram_desktop_commands::ALL);
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest))
        .expect("tauri build script");
}

#[path = "src/command_names.rs"]
mod engram_desktop_commands;
