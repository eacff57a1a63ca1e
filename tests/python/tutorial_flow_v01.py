"""The Letta tutorial flow with letta-client 0.1.x (Fern SDK) against `engram serve`.

Run by tests/it/letta_client.rs with ENGRAM_URL and ENGRAM_TOKEN set; the model behind the server
is Engram's scripted mock (it answers like a memory agent). Calls are written as in the
tutorial notebook (seeds/002), so a failure here is a notebook that would break.
"""

import os

from letta_client import Letta


def print_message(message):
    kind = message.message_type
    if kind == "reasoning_message":
        print("reasoning: " + message.reasoning)
    elif kind == "assistant_message":
        print("agent: " + message.content)
    elif kind == "tool_call_message":
        print("tool call: " + message.tool_call.name + " " + message.tool_call.arguments)
    elif kind == "tool_return_message":
        print("tool return: " + message.tool_return)
    elif kind == "user_message":
        print("user: " + message.content)
    else:
        print(message)


client = Letta(token=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])
before = client.agents.list()

agent_state = client.agents.create(
    name="simple_agent",
    memory_blocks=[
        {"label": "human", "value": "", "limit": 10000},
        {"label": "persona", "value": "You are a helpful assistant and you always use emojis"},
    ],
    model="openai/gpt-4o-mini-2024-07-18",
    embedding="openai/text-embedding-3-small",
)
assert agent_state.id.startswith("agent-"), agent_state.id
assert agent_state.system
assert "archival_memory_search" in [t.name for t in agent_state.tools]
assert {b.label for b in agent_state.memory.blocks} == {"human", "persona"}
assert len(client.agents.list()) == len(before) + 1

response = client.agents.messages.create(
    agent_id=agent_state.id,
    messages=[{"role": "user", "content": "my name is Bob"}],
)
for message in response.messages:
    print_message(message)
assert response.usage.step_count >= 1
assert response.usage.completion_tokens > 0
assert response.stop_reason.stop_reason == "end_turn"
assert any(m.message_type == "assistant_message" for m in response.messages)

human = client.agents.blocks.retrieve(agent_id=agent_state.id, block_label="human").value
assert "Bob" in human, human

client.agents.passages.create(agent_id=agent_state.id, text="Bob loves boston terriers")
passages = client.agents.passages.list(agent_id=agent_state.id)
assert any("terriers" in p.text for p in passages), passages
found = client.agents.passages.search(agent_id=agent_state.id, query="terriers")
assert found.count >= 1 and "terriers" in found.results[0].content

response = client.agents.messages.create(
    agent_id=agent_state.id,
    messages=[{"role": "user", "content": "search your archival memory for terriers"}],
)
for message in response.messages:
    print_message(message)
calls = [m.tool_call.name for m in response.messages if m.message_type == "tool_call_message"]
assert "archival_memory_search" in calls, calls
returns = [m.tool_return for m in response.messages if m.message_type == "tool_return_message"]
assert any("terriers" in r for r in returns), returns

for stream_tokens in (False, True):
    kinds = []
    for chunk in client.agents.messages.create_stream(
        agent_id=agent_state.id,
        messages=[{"role": "user", "content": "What is my name?"}],
        stream_tokens=stream_tokens,
    ):
        print_message(chunk)
        kinds.append(chunk.message_type)
    assert "assistant_message" in kinds, kinds
    assert kinds[-2:] == ["stop_reason", "usage_statistics"], kinds

history = client.agents.messages.list(agent_id=agent_state.id, limit=100)
assert any(m.message_type == "user_message" and "my name is Bob" in m.content for m in history)
page = client.agents.messages.list(agent_id=agent_state.id, limit=2)
assert len(page) <= 2
older = client.agents.messages.list(agent_id=agent_state.id, limit=2, after=page[-1].id)
assert all(m.id != page[-1].id for m in older)

blocks = client.agents.blocks.list(agent_id=agent_state.id)
block_id = blocks[0].id
assert client.blocks.retrieve(block_id).label == blocks[0].label
assert client.agents.core_memory.retrieve(agent_id=agent_state.id).prompt_template

tasks = client.blocks.create(label="tasks", value="[]")
assert tasks.id in [b.id for b in client.blocks.list(label="tasks")]
client.agents.blocks.attach(agent_id=agent_state.id, block_id=tasks.id)
client.agents.blocks.modify(agent_id=agent_state.id, block_label="tasks", value='["call Bob"]')
assert client.blocks.retrieve(tasks.id).value == '["call Bob"]'
client.agents.blocks.detach(agent_id=agent_state.id, block_id=tasks.id)
client.blocks.delete(tasks.id)

assert "send_message" in [t.name for t in client.tools.list()]

client.agents.delete(agent_id=agent_state.id)
assert agent_state.id not in [a.id for a in client.agents.list()]
print("tutorial flow OK (letta-client 0.1.x)")
