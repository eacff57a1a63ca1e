//! What an import keeps of a Letta agent beyond the rows Engram runs: custom tools that become
//! user tools, and the agent's file extras (tools Engram cannot run, tool rules, tags, model
//! settings as written, groups). Secrets and tool environment variables are never kept.

use super::{AgentIn, Ctx, ImportOptions};
use crate::model::ToolAf;
use engram_core::{DEFAULT_RETURN_CHAR_LIMIT, Tool, ToolId, ToolLanguage, ToolRule};
use serde_json::{Map, Value, json};

/// The file's tool as a runnable user tool: a non-built-in with Python source defining a
/// function of its name (Letta writes `source_type` `python` or `json` for those).
/// Tools under a `requires_approval` rule are run by the client in Letta (their source is a
/// stub), so they are not made runnable here.
pub(super) fn user_tool(t: &ToolAf, opts: &ImportOptions<'_>, rules: &[Value]) -> Option<Tool> {
    let client_side = rules
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
        available: true,
        unavailable_reason: None,
        created_at: opts.now,
        updated_at: opts.now,
    })
}

/// What Engram keeps of a Letta agent without running it (see [`engram_store::EXTRAS_SETTING_PREFIX`]).
/// Secrets and tool environment variables are left out on purpose.
pub(super) fn letta_extras(ctx: &mut Ctx<'_>, a: &AgentIn<'_>, groups: &[Value]) -> Value {
    let builtin = ctx.opts.builtin_tools;
    let custom: Vec<Value> = a
        .tools
        .iter()
        .filter(|t| {
            !builtin.contains(&t.name.as_str()) && user_tool(t, ctx.opts, a.tool_rules).is_none()
        })
        .map(|t| {
            let mut t = (*t).clone();
            t.id = None;
            serde_json::to_value(t).unwrap_or(Value::Null)
        })
        .collect();
    let name = a.name.unwrap_or("the agent");
    let unenforced = a
        .tool_rules
        .iter()
        .filter(|r| {
            serde_json::from_value::<ToolRule>((*r).clone()).map_or(true, |r| !r.is_enforced())
        })
        .count();
    if unenforced > 0 {
        ctx.warnings.push(format!(
            "{name}: {unenforced} tool rule(s) of types Engram does not enforce were kept with the agent"
        ));
    }
    let has_secret = |key: &str| {
        a.extra.get(key).is_some_and(|v| match v {
            Value::Null => false,
            Value::Array(x) => !x.is_empty(),
            Value::Object(x) => !x.is_empty(),
            _ => true,
        })
    };
    if has_secret("secrets") || has_secret("tool_exec_environment_variables") {
        ctx.warnings.push(format!(
            "{name}: secrets and tool environment variables in the file were not imported"
        ));
    }
    let mut extras = Map::new();
    extras.insert(
        "source".into(),
        json!({
            "format": a.format,
            "agent_type": a.agent_type,
            "letta_version": a.extra.get("version"),
        }),
    );
    extras.insert("tools".into(), Value::Array(custom));
    extras.insert("tags".into(), json!(a.tags));
    if let Some(llm) = a.llm {
        extras.insert("llm_config".into(), json!(llm));
    }
    if let Some(e) = a.embedding {
        extras.insert("embedding_config".into(), json!(e));
    }
    if !groups.is_empty() {
        extras.insert("groups".into(), Value::Array(groups.to_vec()));
    }
    Value::Object(extras)
}
