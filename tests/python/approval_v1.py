"""Tool calls a person approves, with letta-client 1.x against `engram serve`: the agent's
`requires_approval` rule pauses the run (stop reason `requires_approval`, an
`approval_request_message`), an `approval` message with `approvals` approves, and the older
`approve`/`reason` shape denies; the model reads the reason."""

import os

from letta_client import Letta

client = Letta(api_key=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

agent = client.agents.create(
    name="careful",
    memory_blocks=[
        {"label": "human", "value": ""},
        {"label": "persona", "value": "I ask before I write things down."},
    ],
    model="openai/gpt-4o-mini",
    embedding="openai/text-embedding-3-small",
    tool_rules=[{"type": "requires_approval", "tool_name": "core_memory_append"}],
)
rules = [r.type for r in agent.tool_rules]
assert "requires_approval" in rules, agent.tool_rules


def human():
    return client.agents.blocks.retrieve("human", agent_id=agent.id).value


response = client.agents.messages.create(
    agent.id, messages=[{"role": "user", "content": "my name is Bob"}]
)
assert response.stop_reason.stop_reason == "requires_approval", response.stop_reason
requests = [m for m in response.messages if m.message_type == "approval_request_message"]
assert len(requests) == 1, response.messages
request = requests[0]
assert request.tool_call.name == "core_memory_append", request.tool_call
assert human() == "", human()

response = client.agents.messages.create(
    agent.id,
    messages=[
        {
            "type": "approval",
            "approvals": [
                {"type": "approval", "tool_call_id": request.tool_call.tool_call_id, "approve": True}
            ],
        }
    ],
)
assert response.stop_reason.stop_reason == "end_turn", response.stop_reason
assert "Bob" in human(), human()
returns = [m for m in response.messages if m.message_type == "tool_return_message"]
assert returns and returns[0].status == "success", returns

response = client.agents.messages.create(
    agent.id, messages=[{"role": "user", "content": "my name is Ann"}]
)
assert response.stop_reason.stop_reason == "requires_approval", response.stop_reason
request = [m for m in response.messages if m.message_type == "approval_request_message"][0]
response = client.agents.messages.create(
    agent.id,
    messages=[
        {
            "type": "approval",
            "approve": False,
            "approval_request_id": request.id,
            "reason": "keep the old name",
        }
    ],
)
assert response.stop_reason.stop_reason == "end_turn", response.stop_reason
returns = [m for m in response.messages if m.message_type == "tool_return_message"]
assert returns[0].status == "error" and "keep the old name" in returns[0].tool_return, returns
assert "Ann" not in human(), human()
print("approval flow OK")
