//! What Engram keeps of a Letta agent without running it: the agent's file extras.

use super::{parts::AgentIn, parts::Ctx, tools::user_tool};
use engram_core::ToolRule;
use serde_json::{Map, Value, json};

/// What Engram keeps of a Letta agent without running it (see [`engram_store_api::EXTRAS_SETTING_PREFIX`]).
/// Secrets and tool environment variables are left out on purpose.
pub(super) fn letta_extras(ctx: &mut Ctx<'_>, a: &AgentIn<'_>, groups: &[Value]) -> Value {
    let builtin = ctx.opts.builtin_tools;
    let custom: Vec<Value> = a
        .tools
        .iter()
        .filter(|t| {
            !builtin.contains(&t.name.as_str())
                && user_tool(t, ctx.opts, a.tool_rules, a.ext.is_some()).is_none()
        })
        .map(|t| {
            let mut t = (*t).clone();
            t.id = None;
            serde_json::to_value(t).unwrap_or(Value::Null)
        })
        .collect();
    // Tools that do not run are reported per agent as inactive (see `sections`).
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
