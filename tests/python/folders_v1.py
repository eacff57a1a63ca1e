"""Folders through letta-client 1.x (Stainless SDK) against `engram serve`: create a folder,
upload Debian's libtasn1 manual (PDF) and a Markdown note, list files, attach it to an agent
(which gets the file tools), open and close files, detach, delete.

Run by tests/it/letta_client.rs with ENGRAM_URL and ENGRAM_TOKEN set; the PDF is the one
Debian's libtasn1-doc installs (.ci/setup.sh).
"""

import os
import tempfile

from letta_client import Letta

PDF = "/usr/share/doc/libtasn1-doc/libtasn1.pdf"
NOTE = os.path.join(tempfile.mkdtemp(), "note.md")
with open(NOTE, "w") as f:
    f.write("# Groups\n\nthe shadow group reads /etc/shadow\n")

client = Letta(api_key=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

agent = client.agents.create(
    name="Reader",
    memory_blocks=[{"label": "human", "value": ""}],
    model="openai/gpt-4o-mini",
    embedding="openai/mock-embed",
)
folder = client.folders.create(name="manuals", embedding="openai/mock-embed")
assert folder.name == "manuals" and folder.embedding_config.handle == "openai/mock-embed", folder
folder = client.folders.update(folder.id, instructions="Cite pages.")
assert folder.instructions == "Cite pages.", folder

with open(PDF, "rb") as f:
    pdf = client.folders.files.upload(folder.id, file=f)
assert pdf.processing_status == "completed", pdf
assert pdf.total_chunks > 10, pdf
with open(NOTE, "rb") as f:
    note = client.folders.files.upload(folder.id, file=f)
again = None
with open(NOTE, "rb") as f:
    again = client.folders.files.upload(folder.id, file=f)
assert again.id == note.id, (again, note)

names = sorted(f.file_name for f in client.folders.files.list(folder.id))
assert names == ["libtasn1.pdf", "note.md"], names
retrieved = client.folders.files.retrieve(note.id, folder_id=folder.id, include_content=True)
assert "the shadow group" in retrieved.content, retrieved
assert [f.name for f in client.folders.list()] == ["manuals"]

state = client.agents.folders.attach(folder.id, agent_id=agent.id)
tools = {t.name for t in state.tools}
assert {"open_files", "grep_files", "semantic_search_files"} <= tools, tools
assert [f.id for f in client.agents.folders.list(agent.id)] == [folder.id]
assert client.folders.agents.list(folder.id) == [agent.id]

files = list(client.agents.files.list(agent.id))
assert len(files) == 2 and not any(f.is_open for f in files), files
assert client.agents.files.open(pdf.id, agent_id=agent.id) == []
opened = [f for f in client.agents.files.list(agent.id) if f.is_open]
assert [f.file_name for f in opened] == ["manuals/libtasn1.pdf"], opened
client.agents.files.close(pdf.id, agent_id=agent.id)
assert not any(f.is_open for f in client.agents.files.list(agent.id))
client.agents.files.open(note.id, agent_id=agent.id)
assert client.agents.files.close_all(agent.id) == ["manuals/note.md"]

state = client.agents.folders.detach(folder.id, agent_id=agent.id)
assert "open_files" not in {t.name for t in state.tools}
client.folders.files.delete(note.id, folder_id=folder.id)
assert [f.file_name for f in client.folders.files.list(folder.id)] == ["libtasn1.pdf"]
client.folders.delete(folder.id)
assert list(client.folders.list()) == []
print("folders flow OK")
