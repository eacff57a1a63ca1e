//! The file's tools with code: which become user tools (stored untrusted, see the module
//! above) and how they are shaped.

use super::parts::ImportOptions;
use crate::model::ToolAf;
use engram_core::{DEFAULT_RETURN_CHAR_LIMIT, Tool, ToolId, ToolLanguage, ToolOrigin};
use serde_json::{Value, json};

/// The file's tool as a runnable user tool: a non-built-in with Python source defining a
/// function of its name (Letta writes `source_type` `python` or `json` for those).
/// In a Letta file, tools under a `requires_approval` rule are run by the client (their source
/// is a stub), so they are not made runnable here. A file Engram wrote (`engram_file`) means
/// the rule as Engram does: the tool runs here once a person approves the call, so its code
/// is kept (untrusted, as any imported code).
pub(super) fn user_tool(
    t: &ToolAf,
    opts: &ImportOptions<'_>,
    rules: &[Value],
    engram_file: bool,
) -> Option<Tool> {
    let client_side = !engram_file
        && rules
            .iter()
            .any(|r| r["type"] == "requires_approval" && r["tool_name"] == t.name.as_str());
    if client_side
        || opts.builtin_tools.contains(&t.name.as_str())
        || !engram_core::tool::valid_tool_name(&t.name)
        || !matches!(
            t.source_type.as_deref(),
            None | Some("python") | Some("json")
        )
        || !matches!(t.tool_type.as_deref(), None | Some("custom"))
    {
        return None;
    }
    let source = t.source_code.as_deref()?;
    if !source.contains(&format!("def {}(", t.name)) {
        return None;
    }
    let description = t
        .description
        .clone()
        .or_else(|| {
            t.json_schema
                .as_ref()
                .and_then(|s| s["description"].as_str().map(str::to_owned))
        })
        .unwrap_or_default();
    let mut json_schema = t
        .json_schema
        .clone()
        .filter(Value::is_object)
        .unwrap_or_else(
            || json!({"parameters": {"type": "object", "properties": {}, "required": []}}),
        );
    json_schema["name"] = json!(t.name);
    json_schema["description"] = json!(description);
    let return_char_limit = t
        .extra
        .get("return_char_limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_RETURN_CHAR_LIMIT, |n| n as usize);
    Some(Tool {
        id: ToolId::new(),
        name: t.name.clone(),
        description,
        json_schema,
        source_code: Some(source.to_owned()),
        language: ToolLanguage::Python,
        return_char_limit,
        tags: t.tags.clone(),
        // Network and unsandboxed runs are the user's to grant, never a file's.
        network: false,
        allow_unsandboxed: false,
        available: true,
        unavailable_reason: None,
        origin: ToolOrigin::Unknown,
        // Code from a file never runs before the user trusts it.
        trusted_hash: None,
        source_hash: None,
        trusted: false,
        mcp: None,
        created_at: opts.now,
        updated_at: opts.now,
    })
}
