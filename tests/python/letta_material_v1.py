"""Today's Letta material through letta-client 1.x (Stainless SDK) against `engram serve`:
the same steps as letta_material_v01.py in 1.x spelling (percent-encoded path labels,
`blocks.update`, `messages.search` at `/v1/messages/search`, auto-paging lists).
"""

import json
import os

from letta_client import Letta

FIXTURE = os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "agent-files", "memory_tree_skills_files.af"
)

client = Letta(api_key=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

ezra = client.agents.create(
    name="Ezra",
    tags=["bakery", "prod"],
    memory_blocks=[
        {"label": "system/human/family", "value": "Leo is 7."},
        {"label": "/note_directory", "value": "- reference/faq"},
        {"label": "persona", "value": "I am Ezra."},
    ],
    model="openai/gpt-4o-mini",
    embedding="openai/text-embedding-3-small",
)
other = client.agents.create(
    name="Other",
    tags=["bakery"],
    memory_blocks=[{"label": "human", "value": ""}],
    model="openai/gpt-4o-mini",
)
assert ezra.tags == ["bakery", "prod"], ezra.tags

# Path labels: 1.x percent-encodes them into one path segment.
family = client.agents.blocks.retrieve("system/human/family", agent_id=ezra.id)
assert family.value == "Leo is 7.", family
client.agents.blocks.update("system/human/family", agent_id=ezra.id, value="Leo is 8.")
assert client.agents.blocks.retrieve("system/human/family", agent_id=ezra.id).value == "Leo is 8."
assert client.agents.blocks.retrieve("/note_directory", agent_id=ezra.id).label == "/note_directory"
labels = [b.label for b in client.agents.blocks.list(ezra.id)]
assert labels == ["system/human/family", "/note_directory", "persona"], labels

shared = client.blocks.create(label="corrections/ezra-mistakes", value="none yet")
client.agents.blocks.attach(shared.id, agent_id=ezra.id)
assert "corrections/ezra-mistakes" in [b.label for b in client.agents.blocks.list(ezra.id)]
client.agents.blocks.detach(shared.id, agent_id=ezra.id)
assert "corrections/ezra-mistakes" not in [b.label for b in client.agents.blocks.list(ezra.id)]

# Filters.
assert [a.id for a in client.agents.list(tags=["prod"])] == [ezra.id]
assert len(list(client.agents.list(tags=["bakery"]))) == 2
assert [a.id for a in client.agents.list(tags=["bakery", "prod"], match_all_tags=True)] == [ezra.id]
assert [a.id for a in client.agents.list(name="Other")] == [other.id]

# Counts: 1.x has no count methods; the routes are reached through the client's own calls.
assert client.get("/v1/agents/count", cast_to=int) == 2
assert client.get("/v1/agents/count", cast_to=int, options={"params": {"tags": ["prod"]}}) == 1
assert client.get("/v1/blocks/count", cast_to=int) == 5

# Messages: modify (through the client's own call, as 1.x dropped the method), search, reset.
client.agents.messages.create(ezra.id, messages=[{"role": "user", "content": "my favourite bread is rye"}])
user = next(m for m in client.agents.messages.list(ezra.id) if m.message_type == "user_message")
changed = client.patch(
    f"/v1/agents/{ezra.id}/messages/{user.id}",
    cast_to=object,
    body={"message_type": "user_message", "content": "my favourite bread is spelt"},
)
assert changed["content"] == "my favourite bread is spelt", changed
hits = client.messages.search(query="spelt", agent_id=ezra.id)
assert user.id in [h.message_id for h in hits], hits
assert client.get(f"/v1/agents/{ezra.id}/messages/count", cast_to=int) >= 2
state = client.agents.messages.reset(ezra.id, add_default_initial_messages=False)
assert state.message_ids == [], state.message_ids
assert user.id in [m.id for m in client.agents.messages.list(ezra.id)], "recall keeps it"

# Passages: 1.x has no modify method; the route is reachable through the client's own call.
created = client.agents.passages.create(ezra.id, text="The tulips bloom in April.")
pid = created[0].id if isinstance(created, list) else created.id
client.patch(
    f"/v1/agents/{ezra.id}/archival-memory/{pid}",
    cast_to=object,
    body={"text": "The tulips bloom in May."},
)
found = client.agents.passages.search(ezra.id, query="May")
assert found.count == 1, found
assert client.get(f"/v1/agents/{ezra.id}/archival-memory/count", cast_to=int) == 1

# An agent file with path labels, skills, documents and sleep-time tools, round trip.
with open(FIXTURE, "rb") as f:
    imported = client.agents.import_file(file=f)
ids = imported.agent_ids
assert len(ids) == 2, ids
exported = json.loads(client.agents.export_file(ids[0]))
original = json.load(open(FIXTURE))
assert exported["skills"] == original["skills"]
def docs(f):
    # Folders come back live: their names, text and state, in Engram's words.
    return sorted((d["file_name"], d["content"], d["processing_status"]) for d in f["files"])
def links(f):
    return [(l["file_name"], l["is_open"], l["start_line"], l["end_line"]) for l in f["agents"][0]["files_agents"]]
assert docs(exported) == docs(original), docs(exported)
assert exported["mcp_servers"] == original["mcp_servers"]
assert links(exported) == links(original), links(exported)
assert [b["label"] for b in exported["blocks"]] == [b["label"] for b in original["blocks"]]
print("letta material OK")
