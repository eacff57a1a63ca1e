//! Agent commands: list, read, create (from a template), change, clone, delete; exports and
//! imports of Agent Files.

use super::{Access, AppCall, Caller, blocking};
use crate::{AgentState, Engram, ExportFile, ExportFormat, ImportReport, ModelProblem, Template};
use engram_core::{Agent, AgentAccess, AgentId, AgentPatch, Error, NewAgent, Result};
use serde::Deserialize;
use std::sync::Arc;
use ts_rs::TS;

/// `list_agents`: every agent, oldest first (a user's: those they may use).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListAgentsArgs {}

impl AppCall for ListAgentsArgs {
    const NAME: &'static str = "list_agents";
    const ACCESS: Access = Access::Scoped;
    type Output = Vec<Agent>;
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<Self::Output> {
        match &caller.user {
            None => e.agents().list().await,
            Some(user) => {
                e.agents()
                    .page(&crate::AgentList {
                        user: Some(user.id.clone()),
                        ascending: true,
                        limit: usize::MAX,
                        ..crate::AgentList::default()
                    })
                    .await
            }
        }
    }
}

/// `get_agent`: one agent with its blocks.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct GetAgentArgs {
    agent_id: AgentId,
}

impl AppCall for GetAgentArgs {
    const NAME: &'static str = "get_agent";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = AgentState;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<AgentState> {
        e.agents().get(&self.agent_id).await
    }
}

/// `create_agent`: creates an agent, from a template when one is named (fields given in
/// `new` win over the template's).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct CreateAgentArgs {
    new: NewAgent,
    /// A template's id (see `list_templates`).
    template: Option<String>,
}

impl AppCall for CreateAgentArgs {
    const NAME: &'static str = "create_agent";
    const ACCESS: Access = Access::Scoped;
    type Output = AgentState;
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<AgentState> {
        let blocks = self.new.block_ids.clone();
        let create = async {
            match self.template {
                Some(template) => e.agents().create_from_template(&template, self.new).await,
                None => e.agents().create(self.new).await,
            }
        };
        match &caller.user {
            // A user's agent is theirs, with only blocks they may already change.
            Some(user) => e.users().create_agent(&user.id, &blocks, create).await,
            None => create.await,
        }
    }
}

/// `update_agent`: changes an agent's settings (rename, model, loop style…).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UpdateAgentArgs {
    agent_id: AgentId,
    patch: AgentPatch,
}

impl AppCall for UpdateAgentArgs {
    const NAME: &'static str = "update_agent";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = Agent;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Agent> {
        e.agents().update(&self.agent_id, &self.patch).await
    }
}

/// `clone_agent`: copies an agent with its memory and history.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct CloneAgentArgs {
    agent_id: AgentId,
    /// The copy's name; default: the original's with " (copy)".
    name: Option<String>,
}

impl AppCall for CloneAgentArgs {
    const NAME: &'static str = "clone_agent";
    type Output = AgentState;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<AgentState> {
        e.agent_files()
            .duplicate(&self.agent_id, self.name.as_deref())
            .await
    }
}

/// `delete_agent`: deletes an agent with its history and archival memory.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteAgentArgs {
    agent_id: AgentId,
}

impl AppCall for DeleteAgentArgs {
    const NAME: &'static str = "delete_agent";
    const ACCESS: Access = Access::Agent(AgentAccess::Owner);
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.agents().delete(&self.agent_id).await
    }
}

/// `list_templates`: the agent templates (a plain memory agent, the task-queue agent…).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListTemplatesArgs {}

impl AppCall for ListTemplatesArgs {
    const NAME: &'static str = "list_templates";
    // The built-in starting points: nobody's data.
    const ACCESS: Access = Access::Scoped;
    type Output = Vec<Template>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        Ok(e.agents().templates())
    }
}

/// `export_agent`: the agent as an Agent File (JSON text).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ExportAgentArgs {
    agent_id: AgentId,
}

