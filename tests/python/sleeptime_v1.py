"""Sleep-time settings through letta-client 1.x (Stainless SDK) against `engram serve`: an agent
created with `enable_sleeptime=True` reads back as Letta shows one (`enable_sleeptime` and a
`multi_agent_group` whose `manager_type` is `sleeptime`), chats as before, and an update
turns the passes off again.

Run by tests/it/letta_client.rs with ENGRAM_URL and ENGRAM_TOKEN set (scripted model behind it).
"""

import os

from letta_client import Letta

client = Letta(api_key=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

agent = client.agents.create(
    name="Dreamer",
    memory_blocks=[
        {"label": "human", "value": ""},
        {"label": "persona", "value": "I tidy my memory while you are away."},
    ],
    model="openai/gpt-4o-mini",
    embedding="openai/text-embedding-3-small",
    enable_sleeptime=True,
)
assert agent.enable_sleeptime is True, agent.enable_sleeptime
group = agent.multi_agent_group
assert group is not None and group.manager_type == "sleeptime", group
assert group.sleeptime_agent_frequency == 5, group
assert group.manager_agent_id == agent.id, group

again = client.agents.retrieve(agent.id)
assert again.enable_sleeptime is True, again.enable_sleeptime
assert again.multi_agent_group.id == group.id, again.multi_agent_group

response = client.agents.messages.create(
    agent.id, messages=[{"role": "user", "content": "my name is Bob"}]
)
assert response.stop_reason.stop_reason == "end_turn", response.stop_reason
counted = client.agents.retrieve(agent.id).multi_agent_group
assert counted.turns_counter == 1, counted

# 1.x has no groups resource; its raw requests reach Letta's group routes all the same.
listed = client.get("/v1/groups/", cast_to=object)
assert [g["id"] for g in listed] == [group.id], listed
tuned = client.patch(
    f"/v1/groups/{group.id}",
    body={"manager_config": {"manager_type": "sleeptime", "sleeptime_agent_frequency": 3}},
    cast_to=object,
)
assert tuned["sleeptime_agent_frequency"] == 3, tuned
assert client.agents.retrieve(agent.id).multi_agent_group.sleeptime_agent_frequency == 3

off = client.agents.update(agent.id, enable_sleeptime=False)
assert off.enable_sleeptime is False, off.enable_sleeptime
assert off.multi_agent_group is None, off.multi_agent_group

plain = client.agents.create(name="Plain", model="openai/gpt-4o-mini", embedding="openai/text-embedding-3-small")
assert not plain.enable_sleeptime and plain.multi_agent_group is None, plain

print("sleeptime flow OK")
