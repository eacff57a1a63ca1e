//! The block a client reads to launch Engram's memory server over stdio (`engram mcp serve
//! --print-config`, and the window's Settings), in the shape each client expects: Claude
//! Code/Desktop and Cursor read `mcpServers` JSON, Codex reads `[mcp_servers.NAME]` TOML.

use crate::rooms::MemoryServer;
use engram_core::Result;
use serde::Deserialize;
use serde_json::json;

/// The clients whose configuration can be printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
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

/// How a client launches the memory server: which agents, and with what access.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// Agents by id or name.
    pub agents: Vec<String>,
    /// `--read-only`.
    pub read_only: bool,
    /// `--read-only-agent` for each.
    pub read_only_agents: Vec<String>,
    /// `--client NAME`.
    pub client: Option<String>,
    /// `--approve-writes`: every write waits for the user's approval.
    pub approve_writes: bool,
    /// `--approve-writes-agent` for each.
    pub approve_agents: Vec<String>,
}

impl Launch {
    /// The arguments after the program: `mcp serve --agent …`.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["mcp".to_owned(), "serve".to_owned()];
        for a in &self.agents {
            args.extend(["--agent".to_owned(), a.clone()]);
        }
        if self.read_only {
            args.push("--read-only".into());
        }
        for a in &self.read_only_agents {
            args.extend(["--read-only-agent".to_owned(), a.clone()]);
        }
        if self.approve_writes {
            args.push("--approve-writes".into());
        }
        for a in &self.approve_agents {
            args.extend(["--approve-writes-agent".to_owned(), a.clone()]);
        }
        if let Some(name) = &self.client {
            args.extend(["--client".to_owned(), name.clone()]);
        }
        args
    }
}

/// The `engram` program a client should launch: this executable when it is the CLI, else the
/// `engram` beside it (the desktop app ships both), else `engram` on `PATH`.
pub fn engram_program() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "engram".into();
    };
    if exe.file_stem().is_some_and(|s| s == "engram") {
        return exe.display().to_string();
    }
    let beside = exe.with_file_name(format!("engram{}", std::env::consts::EXE_SUFFIX));
    if beside.is_file() {
        beside.display().to_string()
    } else {
        "engram".into()
    }
}

impl MemoryServer<'_> {
    /// The configuration block for `for_client` that launches `program` serving `launch`'s
    /// agents. Errors: `not_found`/`conflict` for an agent that does not resolve (checked now,
    /// so a pasted block does not fail later).
    pub fn config(self, for_client: PasteFor, program: &str, launch: &Launch) -> Result<String> {
        let access = super::Access {
            read_only: launch.read_only,
            read_only_agents: launch.read_only_agents.clone(),
            approve_writes: launch.approve_writes,
            approve_agents: launch.approve_agents.clone(),
        };
        self.client("check", &launch.agents, &access)?;
        Ok(config(for_client, program, &launch.args()))
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
