//! User tools: a call runs the tool's Python function through the [`PythonHost`]; the block
//! changes it made go through the same read-only and limit checks as the memory tools and are
//! queued as whole-value writes of the step, based on the block versions the tool read (a block
//! changed meanwhile makes the commit answer the call with a `Failed` result instead of losing
//! that change; one transaction with the tool result, history rows included).

use super::args::Args;
use super::context::ToolContext;
use super::memory;
use crate::tool_api::{TOOL_API_PORT, ToolScope};
use engram_core::Tool;
use engram_tools::{Bridge, ToolRun, ToolStatus};

/// Runs `tool` for call `call_id`. `Ok` is the (possibly cut) return value; `Err` is the line
/// the model reads: the exception, the timeout, the missing interpreter or the broken limit.
pub(super) async fn run(
    ctx: &mut ToolContext<'_>,
    tool: &Tool,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let Some(source) = tool.source_code.as_deref() else {
        return Err(format!("Tool '{}' has no source code to run.", tool.name));
    };
    if !tool.is_trusted() {
        return Err(awaits_approval(tool));
    }
    let runner = ctx
        .python
        .runner_async()
        .await
        .map_err(|u| format!("Tool '{}' cannot run: {}.", tool.name, u.reason))?;
    // The tool reads every block: give it the values as they are now, and base its writes on
    // those versions.
    memory::refresh_all(ctx).await;
    // A door into Engram's API for this call only (the tutorials' tools call the server back);
    // it closes when `door` drops at the end of the call.
    let door = match ctx.python.tool_api() {
        Some(api) => Some(
            api.open(ToolScope {
                agent_id: ctx.agent.id.clone(),
                tool_call_id: call_id.to_owned(),
            })
            .map_err(|e| format!("Tool '{}' cannot run: {e}.", tool.name))?,
        ),
        None => None,
    };
    let call = ToolRun {
        source: source.to_owned(),
        name: tool.name.clone(),
        arguments: args.without_heartbeat(),
        agent_id: ctx.agent.id.to_string(),
        agent_name: ctx.agent.name.clone(),
        blocks: ctx.blocks.clone(),
        network: tool.network,
        allow_unsandboxed: tool.allow_unsandboxed,
        bridge: door.as_ref().map(|d| Bridge {
            socket: d.socket.clone(),
            port: TOOL_API_PORT,
        }),
    };
    let outcome = runner.run(&call).await;
    drop(door);
    if outcome.status == ToolStatus::Failed {
        return Err(outcome.message);
    }
    // Check every change before applying any, so a failed call changes nothing.
    for (label, value) in &outcome.block_updates {
        memory::check_value(ctx, label, value)?;
    }
    for (label, value) in outcome.block_updates {
        memory::set_value(ctx, &label, value, call_id)?;
    }
    Ok(cut(outcome.message, tool.return_char_limit))
}

/// The result line of a call to a tool whose source the user has not trusted (code from an
/// agent file, or changed since it was trusted): it names where the code came from and how to
/// review it, for the model to pass on.
pub fn awaits_approval(tool: &Tool) -> String {
    format!(
        "Tool '{name}' did not run: its code (from {origin}) awaits the user's approval. \
         The user can review and trust it in Tools, or with `engram tool show {name}` and \
         `engram tool trust {name}`.",
        name = tool.name,
        origin = tool.origin.describe(),
    )
}

/// What one trial run of a user tool gave (nothing stored).
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// Returned or failed.
    pub status: engram_core::ToolStatus,
    /// The return value (cut to the tool's `return_char_limit`) or the error line.
    pub message: String,
    /// `(label, new value)` of each block the tool would change; empty when it failed.
    pub block_changes: Vec<(String, String)>,
}

/// Runs `tool` once on copies of `blocks`, storing nothing (the tool editor's "try it").
pub async fn trial(
    python: &std::sync::Arc<crate::PythonHost>,
    tool: &Tool,
    agent_id: &str,
    agent_name: &str,
    blocks: Vec<engram_core::Block>,
    arguments: serde_json::Value,
) -> Trial {
    use engram_core::ToolStatus as S;
    let failed = |message: String| Trial {
        status: S::Failed,
        message,
        block_changes: Vec::new(),
    };
    let Some(source) = tool.source_code.as_deref() else {
        return failed(format!(
            "Tool '{}' is built in; only user tools can be tried.",
            tool.name
        ));
    };
    if !tool.is_trusted() {
        return failed(awaits_approval(tool));
    }
    let runner = match python.runner_async().await {
        Ok(r) => r,
        Err(u) => return failed(format!("Tool '{}' cannot run: {}.", tool.name, u.reason)),
    };
    let call = ToolRun {
        source: source.to_owned(),
        name: tool.name.clone(),
        arguments,
        agent_id: agent_id.to_owned(),
        agent_name: agent_name.to_owned(),
        blocks,
        network: tool.network,
        allow_unsandboxed: tool.allow_unsandboxed,
        bridge: None,
    };
    let outcome = runner.run(&call).await;
    match outcome.status {
        ToolStatus::Failed => failed(outcome.message),
        ToolStatus::Ok => Trial {
            status: S::Ok,
            message: cut(outcome.message, tool.return_char_limit),
            block_changes: outcome.block_updates,
        },
    }
}

/// Cuts `text` to `limit` characters, saying so.
pub fn cut(text: String, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text,
        Some((byte, _)) => {
            let total = text.chars().count();
            format!(
                "{}\n[result cut to {limit} of {total} characters by the tool's return_char_limit]",
                &text[..byte]
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn results_are_cut_in_characters() {
        assert_eq!(cut("héllo".into(), 10), "héllo");
        let out = cut("héllo".into(), 2);
        assert!(out.starts_with("hé\n[result cut to 2 of 5 characters"));
    }
}
