//! Tools as data: listing built-in and user tools (with whether they can run here), creating
//! user tools from Python source, attaching them to agents, tool rules, and trying a tool once.

use crate::rooms::Tools;
use crate::tool_python::{LETTA_CLIENT_REQUIREMENT, TOOL_VENV_DIR, ToolPython, run, venv_python};
use crate::{Engram, Notice};
use engram_agent::tools::{BUILTIN_TOOLS, builtin_tool, builtin_tools, trial};
use engram_core::tool::valid_tool_name;
use engram_core::{
    Agent, AgentId, DEFAULT_RETURN_CHAR_LIMIT, Error, NewTool, Result, Tool, ToolId, ToolLanguage,
    ToolOrigin, ToolRule, ToolStatus, source_hash,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};

/// A partial update of a user tool; `None` leaves a field as it is. A new `source_code`
/// regenerates the schema unless `json_schema` is given too. What the tool may do (network,
/// unsandboxed runs) is not part of it: see [`Tools::set_sandbox`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export, optional_fields)]
pub struct ToolPatch {
    /// New name (agents that use the tool follow the rename).
    #[serde(default)]
    pub name: Option<String>,
    /// New description.
    #[serde(default)]
    pub description: Option<String>,
    /// New Python source.
    #[serde(default)]
    pub source_code: Option<String>,
    /// New explicit schema (OpenAI function object).
    #[serde(default)]
    pub json_schema: Option<Value>,
    /// New cap on result characters.
    #[serde(default)]
    pub return_char_limit: Option<usize>,
    /// New tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

/// A tool's sandbox settings, as [`Tools::set_sandbox`] changes them; `None` leaves a
/// setting as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export, optional_fields)]
pub struct ToolSandboxSettings {
    /// Whether the tool may use the network.
    #[serde(default)]
    pub network: Option<bool>,
    /// Whether the tool may run without a sandbox where none is available.
    #[serde(default)]
    pub allow_unsandboxed: Option<bool>,
}

/// One block change a tried tool would make.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct BlockChange {
    /// The block's label.
    pub label: String,
    /// Its new whole value.
    pub value: String,
}

/// What [`Tools::trial`] saw: the result the model would get and the memory changes that
/// would be made — none of them stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ToolTrial {
    /// `OK` or `Failed`, as in stored tool results.
    pub status: ToolStatus,
    /// The return value (cut to the tool's `return_char_limit`) or the error line.
    pub message: String,
    /// Block changes, in first-change order; empty when the tool failed.
    pub block_changes: Vec<BlockChange>,
}

impl Engram {
    /// Marks a Python tool unavailable (with the reason) when no usable `python3` is found,
    /// or when no sandbox is available and the tool may not run without one. Blocks on first
    /// use while `python3` and the sandbox are looked for.
    pub(crate) fn with_availability(&self, mut tool: Tool) -> Tool {
        if tool.language == ToolLanguage::Mcp {
            if let Some(reason) = self.mcp_unavailable_reason(&tool) {
                tool.available = false;
                tool.unavailable_reason = Some(reason);
            }
            return tool;
        }
        if tool.language != ToolLanguage::Python {
            return tool;
        }
        let reason = self.python.unavailable_reason().or_else(|| {
            let none = self.python.sandbox_unavailable_reason()?;
            (!tool.allow_unsandboxed).then(|| {
                format!(
                    "no sandbox is available here ({none}); if you trust this tool with your user account's full access, allow it to run unsandboxed (`engram tool set {} --unsandboxed on`)",
                    tool.name
                )
            })
        });
        if let Some(reason) = reason {
            tool.available = false;
            tool.unavailable_reason = Some(reason);
        }
        tool
    }

    /// Changes the agent's list of tool names with `edit`, stores it when it changed, and
    /// returns the agent's tools.
    async fn edit_tool_list(
        &self,
        agent: &AgentId,
        edit: impl FnOnce(&mut Vec<String>),
    ) -> Result<Vec<Tool>> {
        let before = self.backend.get_agent(agent).await?.tools;
        let mut tools = before.clone();
        edit(&mut tools);
        if tools != before {
            let patch = engram_core::AgentPatch {
                tools: Some(tools),
                ..Default::default()
            };
            self.backend.update_agent(agent, &patch).await?;
            self.notify(Notice::AgentChanged {
                agent_id: agent.clone(),
            });
        }
        self.tools().of_agent(agent).await
    }

