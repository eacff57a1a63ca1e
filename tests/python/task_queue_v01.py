"""The tutorial's custom task-queue tools with letta-client 0.1.x against `engram serve`:
upsert_from_function, create an agent with the tools and a `tasks` block, chat, check the block."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from task_queue_common import task_queue_pop, task_queue_push  # noqa: E402

from letta_client import Letta  # noqa: E402

client = Letta(token=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

pop_tool = client.tools.upsert_from_function(func=task_queue_pop)
push_tool = client.tools.upsert_from_function(func=task_queue_push)
assert push_tool.name == "task_queue_push", push_tool
assert push_tool.json_schema["parameters"]["required"] == ["task_description"], push_tool.json_schema
assert push_tool.id.startswith("tool-")
# Upserting again keeps the tool (same id).
assert client.tools.upsert_from_function(func=task_queue_push).id == push_tool.id
assert "task_queue_pop" in [t.name for t in client.tools.list()]

agent = client.agents.create(
    name="task_agent",
    memory_blocks=[
        {"label": "human", "value": "Name: Bob"},
        {"label": "persona", "value": "I work through my task queue."},
        {"label": "tasks", "value": "[]"},
    ],
    model="openai/gpt-4o-mini",
    embedding="openai/text-embedding-3-small",
    tool_ids=[pop_tool.id],
)
agent = client.agents.tools.attach(agent_id=agent.id, tool_id=push_tool.id)
names = [t.name for t in client.agents.tools.list(agent_id=agent.id)]
assert "task_queue_push" in names and "task_queue_pop" in names, names


def tasks():
    return json.loads(client.agents.blocks.retrieve(agent_id=agent.id, block_label="tasks").value)


for task in ["start calling me Charles", "tell me a haiku about my name"]:
    response = client.agents.messages.create(
        agent_id=agent.id, messages=[{"role": "user", "content": "add task: " + task}]
    )
    calls = [m.tool_call.name for m in response.messages if m.message_type == "tool_call_message"]
    assert "task_queue_push" in calls, calls
assert tasks() == ["start calling me Charles", "tell me a haiku about my name"], tasks()

response = client.agents.messages.create(
    agent_id=agent.id, messages=[{"role": "user", "content": "Complete your tasks"}]
)
calls = [m.tool_call.name for m in response.messages if m.message_type == "tool_call_message"]
assert calls.count("task_queue_pop") >= 2, calls
assert tasks() == [], tasks()
print("task queue flow OK")
