//! Exports as files for the window: one agent or all, as an Agent File (`.af`, imports back),
//! Markdown (for people) or the JSON report (read-only), with a file name to offer; and the
//! file-system side of the desktop shell's save and open dialogs (the shell picks the path,
//! the service writes or reads it).

use crate::ImportReport;
use crate::rooms::AgentFiles;
use engram_core::{AgentId, Error, Result};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What to export as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ExportFormat {
    /// Agent File v2 with Engram's extension: imports back losslessly (`.af`).
    Af,
    /// Markdown for people: blocks, passages, conversation (`.md`).
    Markdown,
    /// Engram's JSON report for scripts; read-only, not importable (`.json`).
    Json,
}

impl ExportFormat {
    fn extension(self) -> &'static str {
        match self {
            Self::Af => "af",
            Self::Markdown => "md",
            Self::Json => "report.json",
        }
    }
}

/// An export ready to save: the file name to offer and its UTF-8 contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ExportFile {
    /// Suggested file name (`Sam.af`, `engram-agents-2026-05-01.md`), safe on every platform.
    pub file_name: String,
    /// The file's contents.
    pub contents: String,
}

/// Letters, digits, `-`, `_` and `.` kept; runs of anything else become one `_`.
fn safe_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches(|c| c == '_' || c == '.').to_owned();
    if out.is_empty() { "agent".into() } else { out }
}

impl AgentFiles<'_> {
    /// Exports `agents` (every agent when `None`) as `format`, with a file name to offer: the
    /// agent's name for one agent, `engram-agents-<date>` for several.
    /// Errors: `not_found` for an unknown agent; `invalid_input` when there is no agent.
    pub async fn export_all(
        self,
        agents: Option<&[AgentId]>,
        format: ExportFormat,
    ) -> Result<ExportFile> {
        let ids: Vec<AgentId> = match agents {
            Some(ids) => ids.to_vec(),
            None => self
                .engram
                .backend
                .list_agents()
                .await?
                .into_iter()
                .map(|a| a.id)
                .collect(),
        };
        if ids.is_empty() {
            return Err(Error::invalid("there is no agent to export"));
        }
        let stem = match ids.as_slice() {
            [one] => safe_name(&self.engram.backend.get_agent(one).await?.name),
            _ => format!("engram-agents-{}", chrono::Utc::now().format("%Y-%m-%d")),
        };
        let bytes = match format {
            ExportFormat::Af => self.export(&ids).await?,
            ExportFormat::Json => self.export_json(&ids).await?,
            ExportFormat::Markdown => {
                let mut parts = Vec::with_capacity(ids.len());
                for id in &ids {
                    parts.push(self.export_markdown(id).await?);
                }
                parts.join("\n---\n\n").into_bytes()
            }
        };
        let contents = String::from_utf8(bytes)
            .map_err(|e| Error::Internal(format!("the export is not UTF-8: {e}")))?;
        Ok(ExportFile {
            file_name: format!("{stem}.{}", format.extension()),
            contents,
        })
    }

    /// Writes an export to `path` (chosen by the user in a save dialog) and returns the path.
    /// Errors: as [`AgentFiles::export_all`]; `invalid_input` naming the path when it cannot
    /// be written.
    pub async fn export_all_to(
        self,
        agents: Option<&[AgentId]>,
        format: ExportFormat,
        path: &Path,
    ) -> Result<PathBuf> {
        let file = self.export_all(agents, format).await?;
        std::fs::write(path, file.contents)
            .map_err(|e| Error::invalid(format!("cannot write {}: {e}", path.display())))?;
        Ok(path.to_owned())
    }

    /// Imports the agent file at `path` (chosen by the user in an open dialog), named by its
    /// file name in the report. Errors: `invalid_input` naming the file when it cannot be
    /// read, is over 64 MiB, or is not an agent file (with the JSON path of the problem).
    pub async fn import_at(self, path: &Path) -> Result<ImportReport> {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let limit = engram_agentfile::MAX_FILE_BYTES;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
            .map_err(|e| Error::invalid(format!("cannot read {name}: {e}")))?;
        if bytes.len() as u64 > limit {
            return Err(Error::invalid(format!(
                "{name}: agent files larger than {limit} bytes (64 MiB) are refused"
            )));
        }
        self.import_named(&bytes, &name).await.map_err(|e| match e {
            Error::Invalid(m) => Error::Invalid(format!("{name}: {m}")),
            e => e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::safe_name;

    #[test]
    fn file_names_are_safe() {
        assert_eq!(safe_name("Travel planner 1"), "Travel_planner_1");
        assert_eq!(safe_name("../../etc/passwd"), "etc_passwd");
        assert_eq!(safe_name("  "), "agent");
        assert_eq!(safe_name("Zoë: notes"), "Zoë_notes");
    }
}
