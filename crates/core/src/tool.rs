//! Tools as data: built-in and user (Python) tools, and the rules that constrain when the loop
//! may call them.
//!
//! Shapes follow Letta's `Tool` and agent-file `tool_rules` so `letta-client` and `.af` files
//! round-trip: a tool's `json_schema` is OpenAI's function object `{name, description,
//! parameters}`; rules are keyed by tool name and tagged by `type`.

use crate::{Timestamp, ToolId};
use serde::{Deserialize, Serialize};

/// Default cap on the characters of a tool result the model sees (Letta's default is 50,000
/// characters too; results are cut, with a note, past it).
pub const DEFAULT_RETURN_CHAR_LIMIT: usize = 50_000;

/// What a tool is written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum ToolLanguage {
    /// A Python function run by Engram's Python runner (Letta's `source_type: "python"`).
    #[default]
    Python,
    /// Implemented inside Engram (the memory tools, `send_message`).
    Builtin,
    /// Offered by an MCP server (see [`Tool::mcp`]); the server runs it.
    Mcp,
}

impl ToolLanguage {
    /// `"python"`, `"builtin"` or `"mcp"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::Builtin => "builtin",
            Self::Mcp => "mcp",
        }
    }
}

/// A tool the model can be offered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct Tool {
    /// `tool-<uuid>` for user tools; `tool-builtin-<name>` for built-ins (never stored).
    pub id: ToolId,
    /// The function name the model calls; unique among all tools.
    pub name: String,
    /// What the tool does, for the model and for people.
    pub description: String,
    /// OpenAI's function object: `{"name", "description", "parameters": <JSON Schema>}`.
    /// Classic-loop agents get `request_heartbeat` added when the schema is sent.
    pub json_schema: serde_json::Value,
    /// The Python source (one or more definitions); `None` for built-ins.
    pub source_code: Option<String>,
    /// What the tool is written in.
    pub language: ToolLanguage,
    /// Results longer than this many **characters** are cut before the model sees them.
    pub return_char_limit: usize,
    /// Free labels for people.
    pub tags: Vec<String>,
    /// Whether the tool may use the network when it runs (the host's network namespace).
    /// Off by default: a tool then reaches nothing outside its sandbox but Engram's own
    /// local API, when the run bridges it. Set by the user per tool, never by an import.
    #[serde(default)]
    pub network: bool,
    /// Whether the tool may run without a sandbox where none is available (it then has the
    /// user account's full access). Off by default: such a call fails, saying why.
    #[serde(default)]
    pub allow_unsandboxed: bool,
    /// Whether the tool can run here (computed when read, never stored): a Python tool is
    /// unavailable when no usable `python3` was found, or when no sandbox is available and
    /// the tool is not allowed to run unsandboxed.
    pub available: bool,
    /// Why it cannot run, when `available` is false (e.g. "`python3` was not found on PATH…").
    pub unavailable_reason: Option<String>,
    /// Where the tool came from (built-ins: `user`, they are Engram's own).
    #[serde(default)]
    pub origin: crate::ToolOrigin,
    /// SHA-256 (64 hex digits, see [`crate::source_hash`]) of the source the user trusted;
    /// `None` until trusted. Tools the user writes are trusted as written.
    #[serde(default)]
    pub trusted_hash: Option<String>,
    /// SHA-256 of the current `source_code` (computed when read; `None` for built-ins).
    #[serde(default)]
    pub source_hash: Option<String>,
    /// Whether the tool may run: built-in, or `trusted_hash` equals the hash of the current
    /// source (computed when read; see [`Tool::is_trusted`], which the loop checks).
    #[serde(default)]
    pub trusted: bool,
    /// For a tool of an MCP server: which server and which of its tools; `None` otherwise.
    #[serde(default)]
    pub mcp: Option<crate::McpToolSource>,
    /// When the tool was created (built-ins: the Unix epoch).
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl Tool {
    /// Whether this tool may run: a built-in or MCP tool, or a tool whose current source hashes to the
    /// hash the user trusted. Computed from the source itself, so a changed source is
    /// untrusted again whatever `trusted` says.
    pub fn is_trusted(&self) -> bool {
        match (&self.source_code, &self.trusted_hash) {
            // Built-ins are Engram's; an MCP tool runs on a server the user added or accepted
            // (the server's `active` flag is its trust, checked when it is called).
            _ if matches!(self.language, ToolLanguage::Builtin | ToolLanguage::Mcp) => true,
            (Some(src), Some(hash)) => crate::source_hash(src) == *hash,
            _ => false,
        }
    }

    /// Fills the computed `source_hash` and `trusted` from the stored fields.
    pub fn with_trust_computed(mut self) -> Self {
        self.source_hash = self.source_code.as_deref().map(crate::source_hash);
        self.trusted = self.is_trusted();
        self
    }
}

