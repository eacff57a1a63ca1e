//! Agent templates: ready-made starting points (blocks, persona, user tools) so people can try
//! a design without writing code — e.g. the task-queue agent of Letta's memory tutorial.

use crate::agents::AgentState;
use crate::rooms::Agents;
use engram_agent::tools::default_tools;
use engram_core::{Error, LoopStyle, NewAgent, NewBlock, NewTool, Result};
use serde::Serialize;
use serde_json::json;

/// A starting point for a new agent.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct Template {
    /// Stable id (`memory`, `task-queue`), used by `engram agent create --template`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// What the agent does, for people choosing a template.
    pub description: String,
    /// The loop style the template is written for; `None` works in either.
    pub loop_style: Option<LoopStyle>,
    /// The blocks a new agent gets.
    pub blocks: Vec<NewBlock>,
    /// Names of the user tools the template adds to the loop style's built-in tools.
    pub tools: Vec<String>,
    /// The user tools' definitions (upserted by name when an agent is made from the template).
    #[serde(skip)]
    pub tool_sources: Vec<NewTool>,
}

const PUSH_SOURCE: &str = r#"import json


def task_queue_push(agent_state: "AgentState", task_description: str) -> str:
    """
    Put a task at the back of your task queue (the `tasks` memory block).

    Args:
        task_description (str): The task, described so that you can do it later without more context.

    Returns:
        str: The queue after adding the task.
    """
    queue = json.loads(agent_state.memory.get_block("tasks").value or "[]")
    queue.append(task_description)
    agent_state.memory.update_block_value("tasks", json.dumps(queue))
    return "Queued. Tasks now: " + json.dumps(queue)
"#;

const POP_SOURCE: &str = r#"import json


def task_queue_pop(agent_state: "AgentState") -> str:
    """
    Take the task at the front of your task queue (the `tasks` memory block) so you can do it now.

    Returns:
        str: The task taken and what is left, or None when the queue is empty.
    """
    queue = json.loads(agent_state.memory.get_block("tasks").value or "[]")
    if not queue:
        return None
    task = queue.pop(0)
    agent_state.memory.update_block_value("tasks", json.dumps(queue))
    return "Do this task now: " + task + "\nRemaining tasks " + json.dumps(queue)
"#;

const TASK_PERSONA: &str = "I am a methodical assistant who works through a task queue. \
When I am asked to do several things, I add each one to my queue with task_queue_push. When I \
am asked to complete my tasks, I call task_queue_pop, do the task it gives me, and call it again \
until my `tasks` block is an empty list. I never edit the `tasks` block by hand.";

fn push_schema() -> serde_json::Value {
    json!({
        "name": "task_queue_push",
        "description": "Put a task at the back of your task queue (the `tasks` memory block).",
        "parameters": {
            "type": "object",
            "properties": {"task_description": {"type": "string",
                "description": "The task, described so that you can do it later without more context."}},
            "required": ["task_description"]
        }
    })
}

fn pop_schema() -> serde_json::Value {
    json!({
        "name": "task_queue_pop",
        "description": "Take the task at the front of your task queue (the `tasks` memory block) so you can do it now.",
        "parameters": {"type": "object", "properties": {}, "required": []}
    })
}

fn templates() -> Vec<Template> {
    vec![
        Template {
            id: "memory".into(),
            name: "Memory agent".into(),
            description: "A companion that keeps what it learns about itself and you in its \
                          persona and human blocks."
                .into(),
            loop_style: None,
            blocks: vec![
                NewBlock::new(
                    "persona",
                    "I am a curious, friendly companion who remembers.",
                ),
                NewBlock::new("human", ""),
            ],
            tools: Vec::new(),
            tool_sources: Vec::new(),
        },
        Template {
            id: "task-queue".into(),
            name: "Task queue agent".into(),
            description: "Keeps a queue of tasks in a `tasks` block (a JSON list) and works \
                          through it with two Python tools, task_queue_push and task_queue_pop."
                .into(),
            loop_style: None,
            blocks: vec![
                NewBlock::new("persona", TASK_PERSONA),
                NewBlock::new("human", ""),
                NewBlock {
                    description: Some(
                        "Your task queue, a JSON list of strings. Change it only with \
                         task_queue_push and task_queue_pop."
                            .into(),
                    ),
                    ..NewBlock::new("tasks", "[]")
                },
            ],
            tools: vec!["task_queue_push".into(), "task_queue_pop".into()],
            // Explicit schemas: creating the agent must not need python3 (its tools then show
            // as unavailable, with the reason, until Python is installed).
            tool_sources: vec![
                NewTool {
                    source_code: PUSH_SOURCE.into(),
                    json_schema: Some(push_schema()),
                    ..NewTool::default()
                },
                NewTool {
                    source_code: POP_SOURCE.into(),
                    json_schema: Some(pop_schema()),
                    ..NewTool::default()
                },
            ],
        },
    ]
}

impl Agents<'_> {
    /// The agent templates, in display order.
    pub fn templates(self) -> Vec<Template> {
        templates()
    }

    /// Creates an agent from template `template` (its id). Fields given in `new` win: a
    /// non-empty name, `system`, `tools` (the template's user tools are still added), and
    /// blocks (a block of `new` replaces the template's block of the same label). The
    /// template's user tools are upserted by name and attached.
    ///
    /// Errors: `not_found` for an unknown template; those of
    /// [`create`](Self::create).
    pub async fn create_from_template(self, template: &str, new: NewAgent) -> Result<AgentState> {
        let t = templates()
            .into_iter()
            .find(|t| t.id == template)
            .ok_or_else(|| Error::not_found("template", template))?;
        for source in &t.tool_sources {
            self.engram.tools().upsert(source.clone()).await?;
        }
        let mut new = new;
        if new.name.trim().is_empty() {
            new.name = t.name.clone();
        }
        if let Some(style) = t.loop_style {
            new.loop_style = style;
        }
        let mut tools = new
            .tools
            .take()
            .unwrap_or_else(|| default_tools(new.loop_style));
        for name in &t.tools {
            if !tools.contains(name) {
                tools.push(name.clone());
            }
        }
        new.tools = Some(tools);
        let mut blocks = t.blocks.clone();
        for b in std::mem::take(&mut new.blocks) {
            match blocks.iter_mut().find(|x| x.label == b.label) {
                Some(slot) => *slot = b,
                None => blocks.push(b),
            }
        }
        new.blocks = blocks;
        self.create(new).await
    }
}