impl AppCall for ExportAgentArgs {
    const NAME: &'static str = "export_agent";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = String;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<String> {
        let bytes = e
            .agent_files()
            .export(std::slice::from_ref(&self.agent_id))
            .await?;
        String::from_utf8(bytes).map_err(|e| Error::Internal(e.to_string()))
    }
}

/// `import_agent_file`: imports an Agent File (Letta v1/v2 or Engram). The report lists what
/// waits for the user's review (untrusted tools, inactive endpoints).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct ImportAgentFileArgs {
    /// The file's text.
    contents: String,
    /// The file's name, recorded as the origin of its tools and endpoints.
    file_name: Option<String>,
}

impl AppCall for ImportAgentFileArgs {
    const NAME: &'static str = "import_agent_file";
    type Output = ImportReport;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ImportReport> {
        let name = self.file_name.as_deref().unwrap_or(crate::UNNAMED_FILE);
        e.agent_files()
            .import_named(self.contents.as_bytes(), name)
            .await
    }
}

/// `export_agents`: an export of one agent, several, or all, as a file name and contents
/// (the browser saves it as a download). Also the arguments of the desktop's
/// `export_to_file`, which saves the same export through the native save dialog.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct ExportAgentsArgs {
    /// Which agents; every agent when absent.
    pub agent_ids: Option<Vec<AgentId>>,
    /// Agent File, Markdown or the JSON report.
    pub format: ExportFormat,
}

impl AppCall for ExportAgentsArgs {
    const NAME: &'static str = "export_agents";
    type Output = ExportFile;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ExportFile> {
        let e = e.clone();
        // An export reads whole histories: on a blocking thread, not a worker.
        blocking("export", move || {
            tokio::runtime::Handle::current().block_on(
                e.agent_files()
                    .export_all(self.agent_ids.as_deref(), self.format),
            )
        })
        .await
    }
}

/// `import_from_file` (desktop only, answered by the shell): picks an agent file in the
/// native open dialog and imports it.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ImportFromFileArgs {}

/// `check_model`: why a chat model handle (`provider/model`) cannot be used now, in words, or
/// `null` when it can (nothing is sent to any server). With `agent_id`, also whether that
/// agent's memory and tools fit the model's context window.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct CheckModelArgs {
    handle: String,
    #[serde(default)]
    #[ts(optional)]
    agent_id: Option<AgentId>,
}

impl AppCall for CheckModelArgs {
    const NAME: &'static str = "check_model";
    // A local check a user's New dialog makes too; an agent it names must be one they may read.
    const ACCESS: Access = Access::Scoped;
    type Output = Option<String>;
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<Option<String>> {
        if let (Some(user), Some(id)) = (&caller.user, &self.agent_id)
            && e.users().access(id, &user.id).await?.is_none()
        {
            return Err(Error::not_found("agent", id.as_str()));
        }
        match &self.agent_id {
            Some(id) => e.models().check_for(id, &self.handle).await,
            None => e.models().check(&self.handle),
        }
    }
}

/// `agent_model_problem`: why an agent cannot talk to its chat model yet, or `null`.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AgentModelProblemArgs {
    agent_id: AgentId,
}

impl AppCall for AgentModelProblemArgs {
    const NAME: &'static str = "agent_model_problem";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Option<ModelProblem>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Option<ModelProblem>> {
        e.agents().model_problem(&self.agent_id).await
    }
}

/// `agents_without_model`: every agent whose chat model cannot be used now.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AgentsWithoutModelArgs {}

impl AppCall for AgentsWithoutModelArgs {
    const NAME: &'static str = "agents_without_model";
    type Output = Vec<ModelProblem>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<ModelProblem>> {
        e.agents().without_model().await
    }
}

/// `use_model_for`: points the given agents at one chat model (`provider/model`); refused
/// when that model cannot be used either.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UseModelForArgs {
    agent_ids: Vec<AgentId>,
    handle: String,
}

impl AppCall for UseModelForArgs {
    const NAME: &'static str = "use_model_for";
    type Output = Vec<Agent>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<Agent>> {
        e.agents().use_model(&self.agent_ids, &self.handle).await
    }
}