/// What it takes to create or replace (upsert by name) a user tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export, optional_fields)]
pub struct NewTool {
    /// The Python source; its function's signature and docstring give the schema.
    pub source_code: String,
    /// The function to expose; `None` takes the source's only public function, or the one the
    /// explicit schema names.
    #[serde(default)]
    pub name: Option<String>,
    /// Overrides the docstring's description.
    #[serde(default)]
    pub description: Option<String>,
    /// An explicit schema (OpenAI function object); overrides the generated one.
    #[serde(default)]
    pub json_schema: Option<serde_json::Value>,
    /// Characters of a result the model sees (default [`DEFAULT_RETURN_CHAR_LIMIT`]).
    #[serde(default)]
    pub return_char_limit: Option<usize>,
    /// Free labels.
    #[serde(default)]
    #[ts(as = "Option<Vec<String>>", optional)]
    pub tags: Vec<String>,
    /// See [`Tool::network`]; `None` keeps the setting of the tool being replaced (off for a
    /// new tool).
    #[serde(default)]
    pub network: Option<bool>,
    /// See [`Tool::allow_unsandboxed`]; `None` keeps the setting of the tool being replaced
    /// (off for a new tool).
    #[serde(default)]
    pub allow_unsandboxed: Option<bool>,
}

/// A rule constraining when the loop may call a tool, as Letta agent files write them
/// (`agent.tool_rules`: `{"type": "exit_loop", "tool_name": "send_message"}` …).
///
/// Letta's solver counts over the whole agent step (one user message, many model calls), which
/// Engram calls a *run*; "per step" below means per run, as in Letta.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolRule {
    /// Terminal: after this tool runs, the run ends (stop reason `tool_rule`).
    ExitLoop {
        /// The tool.
        tool_name: String,
    },
    /// After this tool runs, the loop takes another step (classic loop: even without a
    /// heartbeat).
    ContinueLoop {
        /// The tool.
        tool_name: String,
    },
    /// The first call of a run must be this tool; it is the only tool offered on the first step.
    RunFirst {
        /// The tool.
        tool_name: String,
    },
    /// After this tool runs, the next call must be one of `children`.
    ConstrainChildTools {
        /// The parent tool.
        tool_name: String,
        /// The tools allowed next.
        children: Vec<String>,
    },
    /// The tool may run at most `max_count_limit` times per run.
    MaxCountPerStep {
        /// The tool.
        tool_name: String,
        /// Calls allowed per run.
        max_count_limit: u32,
    },
    /// Ask before running: when the model calls this tool, the run pauses (stop reason
    /// `requires_approval`) until a person approves the call (it runs) or denies it (the
    /// model gets a `Failed` result carrying the reason). Letta's `requires_approval` rule.
    RequiresApproval {
        /// The tool (built-in, Python or MCP: keyed by name, whatever runs it).
        tool_name: String,
    },
    /// A rule type Engram does not enforce (`conditional`, `parent_last_tool`, …), kept as
    /// read so exports give it back.
    #[serde(untagged)]
    Other(serde_json::Value),
}

impl ToolRule {
    /// Renames every tool name the rule mentions that `map` gives a new name for, in one pass
    /// (so `a→b` and `b→c` applied together never turn `a` into `c`). Rules Engram does not
    /// enforce (`Other`) are left as they are.
    pub fn rename_tools(&mut self, map: impl Fn(&str) -> Option<String>) {
        let apply = |name: &mut String| {
            if let Some(new) = map(name) {
                *name = new;
            }
        };
        match self {
            Self::ExitLoop { tool_name }
            | Self::ContinueLoop { tool_name }
            | Self::RunFirst { tool_name }
            | Self::RequiresApproval { tool_name }
            | Self::MaxCountPerStep { tool_name, .. } => apply(tool_name),
            Self::ConstrainChildTools {
                tool_name,
                children,
            } => {
                apply(tool_name);
                children.iter_mut().for_each(apply);
            }
            Self::Other(_) => {}
        }
    }

    /// The tool the rule is about, when it names one.
    pub fn tool_name(&self) -> Option<&str> {
        match self {
            Self::ExitLoop { tool_name }
            | Self::ContinueLoop { tool_name }
            | Self::RunFirst { tool_name }
            | Self::RequiresApproval { tool_name }
            | Self::ConstrainChildTools { tool_name, .. }
            | Self::MaxCountPerStep { tool_name, .. } => Some(tool_name),
            Self::Other(v) => v.get("tool_name").and_then(|n| n.as_str()),
        }
    }

    /// Whether the loop enforces this rule.
    pub fn is_enforced(&self) -> bool {
        !matches!(self, Self::Other(_))
    }

    /// Whether `rules` say a person must approve each call of `tool` before it runs.
    pub fn requires_approval(rules: &[ToolRule], tool: &str) -> bool {
        rules
            .iter()
            .any(|r| matches!(r, Self::RequiresApproval { tool_name } if tool_name == tool))
    }
}

