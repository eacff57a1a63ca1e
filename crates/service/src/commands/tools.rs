//! Tool commands: the tool list, Python tools (save, try, delete), which tools an agent has,
//! the user's trust decisions (DESIGN.md §8b: a tool's reviewed source, an agent's
//! endpoints), and tool calls that wait for the user's approval.

use super::{Access, AppCall, Caller};
use crate::{AgentEndpoints, Engram, ToolTrial};
use engram_core::{
    Agent, AgentAccess, AgentId, EndpointKind, NewTool, PendingApproval, Result, Tool, ToolId,
};
use serde::Deserialize;
use std::sync::Arc;
use ts_rs::TS;

/// `list_tools`: every tool, built-in and user-written, with whether it can run here.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListToolsArgs {}

impl AppCall for ListToolsArgs {
    const NAME: &'static str = "list_tools";
    type Output = Vec<Tool>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.tools().list().await
    }
}

/// `agent_tools`: the agent's tools, in the order the model sees them.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AgentToolsArgs {
    agent_id: AgentId,
}

impl AppCall for AgentToolsArgs {
    const NAME: &'static str = "agent_tools";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<Tool>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.tools().of_agent(&self.agent_id).await
    }
}

/// `upsert_tool`: saves a Python tool (its schema generated from its signature and
/// docstring, which runs `python3`, so on a blocking thread).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UpsertToolArgs {
    new: NewTool,
}

impl AppCall for UpsertToolArgs {
    const NAME: &'static str = "upsert_tool";
    type Output = Tool;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Tool> {
        let e = e.clone();
        e.tools().upsert(self.new).await
    }
}

/// `delete_tool`: deletes a user tool (detaching it everywhere).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteToolArgs {
    tool_id: ToolId,
}

impl AppCall for DeleteToolArgs {
    const NAME: &'static str = "delete_tool";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.tools().delete(&self.tool_id).await
    }
}

/// `attach_tool`: gives the agent a tool; answers its tools.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AttachToolArgs {
    agent_id: AgentId,
    tool_id: ToolId,
}

impl AppCall for AttachToolArgs {
    const NAME: &'static str = "attach_tool";
    type Output = Vec<Tool>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.tools().attach(&self.agent_id, &self.tool_id).await
    }
}

/// `detach_tool`: takes a tool from the agent; answers its tools.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DetachToolArgs {
    agent_id: AgentId,
    tool_id: ToolId,
}

impl AppCall for DetachToolArgs {
    const NAME: &'static str = "detach_tool";
    type Output = Vec<Tool>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.tools().detach(&self.agent_id, &self.tool_id).await
    }
}

/// `try_tool`: runs a tool once against an agent's memory without storing anything (the
/// editor's "try it").
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct TryToolArgs {
    tool_id: ToolId,
    /// Whose memory the tool sees; none: an empty one.
    agent_id: Option<AgentId>,
    /// The tool's arguments, as the model would send them.
    #[ts(type = "Record<string, unknown>")]
    args: serde_json::Value,
}

impl AppCall for TryToolArgs {
    const NAME: &'static str = "try_tool";
    type Output = ToolTrial;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ToolTrial> {
        e.tools()
            .trial(&self.tool_id, self.agent_id.as_ref(), self.args)
            .await
    }
}

/// `trust_tool`: trusts a tool's current source when it hashes to `expected_hash`.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct TrustToolArgs {
    /// Tool id or name.
    tool: String,
    /// The SHA-256 of the source the user reviewed (shown with the code).
    expected_hash: String,
}

impl AppCall for TrustToolArgs {
    const NAME: &'static str = "trust_tool";
    type Output = Tool;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Tool> {
        e.tools().trust(&self.tool, &self.expected_hash).await
    }
}

/// `untrust_tool`: withdraws trust from a tool: it stops running until trusted again.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UntrustToolArgs {
    /// Tool id or name.
    tool: String,
}

impl AppCall for UntrustToolArgs {
    const NAME: &'static str = "untrust_tool";
    type Output = Tool;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Tool> {
        e.tools().untrust(&self.tool).await
    }
}

/// `agent_endpoints`: where the agent's model calls go, and what an imported file asked for.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AgentEndpointsArgs {
    agent_id: AgentId,
}

impl AppCall for AgentEndpointsArgs {
    const NAME: &'static str = "agent_endpoints";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = AgentEndpoints;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<AgentEndpoints> {
        e.trust().endpoints(&self.agent_id).await
    }
}

/// `set_agent_base_url`: sets (or clears, with no `base_url`) the agent's own base URL for a
/// model.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct SetAgentBaseUrlArgs {
    agent_id: AgentId,
    kind: EndpointKind,
    base_url: Option<String>,
}

impl AppCall for SetAgentBaseUrlArgs {
    const NAME: &'static str = "set_agent_base_url";
    type Output = AgentEndpoints;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<AgentEndpoints> {
        e.trust()
            .set_base_url(&self.agent_id, self.kind, self.base_url.as_deref())
            .await
    }
}

/// `accept_endpoint`: accepts the endpoint an imported file asked for.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct AcceptEndpointArgs {
    agent_id: AgentId,
    /// Which one; all of them when absent.
    kind: Option<EndpointKind>,
}

impl AppCall for AcceptEndpointArgs {
    const NAME: &'static str = "accept_endpoint";
    type Output = AgentEndpoints;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<AgentEndpoints> {
        e.trust().accept_endpoint(&self.agent_id, self.kind).await
    }
}

/// `dismiss_endpoint`: drops an endpoint an imported file asked for, unused.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct DismissEndpointArgs {
    agent_id: AgentId,
    /// Which one; the chat model's when absent.
    kind: Option<EndpointKind>,
}

impl AppCall for DismissEndpointArgs {
    const NAME: &'static str = "dismiss_endpoint";
    type Output = AgentEndpoints;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<AgentEndpoints> {
        let kind = self.kind.unwrap_or(EndpointKind::Llm);
        e.trust().dismiss_endpoint(&self.agent_id, kind).await
    }
}

/// `pending_approval`: the tool call the agent's run waits on, if any.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct PendingApprovalArgs {
    agent_id: AgentId,
}

impl AppCall for PendingApprovalArgs {
    const NAME: &'static str = "pending_approval";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Option<PendingApproval>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.runs().pending_approval(&self.agent_id).await
    }
}

/// `set_tool_approval`: turns "ask before running" on or off for one of the agent's tools.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetToolApprovalArgs {
    agent_id: AgentId,
    /// The tool's name.
    tool: String,
    on: bool,
}

impl AppCall for SetToolApprovalArgs {
    const NAME: &'static str = "set_tool_approval";
    type Output = Agent;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Agent> {
        e.tools()
            .set_approval(&self.agent_id, &self.tool, self.on)
            .await
    }
}
