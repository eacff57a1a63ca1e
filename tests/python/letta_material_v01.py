"""Today's Letta material through letta-client 0.1.x (Fern SDK) against `engram serve`:
path-like block labels, tags and counts, message modify / search / reset, passage modify,
block attach / detach, and an agent file with skills, documents and sleep-time tools.

Run by tests/it/letta_client.rs with ENGRAM_URL and ENGRAM_TOKEN set (scripted model behind it).
"""

import json
import os

from letta_client import Letta, UpdateUserMessage

FIXTURE = os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "agent-files", "memory_tree_skills_files.af"
)

client = Letta(token=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])
agents_before = client.agents.count()
blocks_before = client.blocks.count()

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
assert sorted(b.label for b in ezra.memory.blocks) == [
    "/note_directory",
    "persona",
    "system/human/family",
], ezra.memory.blocks
assert ezra.tags == ["bakery", "prod"], ezra.tags

# Path labels: 0.1.x puts them into the URL as they are.
family = client.agents.blocks.retrieve(agent_id=ezra.id, block_label="system/human/family")
assert family.value == "Leo is 7.", family
client.agents.blocks.modify(agent_id=ezra.id, block_label="system/human/family", value="Leo is 8.")
assert client.agents.blocks.retrieve(agent_id=ezra.id, block_label="system/human/family").value == "Leo is 8."
note = client.agents.blocks.retrieve(agent_id=ezra.id, block_label="/note_directory")
assert note.label == "/note_directory", note
memory = client.agents.core_memory.retrieve(agent_id=ezra.id)
assert isinstance(memory.prompt_template, str) and memory.prompt_template, memory
assert "system/human/family" in [b.label for b in memory.blocks]

# Standalone blocks, attached and detached.
shared = client.blocks.create(label="corrections/ezra-mistakes", value="none yet")
state = client.agents.blocks.attach(agent_id=ezra.id, block_id=shared.id)
assert "corrections/ezra-mistakes" in [b.label for b in state.memory.blocks]
state = client.agents.blocks.detach(agent_id=ezra.id, block_id=shared.id)
assert "corrections/ezra-mistakes" not in [b.label for b in state.memory.blocks]

# Counts and filters.
assert client.agents.count() == agents_before + 2
assert client.blocks.count() == blocks_before + 5
assert [a.id for a in client.agents.list(tags=["prod"])] == [ezra.id]
assert len(client.agents.list(tags=["bakery"])) == 2
assert [a.id for a in client.agents.list(tags=["bakery", "prod"], match_all_tags=True)] == [ezra.id]
assert [a.id for a in client.agents.list(name="Other")] == [other.id]

# Messages: modify, search, reset.
client.agents.messages.create(
    agent_id=ezra.id, messages=[{"role": "user", "content": "my favourite bread is rye"}]
)
listed = client.agents.messages.list(agent_id=ezra.id)
user = next(m for m in listed if m.message_type == "user_message")
changed = client.agents.messages.modify(
    agent_id=ezra.id,
    message_id=user.id,
    request=UpdateUserMessage(content="my favourite bread is spelt"),
)
assert changed.content == "my favourite bread is spelt", changed
hits = client.agents.messages.search(query="spelt", roles=["user"], limit=5)
assert [h.message.id for h in hits] == [user.id], hits
# The old words are gone from the index; with an embedding model the edited message may still
# come back by meaning (bread), but only with its new text.
stale = client.agents.messages.search(query="rye", roles=["user"])
assert all("rye" not in h.message.content for h in stale), stale
state = client.agents.messages.reset(agent_id=ezra.id, add_default_initial_messages=False)
assert state.message_ids == [], state.message_ids
assert user.id in [m.id for m in client.agents.messages.list(agent_id=ezra.id)], "recall keeps it"

# Passages: 0.1.x's modify sends no body of its own; the fields ride as extra body parameters.
created = client.agents.passages.create(agent_id=ezra.id, text="The tulips bloom in April.")
client.agents.passages.modify(
    agent_id=ezra.id,
    memory_id=created[0].id,
    request_options={"additional_body_parameters": {"text": "The tulips bloom in May.", "tags": ["garden"]}},
)
found = client.agents.passages.search(agent_id=ezra.id, query="May")
assert found.count == 1 and found.results[0].tags == ["garden"], found
# With an embedding model the search is hybrid (the nearest passage comes back for any
# query); what matters is that the old text is gone everywhere.
old = client.agents.passages.search(agent_id=ezra.id, query="April")
assert all("April" not in r.content for r in old.results), old

# An agent file with path labels, skills, documents and sleep-time tools, round trip.
with open(FIXTURE, "rb") as f:
    imported = client.agents.import_file(file=f)
ids = imported.agent_ids
assert len(ids) == 2, ids
exported = client.agents.export_file(agent_id=ids[0])  # 0.1.x parses the JSON itself
exported = json.loads(exported) if isinstance(exported, str) else exported
original = json.load(open(FIXTURE))
assert exported["skills"] == original["skills"]
def docs(f):
    # Folders come back live: their names, text and state, in Engram's words.
    return sorted((d["file_name"], d["content"], d["processing_status"]) for d in f["files"])
assert docs(exported) == docs(original), docs(exported)
assert [s["name"] for s in exported["sources"]] == [s["name"] for s in original["sources"]]
assert exported["agents"][0]["compaction_settings"] == original["agents"][0]["compaction_settings"]
assert exported["agents"][0]["enable_sleeptime"] is True
labels = [b["label"] for b in exported["blocks"]]
assert labels == [b["label"] for b in original["blocks"]], labels
assert exported["agents"][0]["llm_config"]["model_endpoint_type"] == "openai"
print("letta material OK")