/// Whether `name` can be a tool name: a Python identifier (letters, digits, `_`, not starting
/// with a digit), 1–64 characters, as providers require of function names.
pub fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Rewrites an agent's tool list `names` and `rules` after the tool `old` was renamed to `new`,
/// or deleted (`new` is `None`: the name goes, with the rules about it, and from the children
/// a rule allows after another tool). Returns whether anything changed. The rule both stores
/// apply, in the transaction that renames or deletes the tool.
pub fn rewrite_tool_refs(
    names: &mut Vec<String>,
    rules: &mut Vec<ToolRule>,
    old: &str,
    new: Option<&str>,
) -> bool {
    let in_children = |r: &ToolRule| matches!(r, ToolRule::ConstrainChildTools { children, .. } if children.iter().any(|c| c == old));
    if !names.iter().any(|n| n == old)
        && !rules
            .iter()
            .any(|r| r.tool_name() == Some(old) || in_children(r))
    {
        return false;
    }
    match new {
        Some(new) => {
            names
                .iter_mut()
                .filter(|n| *n == old)
                .for_each(|n| *n = new.to_owned());
            rules
                .iter_mut()
                .for_each(|r| r.rename_tools(|n| (n == old).then(|| new.to_owned())));
        }
        None => {
            names.retain(|n| n != old);
            rules.retain(|r| r.tool_name() != Some(old));
            for r in rules.iter_mut() {
                if let ToolRule::ConstrainChildTools { children, .. } = r {
                    children.retain(|c| c != old);
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_read_letta_wire_names_and_keep_unknown_ones() {
        let rules: Vec<ToolRule> = serde_json::from_value(json!([
            {"tool_name": "send_message", "type": "exit_loop", "prompt_template": null},
            {"tool_name": "a", "type": "continue_loop"},
            {"tool_name": "a", "type": "run_first"},
            {"tool_name": "a", "type": "constrain_child_tools", "children": ["b"]},
            {"tool_name": "a", "type": "max_count_per_step", "max_count_limit": 2},
            {"tool_name": "Bash", "type": "requires_approval", "prompt_template": null}
        ]))
        .unwrap();
        assert_eq!(
            rules[0],
            ToolRule::ExitLoop {
                tool_name: "send_message".into()
            }
        );
        assert_eq!(
            rules[4],
            ToolRule::MaxCountPerStep {
                tool_name: "a".into(),
                max_count_limit: 2
            }
        );
        assert_eq!(
            rules[5],
            ToolRule::RequiresApproval {
                tool_name: "Bash".into()
            }
        );
        assert_eq!(rules[5].tool_name(), Some("Bash"));
        assert!(rules[5].is_enforced());
        assert!(ToolRule::requires_approval(&rules, "Bash"));
        assert!(!ToolRule::requires_approval(&rules, "a"));
        assert_eq!(
            serde_json::to_value(&rules[5]).unwrap(),
            json!({"type": "requires_approval", "tool_name": "Bash"})
        );
        let other: ToolRule =
            serde_json::from_value(json!({"type": "conditional", "tool_name": "a"})).unwrap();
        assert!(matches!(&other, ToolRule::Other(v) if v["type"] == "conditional"));
        assert!(!other.is_enforced());
        let back = serde_json::to_value(&rules[3]).unwrap();
        assert_eq!(
            back,
            json!({"type": "constrain_child_tools", "tool_name": "a", "children": ["b"]})
        );
    }

    #[test]
    fn tool_names_are_identifiers() {
        assert!(valid_tool_name("task_queue_push"));
        assert!(!valid_tool_name("1abc"));
        assert!(!valid_tool_name("two words"));
        assert!(!valid_tool_name(""));
    }

    #[test]
    fn a_renamed_or_deleted_tool_is_rewritten_wherever_a_rule_names_it() {
        let constrain = |children: &[&str]| ToolRule::ConstrainChildTools {
            tool_name: "plan".into(),
            children: children.iter().map(|c| (*c).to_owned()).collect(),
        };
        // Named only as a child of another tool's rule: still rewritten.
        let mut names = vec!["plan".to_owned()];
        let mut rules = vec![constrain(&["lookup", "send_message"])];
        assert!(rewrite_tool_refs(
            &mut names,
            &mut rules,
            "lookup",
            Some("find")
        ));
        assert_eq!(rules, [constrain(&["find", "send_message"])]);
        assert!(rewrite_tool_refs(&mut names, &mut rules, "find", None));
        assert_eq!(rules, [constrain(&["send_message"])]);
        assert_eq!(names, ["plan"]);
        // Not named anywhere: nothing to do.
        assert!(!rewrite_tool_refs(&mut names, &mut rules, "other", None));
        // Its own rules go with it.
        let mut rules = vec![
            ToolRule::RequiresApproval {
                tool_name: "plan".into(),
            },
            constrain(&["send_message"]),
        ];
        assert!(rewrite_tool_refs(&mut names, &mut rules, "plan", None));
        assert!(names.is_empty() && rules.is_empty());
    }
}
