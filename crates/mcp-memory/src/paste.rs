//! `--print-config`: the block a client reads to launch Engram's memory server over stdio, in
//! the shape each client expects (Claude Code/Desktop and Cursor read `mcpServers` JSON, Codex
//! reads `[mcp_servers.NAME]` TOML).

use serde_json::json;

/// The clients whose configuration can be printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasteFor {
    /// Claude Code (`.mcp.json`) and Claude Desktop (`claude_desktop_config.json`).
    Claude,
    /// Cursor (`~/.cursor/mcp.json`).
    Cursor,
    /// OpenAI Codex CLI (`~/.codex/config.toml`).
    Codex,
}

/// The server's name in the clients' configuration.
pub const SERVER_NAME: &str = "engram-memory";

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The configuration block that launches `program args…` as the memory server.
pub fn config(for_client: PasteFor, program: &str, args: &[String]) -> String {
    match for_client {
        PasteFor::Claude | PasteFor::Cursor => {
            let block = json!({"mcpServers": {SERVER_NAME: {"command": program, "args": args}}});
            serde_json::to_string_pretty(&block).unwrap_or_default()
        }
        PasteFor::Codex => {
            let args: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
            format!(
                "[mcp_servers.{SERVER_NAME}]\ncommand = {}\nargs = [{}]\n",
                toml_string(program),
                args.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_toml_blocks() {
        let args = vec![
            "mcp".to_owned(),
            "serve".into(),
            "--agent".into(),
            "Sam \"the\" agent".into(),
        ];
        let claude: serde_json::Value =
            serde_json::from_str(&config(PasteFor::Claude, "/usr/bin/engram", &args)).unwrap();
        assert_eq!(
            claude["mcpServers"]["engram-memory"]["command"],
            "/usr/bin/engram"
        );
        assert_eq!(
            claude["mcpServers"]["engram-memory"]["args"][3],
            "Sam \"the\" agent"
        );
        let codex = config(PasteFor::Codex, "/usr/bin/engram", &args);
        assert!(
            codex.starts_with("[mcp_servers.engram-memory]\ncommand = \"/usr/bin/engram\"\n"),
            "{codex}"
        );
        assert!(codex.contains(r#""Sam \"the\" agent""#), "{codex}");
    }
}
