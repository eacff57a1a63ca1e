"""The official MCP Python SDK (2.x) as a client of `engram mcp serve`.

Usage:
  mcp_memory_client.py stdio ENGRAM_BIN HOME AGENT
  mcp_memory_client.py http URL WRITER_TOKEN READER_TOKEN

Runs the memory tool's commands, archival and recall search, reads a block as a resource and
subscribes to it (stdio: resources/subscribe on a ClientSession; http: subscriptions/listen on a
Client), prints READY and waits for the change the test then makes by running the agent. Prints
one `ok STEP` line per check; any failed check raises (exit status 1).
"""

import asyncio
import sys

import anyio
import httpx2
import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

URI = "engram-memory:///memories/human.md"


def say(line):
    print(line, flush=True)


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def tool(session, args, error=False):
    result = await session.call_tool("memory" if "command" in args else args.pop("tool"), args)
    text = text_of(result)
    assert bool(result.is_error) == error, f"{args}: is_error={result.is_error}: {text}"
    return text


async def checks(session):
    tools = await session.list_tools()
    names = sorted(t.name for t in tools.tools)
    assert names == ["add_memory", "memory", "search_conversation", "search_memory"], names
    say("ok list_tools")

    listing = await tool(session, {"command": "view", "path": "/memories"})
    assert "/memories/human.md" in listing and "/memories/project.md" in listing, listing
    shown = await tool(session, {"command": "view", "path": "/memories/human.md"})
    assert "     1\tName: Bob\n" in shown, shown
    say("ok view")

    await tool(session, {"command": "create", "path": "/memories/notes.md", "file_text": "Meeting on Friday.\n"})
    again = await tool(session, {"command": "create", "path": "/memories/notes.md", "file_text": "x"}, error=True)
    assert "already exists" in again, again
    say("ok create")

    edited = await tool(session, {"command": "str_replace", "path": "/memories/human.md", "old_str": "Name: Bob", "new_str": "Name: Robert"})
    assert "version" in edited, edited
    missing = await tool(session, {"command": "str_replace", "path": "/memories/human.md", "old_str": "Alice", "new_str": "x"}, error=True)
    assert "was not found" in missing, missing
    twice = await tool(session, {"command": "str_replace", "path": "/memories/human.md", "old_str": "Likes: tea", "new_str": "x"}, error=True)
    assert "occurs 2 times" in twice, twice
    say("ok str_replace")

    over = await tool(session, {"command": "insert", "path": "/memories/project.md", "insert_line": -1, "insert_text": "x" * 80}, error=True)
    assert "Exceeds 60 character limit (requested 101)" in over, over
    say("ok insert_limit")

    saved = await tool(session, {"tool": "add_memory", "text": "The deploy key rotates every 90 days.", "tags": ["ops"]})
    assert "Saved" in saved, saved
    found = await tool(session, {"tool": "search_memory", "query": "deploy key", "tags": ["ops"]})
    assert "rotates every 90 days" in found, found
    say("ok archival")

    said = await tool(session, {"tool": "search_conversation", "query": "oolong"})
    assert "oolong" in said, said
    say("ok recall")

    read = await session.read_resource(URI)
    assert read.contents[0].text.startswith("Name: Robert"), read
    say("ok read_resource")


async def reader_checks(url, token):
    async with Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}))) as reader:
        shown = await tool(reader, {"command": "view", "path": "/memories/human.md"})
        assert "Name: Robert" in shown, shown
        refused = await tool(reader, {"command": "str_replace", "path": "/memories/human.md", "old_str": "Robert", "new_str": "Rob"}, error=True)
        assert "may only read" in refused, refused
    say("ok read_only")
    async with httpx2.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"Accept": "application/json, text/event-stream"}
        wrong = await http.post(url, json=body, headers={**headers, "Authorization": "Bearer wrong"})
        assert wrong.status_code == 401, wrong.status_code
        foreign = await http.post(url, json=body, headers={**headers, "Authorization": f"Bearer {token}", "Origin": "http://evil.example"})
        assert foreign.status_code == 403, foreign.status_code
    say("ok http_guard")


async def over_stdio(engram, home, agent):
    updated = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification) and str(message.params.uri) == URI:
            updated.set()

    params = StdioServerParameters(command=engram, args=["--home", home, "mcp", "serve", "--agent", agent], env={"ENGRAM_SECRETS": "memory", "ENGRAM_MCP_MEMORY_POLL_MS": "100"})
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w, message_handler=on_message, client_info=types.Implementation(name="py-stdio", version="1.0")) as session:
            init = await session.initialize()
            say("protocol " + init.protocol_version)
            await checks(session)
            await session.subscribe_resource(URI)
            say("READY")
            with anyio.fail_after(30):
                await updated.wait()
            read = await session.read_resource(URI)
            say("NOTIFIED " + read.contents[0].text.replace("\n", "|"))


async def over_http(url, writer, reader):
    client = Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {writer}"})))
    async with client:
        say("protocol " + client.session.protocol_version)
        await checks(client)
        await reader_checks(url, reader)
        async with client.listen(resource_subscriptions=[URI]) as sub:
            say("READY")
            with anyio.fail_after(30):
                async for event in sub:
                    if str(getattr(event, "uri", "")) == URI:
                        break
        read = await client.read_resource(URI)
        say("NOTIFIED " + read.contents[0].text.replace("\n", "|"))


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    if mode == "stdio":
        asyncio.run(over_stdio(*rest))
    else:
        asyncio.run(over_http(*rest))
    say("DONE")
