"""Folders through letta-client 0.1.x (Fern SDK) against `engram serve`: create a folder,
upload Debian's libtasn1 manual (PDF) and a Markdown note, list files and passages, attach it
to an agent (which gets the file tools), open and close files, detach, delete.

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

client = Letta(token=os.environ["ENGRAM_TOKEN"], base_url=os.environ["ENGRAM_URL"])

agent = client.agents.create(
    name="Reader",
    memory_blocks=[{"label": "human", "value": ""}],
    model="openai/gpt-4o-mini",
    embedding="openai/mock-embed",
)
folder = client.folders.create(name="manuals", description="vendor manuals", embedding="openai/mock-embed")
assert folder.name == "manuals" and folder.id.startswith("source-"), folder
assert client.folders.count() == 1

with open(PDF, "rb") as f:
    pdf = client.folders.files.upload(folder.id, file=f)
assert pdf.processing_status == "completed", pdf
assert pdf.total_chunks > 10, pdf
with open(NOTE, "rb") as f:
    note = client.folders.files.upload(folder.id, file=f)
assert note.processing_status == "completed", note

files = client.folders.files.list(folder.id)
assert sorted(f.file_name for f in files) == ["libtasn1.pdf", "note.md"], files

passages = client.folders.passages.list(folder.id, limit=500)
hit = next(p for p in passages if "asn1_parser2tree" in p.text)
assert hit.file_name == "libtasn1.pdf" and hit.metadata["page"] > 1, hit

state = client.agents.folders.attach(agent.id, folder.id)
tools = {t.name for t in state.tools}
assert {"open_files", "grep_files", "semantic_search_files"} <= tools, tools
assert [f.id for f in client.agents.folders.list(agent.id)] == [folder.id]
assert client.folders.agents.list(folder.id) == [agent.id]

listed = client.agents.files.list(agent.id)
assert len(listed.files) == 2 and not any(f.is_open for f in listed.files), listed
closed = client.agents.files.open(agent.id, pdf.id)
assert closed == [], closed
listed = client.agents.files.list(agent.id)
opened = [f for f in listed.files if f.is_open]
assert [f.file_name for f in opened] == ["manuals/libtasn1.pdf"], opened
assert opened[0].folder_name == "manuals" and opened[0].start_line == 1, opened
client.agents.files.close(agent.id, pdf.id)
assert not any(f.is_open for f in client.agents.files.list(agent.id).files)
client.agents.files.open(agent.id, note.id)
assert client.agents.files.close_all(agent.id) == ["manuals/note.md"]

state = client.agents.folders.detach(agent.id, folder.id)
assert "open_files" not in {t.name for t in state.tools}
client.folders.files.delete(folder.id, note.id)
assert [f.file_name for f in client.folders.files.list(folder.id)] == ["libtasn1.pdf"]
client.folders.delete(folder.id)
assert client.folders.count() == 0
print("folders flow OK")
