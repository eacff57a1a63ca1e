//! Tool calls a person approves (Letta's `requires_approval` rule): the per-agent "ask before
//! running" setting, the pending call, and the decision that lets the paused run go on.

use crate::Notice;
use crate::rooms::{Runs, Tools};
use engram_core::{Agent, AgentId, AgentPatch, Error, PendingApproval, Result, ToolRule};

impl Tools<'_> {
    /// Turns "ask before running" on or off for `tool` on the agent: adds or removes its
    /// `requires_approval` rule (other rules are kept). Works for any tool the agent has —
    /// built-in, Python or from an MCP server — as rules are keyed by tool name.
    /// Errors: `not_found` (agent); `invalid_input` when the tool is not attached to the agent.
    pub async fn set_approval(self, agent: &AgentId, tool: &str, on: bool) -> Result<Agent> {
        let current = self.engram.backend.get_agent(agent).await?;
        if !current.tools.iter().any(|t| t == tool) {
            return Err(Error::invalid(format!(
                "tool '{tool}' is not attached to agent '{}'; attach it first",
                current.name
            )));
        }
        let mut rules: Vec<ToolRule> = current
            .tool_rules
            .into_iter()
            .filter(|r| !matches!(r, ToolRule::RequiresApproval { tool_name } if tool_name == tool))
            .collect();
        if on {
            rules.push(ToolRule::RequiresApproval {
                tool_name: tool.to_owned(),
            });
        }
        let updated = self
            .engram
            .backend
            .update_agent(
                agent,
                &AgentPatch {
                    tool_rules: Some(rules),
                    ..Default::default()
                },
            )
            .await?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(updated)
    }
}

impl Runs<'_> {
    /// The tool call the agent's run waits on, if any (stored: it survives a restart).
    /// Errors: `not_found`.
    pub async fn pending_approval(self, agent: &AgentId) -> Result<Option<PendingApproval>> {
        self.engram.backend.pending_approval(agent).await
    }
}
