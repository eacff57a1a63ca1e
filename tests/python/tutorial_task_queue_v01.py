"""The Letta memory tutorial's task-queue cells (shared/seeds/002, "Creating custom memory
management tools" onwards) as written, with letta-client 0.1.x against `engram serve` with its
token required. Only the notebook's own client points at the test server; the tool bodies call
the server back at http://localhost:8283 with no token, exactly as the tutorial writes them."""

import json
import os

from letta_client import Letta

client = Letta(token=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])


def print_message(message):
    print(getattr(message, "message_type", type(message).__name__), getattr(message, "content", ""))


def task_queue_push(agent_state: "AgentState", task_description: str):
    """
    Push to a task queue stored in core memory.

    Args:
        task_description (str): A description of the next task you must accomplish.

    Returns:
        Optional[str]: None is always returned as this function
        does not produce a response.
    """

    from letta_client import Letta
    import json

    client = Letta(base_url="http://localhost:8283")

    block = client.agents.blocks.retrieve(
        agent_id=agent_state.id,
        block_label="tasks",
    )
    tasks = json.loads(block.value)
    tasks.append(task_description)

    # update the block value
    client.agents.blocks.modify(
        agent_id=agent_state.id,
        value=json.dumps(tasks),
        block_label="tasks"
    )
    return None


def task_queue_pop(agent_state: "AgentState"):
    """
    Get the next task from the task queue

    Returns:
        Optional[str]: Remaining tasks in the queue
    """

    from letta_client import Letta
    import json

    client = Letta(base_url="http://localhost:8283")

    # get the block
    block = client.agents.blocks.retrieve(
        agent_id=agent_state.id,
        block_label="tasks",
    )
    tasks = json.loads(block.value)
    if len(tasks) == 0:
        return None
    task = tasks[0]

    # update the block value
    remaining_tasks = json.dumps(tasks[1:])
    client.agents.blocks.modify(
        agent_id=agent_state.id,
        value=remaining_tasks,
        block_label="tasks"
    )
    return f"Remaining tasks {remaining_tasks}"


task_queue_pop_tool = client.tools.upsert_from_function(
    func=task_queue_pop
)
task_queue_push_tool = client.tools.upsert_from_function(
    func=task_queue_push
)

task_agent = client.agents.create(
    # The tutorial reads its prompt from task_queue_system_prompt.txt, which it does not ship.
    system="You keep a queue of tasks in your `tasks` memory block. Use task_queue_push to add "
    "tasks and task_queue_pop to take the next one, then do it.",
    memory_blocks=[
        {
          "label": "tasks",
          "value": json.dumps([])
        }
    ],
    model="openai/gpt-4o-mini-2024-07-18",
    embedding="openai/text-embedding-3-small",
    tool_ids=[task_queue_pop_tool.id, task_queue_push_tool.id],
    include_base_tools=False,
    tools=["send_message"]
)

names = [tool.name for tool in task_agent.tools]
assert "task_queue_pop" in names and "task_queue_push" in names, names

assert client.agents.blocks.retrieve(task_agent.id, block_label="tasks").value == "[]"

response_stream = client.agents.messages.create_stream(
    agent_id=task_agent.id,
    messages=[
        {
            "role": "user",
            "content": "Add 'start calling me Charles' and "
            + "'tell me a haiku about my name' as two seperate tasks."
        }
    ]
)

for chunk in response_stream:
    print_message(chunk)

queued = json.loads(client.agents.blocks.retrieve(task_agent.id, block_label="tasks").value)
assert queued == ["start calling me Charles", "tell me a haiku about my name"], queued

response_stream = client.agents.messages.create_stream(
    agent_id=task_agent.id,
    messages=[
        {
            "role": "user",
            "content": "Complete your tasks"
        }
    ]
)

for chunk in response_stream:
    print_message(chunk)

final = client.agents.blocks.retrieve(block_label="tasks", agent_id=task_agent.id).value
assert final == "[]", final
print("AGENT", task_agent.id)
print("tutorial task queue OK")
