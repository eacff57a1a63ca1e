"""The tutorial's custom task-queue tools with letta-client 1.x against `engram serve`.

1.x has no upsert_from_function; `tools.upsert(source_code=…)` is what it wraps in 0.1.x."""

import inspect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from task_queue_common import task_queue_pop, task_queue_push  # noqa: E402

from letta_client import Letta  # noqa: E402

client = Letta(api_key=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

pop_tool = client.tools.upsert(source_code=inspect.getsource(task_queue_pop))
push_tool = client.tools.upsert(source_code=inspect.getsource(task_queue_push))
assert push_tool.name == "task_queue_push", push_tool
assert push_tool.source_type == "python"

agent = client.agents.create(
    name="task_agent",
    memory_blocks=[
        {"label": "human", "value": "Name: Bob"},
        {"label": "persona", "value": "I work through my task queue."},
        {"label": "tasks", "value": "[]"},
    ],
    model="openai/gpt-4o-mini",
    embedding="openai/text-embedding-3-small",
    agent_type="memgpt_v2_agent",
    tool_ids=[pop_tool.id, push_tool.id],
)
names = [t.name for t in agent.tools]
assert "task_queue_push" in names and "task_queue_pop" in names, names
client.agents.tools.detach(pop_tool.id, agent_id=agent.id)
client.agents.tools.attach(pop_tool.id, agent_id=agent.id)


def tasks():
    return json.loads(client.agents.blocks.retrieve("tasks", agent_id=agent.id).value)


for task in ["start calling me Charles", "tell me a haiku about my name"]:
    client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "add task: " + task}]
    )
assert tasks() == ["start calling me Charles", "tell me a haiku about my name"], tasks()

response = client.agents.messages.create(
    agent.id, messages=[{"role": "user", "content": "Complete your tasks"}]
)
calls = [m.tool_call.name for m in response.messages if m.message_type == "tool_call_message"]
assert calls.count("task_queue_pop") >= 2, calls
assert tasks() == [], tasks()
print("task queue flow OK")
