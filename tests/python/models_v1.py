"""The models Engram knows, through letta-client 1.x (Stainless SDK): `client.models.list()`
and `client.models.embeddings.list()` against `engram serve`.

Run by tests/it/letta_client.rs with ENGRAM_URL and ENGRAM_TOKEN set; the server has one agent
on `openai/gpt-4o-mini` with the built-in embedding model.
"""

import os

from letta_client import Letta

client = Letta(api_key=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

client.agents.create(
    name="Lister",
    memory_blocks=[{"label": "human", "value": ""}],
    model="openai/gpt-4o-mini",
    embedding="local/all-minilm-l6-v2",
)
models = client.models.list()
handles = [m.handle for m in models]
assert "openai/gpt-4o-mini" in handles, handles
chat = next(m for m in models if m.handle == "openai/gpt-4o-mini")
assert chat.name == "gpt-4o-mini" and chat.context_window > 0, chat

embeddings = client.models.embeddings.list()
first = embeddings[0]
assert first.handle == "local/all-minilm-l6-v2", first
assert first.embedding_dim == 384, first
print("models flow OK")
