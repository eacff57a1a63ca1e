"""Sleep-time settings through letta-client 0.1.x (Fern SDK) against `engram serve`: an agent
created with `enable_sleeptime=True` reads back as Letta shows one (`enable_sleeptime` and a
`multi_agent_group` whose `manager_type` is `sleeptime`), chats as before; its group is
listed, tuned (`groups.modify` with a new frequency) and shows the last message a pass read;
deleting the group, or an update, turns the passes off again.

Run by tests/it/letta_client.rs with ENGRAM_URL and ENGRAM_TOKEN set (scripted model behind it).
"""

import os
import time

from letta_client import Letta, SleeptimeManagerUpdate
from letta_client.core.api_error import ApiError

client = Letta(token=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

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

# The group routes tune the passes as Letta's sleep-time agent is tuned: every turn now.
groups = client.groups.list(manager_type="sleeptime")
assert [g.id for g in groups] == [group.id], groups
assert client.groups.list(manager_type="round_robin") == []
tuned = client.groups.modify(
    group.id, manager_config=SleeptimeManagerUpdate(sleeptime_agent_frequency=1)
)
assert tuned.sleeptime_agent_frequency == 1, tuned
assert client.agents.retrieve(agent.id).multi_agent_group.sleeptime_agent_frequency == 1
assert client.groups.retrieve(group.id).last_processed_message_id is None

client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "I like tulips"}])
deadline = time.time() + 30
while client.groups.retrieve(group.id).last_processed_message_id is None:
    assert time.time() < deadline, "no pass read the conversation within 30 s"
    time.sleep(0.2)
last = client.groups.retrieve(group.id).last_processed_message_id
ids = [m.id for m in client.agents.messages.list(agent.id, limit=100)]
assert last in ids, (last, ids)

client.groups.delete(group.id)
off = client.agents.retrieve(agent.id)
assert off.enable_sleeptime is False, off.enable_sleeptime
assert off.multi_agent_group is None, off.multi_agent_group
try:
    client.groups.retrieve(group.id)
    raise AssertionError("a deleted group is still there")
except ApiError as e:
    assert e.status_code == 404, e

on = client.agents.modify(agent.id, enable_sleeptime=True)
assert on.multi_agent_group.id == group.id, on.multi_agent_group
off = client.agents.modify(agent.id, enable_sleeptime=False)
assert off.enable_sleeptime is False, off.enable_sleeptime
assert off.multi_agent_group is None, off.multi_agent_group

plain = client.agents.create(name="Plain", model="openai/gpt-4o-mini", embedding="openai/text-embedding-3-small")
assert not plain.enable_sleeptime and plain.multi_agent_group is None, plain

print("sleeptime flow OK")
