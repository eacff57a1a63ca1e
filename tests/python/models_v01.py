"""The models Engram knows, through letta-client 0.1.x (Fern SDK): `client.models.list()`
and the raw `GET /v1/models/embedding` (its method returns nothing) against `engram serve`.

Run by tests/it/letta_client.rs with ENGRAM_URL and ENGRAM_TOKEN set; the server has one agent
on `openai/gpt-4o-mini` with the built-in embedding model.
"""

import json
import os
import urllib.request

from letta_client import Letta

client = Letta(token=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

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
assert chat.model == "gpt-4o-mini" and chat.context_window > 0, chat

request = urllib.request.Request(
    os.environ["ENGRAM_URL"] + "/v1/models/embedding",
    headers={"Authorization": "Bearer " + os.environ["ENGRAM_TOKEN"]},
)
embeddings = json.load(urllib.request.urlopen(request))
first = embeddings[0]
assert first["handle"] == "local/all-minilm-l6-v2", first
assert first["embedding_dim"] == 384, first
print("models flow OK")