    /// Checks that every name is a built-in or a user tool. Errors: `invalid_input`.
    pub(crate) async fn check_tool_names(&self, names: &[String]) -> Result<()> {
        for n in names {
            if !BUILTIN_TOOLS.contains(&n.as_str()) && self.backend.tool_by_name(n).await?.is_none()
            {
                return Err(Error::invalid(format!(
                    "unknown tool '{n}'; built-in tools are {}, and user tools can be added with `engram tool add`",
                    BUILTIN_TOOLS.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// [`build_tool`](Self::build_tool) on a thread that may block: generating a schema runs
    /// `python3`.
    async fn build_tool_apart(&self, new: NewTool) -> Result<Tool> {
        let engram = self.handle()?;
        tokio::task::spawn_blocking(move || engram.build_tool(new))
            .await
            .map_err(|e| Error::Internal(format!("building a tool: {e}")))?
    }

    /// A user tool from `new`: schema given or generated, name and description settled.
    fn build_tool(&self, new: NewTool) -> Result<Tool> {
        if new.source_code.trim().is_empty() {
            return Err(Error::invalid("a tool needs Python source code"));
        }
        let wanted = new.name.clone().or_else(|| {
            new.json_schema
                .as_ref()
                .and_then(|s| s["name"].as_str().map(str::to_owned))
        });
        let schema = match new.json_schema {
            Some(s) => {
                if !s.is_object() {
                    return Err(Error::invalid("json_schema must be a JSON object"));
                }
                s
            }
            None => self.generate_schema(&new.source_code, wanted.as_deref())?,
        };
        let name = wanted
            .or_else(|| schema["name"].as_str().map(str::to_owned))
            .unwrap_or_default();
        if !valid_tool_name(&name) {
            return Err(Error::invalid(format!(
                "'{name}' cannot be a tool name: use letters, digits and '_', not starting with a digit"
            )));
        }
        if BUILTIN_TOOLS.contains(&name.as_str()) {
            return Err(Error::invalid(format!(
                "'{name}' is a built-in tool; give the user tool another name"
            )));
        }
        let description = new
            .description
            .filter(|d| !d.trim().is_empty())
            .or_else(|| schema["description"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut json_schema = schema;
        json_schema["name"] = json!(name);
        json_schema["description"] = json!(description);
        if !json_schema["parameters"].is_object() {
            json_schema["parameters"] = json!({"type": "object", "properties": {}, "required": []});
        }
        let now = chrono::Utc::now();
        let hash = source_hash(&new.source_code);
        Ok(Tool {
            id: ToolId::new(),
            name,
            description,
            json_schema,
            source_code: Some(new.source_code),
            language: ToolLanguage::Python,
            return_char_limit: new
                .return_char_limit
                .unwrap_or(DEFAULT_RETURN_CHAR_LIMIT)
                .max(1),
            tags: new.tags,
            network: new.network.unwrap_or(false),
            allow_unsandboxed: new.allow_unsandboxed.unwrap_or(false),
            available: true,
            unavailable_reason: None,
            // Written by the user through one of Engram's own transports: trusted as written.
            origin: ToolOrigin::User,
            trusted_hash: Some(hash),
            source_hash: None,
            trusted: false,
            mcp: None,
            created_at: now,
            updated_at: now,
        })
    }

    /// Runs the schema generator on a thread of its own (it is async and this API is not, and
    /// callers may be inside a runtime). Errors: `invalid_input`.
    fn generate_schema(&self, source: &str, name: Option<&str>) -> Result<Value> {
        let runner = self.python.runner().map_err(|u| {
            Error::invalid(format!(
                "cannot read the tool's schema from its source: {}; give json_schema explicitly",
                u.reason
            ))
        })?;
        let result = std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::Internal(format!("no runtime for schema generation: {e}")))
                    .map(|rt| rt.block_on(runner.schema(source, name)))
            })
            .join()
            .map_err(|_| Error::Internal("schema generation panicked".into()))?
        })?;
        let schema = result.map_err(|e| Error::invalid(format!("invalid tool source: {e}")))?;
        serde_json::to_value(schema).map_err(|e| Error::Internal(e.to_string()))
    }
}

impl Tools<'_> {
    /// Every tool: the built-ins first (ids `tool-builtin-<name>`), then user tools by name,
    /// each marked available or not (Python tools need `python3`).
    pub async fn list(self) -> Result<Vec<Tool>> {
        let mut all = builtin_tools();
        for t in self.engram.backend.list_tools().await? {
            all.push(self.engram.with_availability(t));
        }
        Ok(all)
    }

    /// One tool by id (built-ins too). Errors: `not_found`.
    pub async fn get(self, id: &ToolId) -> Result<Tool> {
        if let Some(name) = id.as_str().strip_prefix("tool-builtin-") {
            return builtin_tool(name).ok_or_else(|| Error::not_found("tool", id.as_str()));
        }
        let tool = self.engram.backend.get_tool(id).await?;
        Ok(self.engram.with_availability(tool))
    }

    /// One tool by id or name (for transports that let people type either).
    /// Errors: `not_found`.
    pub async fn find(self, id_or_name: &str) -> Result<Tool> {
        if let Some(t) = builtin_tool(id_or_name) {
            return Ok(t);
        }
        if let Some(t) = self.engram.backend.tool_by_name(id_or_name).await? {
            return Ok(self.engram.with_availability(t));
        }
        self.get(&ToolId::from(id_or_name)).await
    }

    /// Creates a user tool, or replaces the one with the same name. Its schema is generated
    /// from the source's signature and docstring (as Letta does) unless `json_schema` is given;
    /// `name` picks the function when the source has several. Generating the schema runs
    /// `python3` (which parses, never executes, the source).
    ///
    /// Errors: `invalid_input` with Python's parse error, for a name that is not an identifier
    /// or names a built-in tool, or when no schema is given and `python3` is missing.
    pub async fn upsert(self, new: NewTool) -> Result<Tool> {
        let mut tool = self.engram.build_tool_apart(new.clone()).await?;
        let backend = &self.engram.backend;
        // Settings not given keep those of the tool being replaced.
        if let Some(old) = backend.tool_by_name(&tool.name).await? {
            tool.network = new.network.unwrap_or(old.network);
            tool.allow_unsandboxed = new.allow_unsandboxed.unwrap_or(old.allow_unsandboxed);
        }
        let stored = backend.upsert_tool(&tool).await?;
        self.engram.notify(Notice::ToolsChanged);
        Ok(self.engram.with_availability(stored))
    }

    /// Changes a user tool. Errors: `not_found`; `invalid_input` as for
    /// [`upsert`](Self::upsert); `conflict` when renamed to a taken name.
    pub async fn update(self, id: &ToolId, patch: ToolPatch) -> Result<Tool> {
        let backend = &self.engram.backend;
        let old = backend.get_tool(id).await?;
        let source_changed = patch.source_code.is_some();
        let name = patch.name.clone().unwrap_or_else(|| old.name.clone());
        let json_schema = match patch.json_schema {
            Some(s) => Some(s),
            None if source_changed => None,
            None => {
                let mut s = old.json_schema.clone();
                s["name"] = json!(name);
                Some(s)
            }
        };
        let new = NewTool {
            source_code: patch
                .source_code
                .or(old.source_code.clone())
                .unwrap_or_default(),
            name: Some(name),
            description: patch.description.or_else(|| {
                // Keep a hand-set description unless the source now says something else.
                (!source_changed).then(|| old.description.clone())
            }),
            json_schema,
            return_char_limit: Some(patch.return_char_limit.unwrap_or(old.return_char_limit)),
            tags: patch.tags.unwrap_or(old.tags.clone()),
            // What the tool may do changes only through `set_tool_sandbox`.
            network: Some(old.network),
            allow_unsandboxed: Some(old.allow_unsandboxed),
        };
        let mut tool = self.engram.build_tool_apart(new).await?;
        tool.id = old.id.clone();
        tool.created_at = old.created_at;
        if tool.source_code == old.source_code {
            // Only the code the user wrote is trusted by writing it: a new name or description
            // leaves an untrusted tool untrusted.
            tool.origin = old.origin.clone();
            tool.trusted_hash = old.trusted_hash.clone();
        }
        let stored = backend.replace_tool(id, &tool).await?;
        self.engram.notify(Notice::ToolsChanged);
        Ok(self.engram.with_availability(stored))
    }

    /// Grants or revokes a user tool's network and unsandboxed runs (the user's decision;
    /// never taken from an imported file or an API client's tool definition). Returns the
    /// tool with its availability. Errors: `not_found`; `invalid_input` for a built-in tool.
    pub async fn set_sandbox(self, id: &ToolId, settings: ToolSandboxSettings) -> Result<Tool> {
        if id.as_str().starts_with("tool-builtin-") {
            return Err(Error::invalid(
                "built-in tools run inside Engram and have no sandbox settings",
            ));
        }
        let backend = &self.engram.backend;
        let mut tool = backend.get_tool(id).await?;
        if let Some(network) = settings.network {
            tool.network = network;
        }
        if let Some(allow) = settings.allow_unsandboxed {
            tool.allow_unsandboxed = allow;
        }
        let stored = backend.replace_tool(id, &tool).await?;
        self.engram.notify(Notice::ToolsChanged);
        Ok(self.engram.with_availability(stored))
    }

    /// Deletes a user tool and detaches it from every agent. Errors: `not_found`;
    /// `invalid_input` for a built-in tool.
    pub async fn delete(self, id: &ToolId) -> Result<()> {
        if id.as_str().starts_with("tool-builtin-") {
            return Err(Error::invalid("built-in tools cannot be deleted"));
        }
        self.engram.backend.delete_tool(id).await?;
        self.engram.notify(Notice::ToolsChanged);
        Ok(())
    }

    /// The agent's tools, in the order the model sees them. Names without a tool (a user tool
    /// deleted elsewhere) are left out. Errors: `not_found`.
    pub async fn of_agent(self, agent: &AgentId) -> Result<Vec<Tool>> {
        let a = self.engram.backend.get_agent(agent).await?;
        let custom = self.engram.backend.tools_named(&a.tools).await?;
        Ok(a.tools
            .iter()
            .filter_map(|n| {
                builtin_tool(n).or_else(|| {
                    custom
                        .iter()
                        .find(|t| &t.name == n)
                        .map(|t| self.engram.with_availability(t.clone()))
                })
            })
            .collect())
    }

    /// Attaches a tool (nothing changes when it is attached already); returns the agent's
    /// tools. Errors: `not_found` for the agent or the tool.
    pub async fn attach(self, agent: &AgentId, tool: &ToolId) -> Result<Vec<Tool>> {
        let name = self.get(tool).await?.name;
        self.engram
            .edit_tool_list(agent, |tools| {
                if !tools.contains(&name) {
                    tools.push(name);
                }
            })
            .await
    }

    /// Detaches a tool (nothing changes when it is not attached); returns the agent's tools.
    /// The tool itself stays. Errors: `not_found` for the agent or the tool.
    pub async fn detach(self, agent: &AgentId, tool: &ToolId) -> Result<Vec<Tool>> {
        let name = self.get(tool).await?.name;
        self.engram
            .edit_tool_list(agent, |tools| tools.retain(|n| *n != name))
            .await
    }

    /// Replaces the agent's tool rules (enforced by the loop from the next run on).
    /// Errors: `not_found`.
    pub async fn set_rules(self, agent: &AgentId, rules: Vec<ToolRule>) -> Result<Agent> {
        let patch = engram_core::AgentPatch {
            tool_rules: Some(rules),
            ..Default::default()
        };
        let updated = self.engram.backend.update_agent(agent, &patch).await?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(updated)
    }

    /// Runs a user tool once with `args` against the agent's current memory (or no blocks
    /// when `agent` is `None`), storing nothing: the tool editor's "try it". Failures of the
    /// tool (exceptions, timeout, missing `python3`, over-limit writes) are a `Failed` trial,
    /// not an error. Errors: `not_found`; `invalid_input` when `args` is not a JSON object.
    pub async fn trial(
        self,
        tool: &ToolId,
        agent: Option<&AgentId>,
        args: Value,
    ) -> Result<ToolTrial> {
        let tool = self.get(tool).await?;
        if !args.is_object() {
            return Err(Error::invalid("the arguments must be a JSON object"));
        }
        let (id, name, blocks) = match agent {
            Some(a) => {
                let state = self.engram.agents().get(a).await?;
                (state.agent.id.to_string(), state.agent.name, state.blocks)
            }
            None => ("agent-trial".to_owned(), "trial".to_owned(), Vec::new()),
        };
        let t = trial(&self.engram.python, &tool, &id, &name, blocks, args).await;
        Ok(ToolTrial {
            status: t.status,
            message: t.message,
            block_changes: t
                .block_changes
                .into_iter()
                .map(|(label, value)| BlockChange { label, value })
                .collect(),
        })
    }
}

impl Tools<'_> {
    /// The Python tools run in and whether it has `letta_client` (starts it once: blocks for
    /// tens of milliseconds).
    pub fn python(self) -> ToolPython {
        let program = self.engram.python.program();
        let managed = Path::new(&program) == venv_python(&self.engram.home.join(TOOL_VENV_DIR));
        let version = Command::new(&program)
            .args([
                "-I",
                "-c",
                "import letta_client, importlib.metadata as m; print(m.version('letta-client'))",
            ])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        ToolPython {
            program: program.to_string_lossy().into_owned(),
            managed,
            letta_client: version.filter(|v| !v.is_empty()),
            unavailable: self.engram.python.unavailable_reason(),
        }
    }

    /// Sets up a Python for tools in `<data dir>/python`: a virtual environment made by the
    /// system's `python3` with `requirement` installed by pip (default
    /// [`LETTA_CLIENT_REQUIREMENT`]), then makes it the interpreter tools run in (unless
    /// `ENGRAM_PYTHON` names another). Each line pip prints goes to `progress`. Running it again
    /// updates the environment. Every line is also sent as a `PythonSetup` notice. Blocks for
    /// as long as pip takes (often a minute): transports call it off their async threads.
    ///
    /// Errors: `invalid_input` when `python3` or its `venv` module is missing, or pip fails
    /// (the message carries pip's last lines).
    pub fn set_up_python(
        self,
        requirement: Option<&str>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<ToolPython> {
        // One requirement, never pip options (`--index-url`, `-r FILE`, `-e URL`).
        if let Some(r) = requirement
            && (r.trim().is_empty() || r.trim_start().starts_with('-'))
        {
            return Err(Error::invalid(format!(
                "'{r}' is not a requirement (e.g. `letta-client==1.2.3`); pip options are not accepted"
            )));
        }
        // Every line also goes out as a notice, for windows showing the setup.
        let progress = &mut |line: &str| {
            self.engram.notify(crate::Notice::PythonSetup {
                line: line.to_owned(),
            });
            progress(line);
        };
        let venv = self.engram.home.join(TOOL_VENV_DIR);
        progress(&format!(
            "Creating a Python environment in {}",
            venv.display()
        ));
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv (install Python 3 and its venv module, e.g. `apt install python3-venv`)",
            progress,
        )?;
        let requirement = requirement.unwrap_or(LETTA_CLIENT_REQUIREMENT);
        progress(&format!("Installing {requirement}"));
        let python = venv_python(&venv);
        run(
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--progress-bar",
                "off",
                requirement,
            ]),
            "pip install",
            progress,
        )?;
        if !self.engram.python_from_env {
            self.engram.python.use_program(&python);
        }
        self.engram.notify(crate::Notice::ToolsChanged);
        let status = self.python();
        progress("Done");
        Ok(status)
    }
}
