//! Context compilation: core memory and metadata rendered into the system message, in the
//! layout Letta's agents and agent files use (DESIGN.md §3), so imported agents see what they
//! were trained on.

use engram_core::run::format_time;
use engram_core::{Block, Timestamp};
use std::fmt::Write;

/// The placeholder in an agent's instructions that compiled memory replaces.
pub const CORE_MEMORY_PLACEHOLDER: &str = "{CORE_MEMORY}";

/// Renders the blocks as the `<memory_blocks>` section. Depends only on the blocks, so it is
/// also the key that decides whether the cached system message is still valid.
pub fn memory_section(blocks: &[Block]) -> String {
    let mut out = String::from(
        "<memory_blocks>\nThe following memory blocks are currently engaged in your core memory unit:\n",
    );
    for block in blocks {
        let label = &block.label;
        let _ = write!(
            out,
            "\n<{label}>\n<description>\n{}\n</description>\n<metadata>\n{}- chars_current={}\n- chars_limit={}\n</metadata>\n<value>\n{}\n</value>\n</{label}>\n",
            block.description,
            if block.read_only {
                "- read_only=true\n"
            } else {
                ""
            },
            block.chars(),
            block.limit,
            block.value,
        );
    }
    out.push_str("</memory_blocks>");
    out
}

/// Closed files listed by name in the files section; more are counted, not named (a folder
/// of thousands of files must not fill the window with names).
pub const LISTED_CLOSED_FILES: usize = 50;

/// Renders the `<files>` section: the attached folders (with their instructions), each open
/// file's window of numbered lines, and the closed files by name (at most
/// [`LISTED_CLOSED_FILES`]). Empty when no folder is attached, so agents without folders
/// compile as before. `folders` are `(name, instructions)`.
pub fn files_section(
    folders: &[(String, String)],
    files: &[engram_core::AgentFile],
    windows: &[engram_store::FileWindow],
) -> String {
    if folders.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<files>\nFiles of the folders attached to you. An open file shows a window of its \
         numbered lines below; use open_files to open or move a window, grep_files and \
         semantic_search_files to search every file.\n",
    );
    for (name, instructions) in folders {
        let _ = write!(out, "\n<folder name=\"{name}\">\n");
        if !instructions.trim().is_empty() {
            let _ = write!(
                out,
                "<instructions>\n{}\n</instructions>\n",
                instructions.trim()
            );
        }
        let prefix = format!("{name}/");
        for w in windows.iter().filter(|w| w.name.starts_with(&prefix)) {
            let _ = write!(
                out,
                "<file name=\"{}\" open=\"true\" lines=\"{}-{} of {}\">\n{}\n</file>\n",
                w.name, w.offset, w.last, w.lines, w.text
            );
        }
        let closed: Vec<&str> = files
            .iter()
            .filter(|f| !f.is_open && f.file_name.starts_with(&prefix))
            .map(|f| f.file_name.as_str())
            .collect();
        if !closed.is_empty() {
            let shown = &closed[..closed.len().min(LISTED_CLOSED_FILES)];
            let _ = write!(out, "<closed_files>\n{}", shown.join("\n"));
            if closed.len() > shown.len() {
                let _ = write!(out, "\n… and {} more", closed.len() - shown.len());
            }
            out.push_str("\n</closed_files>\n");
        }
        out.push_str("</folder>\n");
    }
    out.push_str("</files>");
    out
}

/// Renders the `<memory_metadata>` section. `recall_count` counts messages outside the
/// context window; `archival_count` counts passages.
pub fn metadata_section(now: Timestamp, recall_count: u64, archival_count: u64) -> String {
    format!(
        "<memory_metadata>\n- The current time is: {}\n- {recall_count} previous messages between you and the user are stored in recall memory (use tools to access them)\n- {archival_count} total memories you created are stored in archival memory (use tools to access them)\n</memory_metadata>",
        format_time(now),
    )
}

/// Builds the system message: `instructions` with the memory (blocks, blank line, metadata) in
/// place of `{CORE_MEMORY}`, or appended after a blank line when there is no placeholder.
pub fn system_message(instructions: &str, memory: &str, metadata: &str) -> String {
    let compiled = format!("{memory}\n\n{metadata}");
    if instructions.contains(CORE_MEMORY_PLACEHOLDER) {
        instructions.replacen(CORE_MEMORY_PLACEHOLDER, &compiled, 1)
    } else if instructions.trim().is_empty() {
        compiled
    } else {
        format!("{}\n\n{compiled}", instructions.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::BlockId;

    fn block(label: &str, value: &str, read_only: bool) -> Block {
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-21T14:00:00Z")
            .unwrap()
            .to_utc();
        Block {
            id: BlockId::from(format!("block-{label}")),
            label: label.into(),
            value: value.into(),
            limit: 5000,
            description: engram_core::memory::default_description(label),
            read_only,
            version: 1,
            created_at: t,
            updated_at: t,
        }
    }

    #[test]
    fn compiled_system_message_snapshot() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T14:38:00Z")
            .unwrap()
            .to_utc();
        let blocks = [
            block("persona", "I am Sam, curious and kind.", false),
            block("human", "Name: Bob", false),
            block("policies", "Never share secrets.", true),
        ];
        let memory = memory_section(&blocks);
        let meta = metadata_section(now, 12, 3);
        insta::assert_snapshot!(system_message(
            "Be helpful.\n\n{CORE_MEMORY}\n\nEnd.",
            &memory,
            &meta
        ));
    }

    #[test]
    fn memory_is_appended_without_placeholder() {
        let out = system_message(
            "Be brief.",
            "<memory_blocks>\n</memory_blocks>",
            "<memory_metadata>\n</memory_metadata>",
        );
        assert!(out.starts_with("Be brief.\n\n<memory_blocks>"));
        assert!(out.ends_with("</memory_metadata>"));
    }

    #[test]
    fn chars_are_counted_in_characters() {
        let memory = memory_section(&[block("human", "Zoë ☃", false)]);
        assert!(memory.contains("- chars_current=5\n"));
    }
}
