"""The Letta tutorial flow with letta-client 1.x (Stainless SDK) against `engram serve`.

Same steps as tutorial_flow_v01.py, in 1.x spelling: `api_key=`, positional ids,
`messages.stream`, `blocks.update`, auto-paging lists.
"""

import os

from letta_client import Letta

client = Letta(api_key=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])
before = list(client.agents.list())

agent = client.agents.create(
    name="simple_agent",
    memory_blocks=[
        {"label": "human", "value": "", "limit": 10000},
        {"label": "persona", "value": "You are a helpful assistant and you always use emojis"},
    ],
    model="openai/gpt-4o-mini",
    embedding="openai/text-embedding-3-small",
    agent_type="memgpt_v2_agent",
)
assert agent.id.startswith("agent-"), agent.id
assert agent.agent_type == "memgpt_agent"
assert "send_message" in [t.name for t in agent.tools]
assert len(list(client.agents.list())) == len(before) + 1

response = client.agents.messages.create(
    agent.id, messages=[{"role": "user", "content": "my name is Bob"}]
)
kinds = [m.message_type for m in response.messages]
print(kinds)
assert "assistant_message" in kinds, kinds
assert response.usage.step_count >= 1
assert response.stop_reason.stop_reason in ("end_turn", "no_tool_call")

human = client.agents.blocks.retrieve("human", agent_id=agent.id).value
assert "Bob" in human, human

client.agents.passages.create(agent.id, text="Bob loves boston terriers", tags=["dogs"])
passages = client.agents.passages.list(agent.id)
assert any("terriers" in p.text for p in passages), passages
found = client.agents.passages.search(agent.id, query="terriers", tags=["dogs"])
assert found.count >= 1 and "terriers" in found.results[0].content

response = client.agents.messages.create(
    agent.id,
    messages=[{"role": "user", "content": "search your archival memory for terriers"}],
)
calls = [m.tool_call.name for m in response.messages if m.message_type == "tool_call_message"]
assert "archival_memory_search" in calls, calls

for stream_tokens in (False, True):
    kinds = []
    for chunk in client.agents.messages.stream(
        agent.id,
        messages=[{"role": "user", "content": "What is my name?"}],
        stream_tokens=stream_tokens,
    ):
        kinds.append(chunk.message_type)
    print(kinds)
    assert "assistant_message" in kinds, kinds
    assert kinds[-2:] == ["stop_reason", "usage_statistics"], kinds

streamed = [
    c.message_type
    for c in client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "hello"}], streaming=True
    )
]
assert streamed[-1] == "usage_statistics", streamed

# Iterating pages follows `after` cursors until an empty page: it must end, and see everything.
history = list(client.agents.messages.list(agent.id, limit=3))
assert any(m.message_type == "user_message" and "my name is Bob" in m.content for m in history)
assert len({(m.id, m.message_type) for m in history}) == len(history)

blocks = list(client.agents.blocks.list(agent.id))
assert client.blocks.retrieve(blocks[0].id).label == blocks[0].label

tasks = client.blocks.create(label="tasks", value="[]")
assert tasks.id in [b.id for b in client.blocks.list(label="tasks")]
state = client.agents.blocks.attach(tasks.id, agent_id=agent.id)
assert "tasks" in [b.label for b in state.memory.blocks]
client.agents.blocks.update("tasks", agent_id=agent.id, value='["call Bob"]')
assert client.blocks.retrieve(tasks.id).value == '["call Bob"]'
client.agents.blocks.detach(tasks.id, agent_id=agent.id)
client.blocks.delete(tasks.id)

assert "archival_memory_search" in [t.name for t in client.tools.list()]

client.agents.delete(agent.id)
assert agent.id not in [a.id for a in client.agents.list()]
print("tutorial flow OK (letta-client 1.x)")
