"""The custom-memory tutorial (shared/seeds/004) cell by cell with letta-client 0.1.x against
`engram serve`. Changed from the notebook only where it cannot run anywhere today: the client gets
the test server's URL and token, `letta/letta-free` (Letta's hosted model) becomes the scripted
model, the system prompt file it reads is not shipped, the cells that import the `letta` server
package or use an undefined `chat_memory` are left out, and the last cell's
`core_memory.retrieve_block` is spelled as 0.1.x spells it (`agents.blocks.retrieve`)."""

import json
import os

from letta_client import CreateBlock, Letta, MessageCreate

client = Letta(token=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

# Section 1: memory blocks are rows of their own.
human_memory_block = client.blocks.create(
    label="human",
    value="Name: Bob",
)
persona_memory_block = client.blocks.create(
    label="persona",
    value="You are a helpful assistant",
)
labels = sorted(b.label for b in client.blocks.list())
assert "human" in labels and "persona" in labels, labels
humans = client.blocks.list(label="human")
assert [b.value for b in humans] == ["Name: Bob"], humans

# Section 2: task-queue tools.
from typing import Optional, List, TYPE_CHECKING  # noqa: E402,F401
import json  # noqa: E402,F811

if TYPE_CHECKING:
    from letta import AgentState  # noqa: F401


def task_queue_push(agent_state: "AgentState", task_description: str):
    """
    Push to a task queue stored in core memory.

    Args:
        task_description (str): A description of the next task you must accomplish.

    Returns:
        Optional[str]: None is always returned as this function
        does not produce a response.
    """
    import json
    tasks = json.loads(agent_state.memory.get_block("tasks").value)
    tasks.append(task_description)
    agent_state.memory.update_block_value("tasks", json.dumps(tasks))
    return None


def task_queue_pop(agent_state: "AgentState"):
    """
    Get the next task from the task queue

    Returns:
        Optional[str]: The description of the task popped from the
        queue, if there are still tasks in queue. Otherwise, returns
        None (the task queue is empty)
    """
    import json
    tasks = json.loads(agent_state.memory.get_block("tasks").value)
    if len(tasks) == 0:
        return None
    task = tasks[0]
    print("CURRENT TASKS: ", tasks)
    agent_state.memory.update_block_value("tasks", json.dumps(tasks[1:]))
    return task


push_task_tool = client.tools.upsert_from_function(func=task_queue_push)
pop_task_tool = client.tools.upsert_from_function(func=task_queue_pop)

task_agent_name = "task_agent"

# delete agent if exists (run twice: the second run finds the first one's agent)
for _ in range(2):
    agents = client.agents.list(name=task_agent_name)
    if len(agents) > 0:
        client.agents.delete(agent_id=agents[0].id)

    task_agent_state = client.agents.create(
        name=task_agent_name,
        system="You are an agent that keeps a queue of tasks in its `tasks` block and clears it.",
        memory_blocks=[
            CreateBlock(
                label="human",
                value="My name is Sarah",
            ),
            CreateBlock(
                label="persona",
                value="You are an agent that must clear its tasks.",
            ),
            CreateBlock(
                label="tasks",
                value="[]",
            ),
        ],
        tool_ids=[push_task_tool.id, pop_task_tool.id],
        model="openai/gpt-4o-mini",
        embedding="openai/text-embedding-3-small",
    )
assert len(client.agents.list(name=task_agent_name)) == 1

response = client.agents.messages.create(
    agent_id=task_agent_state.id,
    messages=[
        MessageCreate(
            role="user",
            content="Add 'start calling me Charles' and 'tell me a haiku about my name' as two separate tasks.",
        )
    ],
)
tasks = client.agents.blocks.retrieve(agent_id=task_agent_state.id, block_label="tasks").value
assert json.loads(tasks) == ["start calling me Charles", "tell me a haiku about my name"], tasks

response = client.agents.messages.create(
    agent_id=task_agent_state.id,
    messages=[
        MessageCreate(
            role="user",
            content="complete your tasks",
        )
    ],
)
response = client.agents.messages.create(
    agent_id=task_agent_state.id,
    messages=[
        MessageCreate(
            role="user",
            content="keep going",
        )
    ],
)
block = client.agents.blocks.retrieve(agent_id=task_agent_state.id, block_label="tasks")
assert block.value == "[]", block.value
print("custom memory tutorial OK")
