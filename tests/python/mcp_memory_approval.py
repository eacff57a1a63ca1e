"""The official MCP Python SDK (2.x) as a client whose writes wait for the user's approval.

Usage:
  mcp_memory_approval.py ENGRAM_BIN HOME AGENT TIMEOUT_SECS

Launches `engram mcp serve --approve-writes` over stdio and makes four writes, one after the
other, which the test answers through the window's commands on the REST API: the first is
approved (a `view` made while it waits must answer at once), the second denied, the third
approved after a person changed the text it replaces (a conflict), the fourth left to time out.
Prints one `ok STEP` line per check; any failed check raises (exit status 1).
"""

import asyncio
import sys

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def say(line):
    print(line, flush=True)


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def tool(session, name, args, error=False):
    result = await session.call_tool(name, args)
    text = text_of(result)
    assert bool(result.is_error) == error, f"{args}: is_error={result.is_error}: {text}"
    return text


async def main(engram, home, agent, timeout):
    args = ["--home", home, "mcp", "serve", "--agent", agent, "--approve-writes", "--approval-timeout", timeout]
    params = StdioServerParameters(command=engram, args=args, env={"ENGRAM_SECRETS": "memory"})
    async with stdio_client(params) as (r, w):
        info = types.Implementation(name="py-approve", version="1.0")
        async with ClientSession(r, w, client_info=info) as session:
            await session.initialize()

            # 1. Approved; meanwhile the server answers other requests.
            async with anyio.create_task_group() as tg:
                done = {}

                async def write():
                    done["text"] = await tool(session, "memory", {"command": "str_replace", "path": "/memories/human.md", "old_str": "Name: Bob", "new_str": "Name: Robert"})

                tg.start_soon(write)
                await anyio.sleep(0.5)
                with anyio.fail_after(5):
                    shown = await tool(session, "memory", {"command": "view", "path": "/memories/human.md"})
                assert "Name: Bob" in shown and "Name: Robert" not in shown, shown
                assert "text" not in done, done
                say("ok view_while_waiting")
            assert "Edited /memories/human.md" in done["text"], done
            say("ok approved")

            # 2. Denied with a reason.
            denied = await tool(session, "memory", {"command": "str_replace", "path": "/memories/project.md", "old_str": "Ship the MCP server.", "new_str": "Ship it."}, error=True)
            assert "declined" in denied and "not now" in denied, denied
            say("ok denied")

            # 3. Approved after a person changed the text it would replace.
            stale = await tool(session, "memory", {"command": "str_replace", "path": "/memories/human.md", "old_str": "Name: Robert", "new_str": "Name: Rob"}, error=True)
            assert "The user approved, but" in stale and "not found" in stale, stale
            say("ok conflict")

            # 4. Nobody answers.
            late = await tool(session, "add_memory", {"text": "A note nobody approved."}, error=True)
            assert f"did not answer within {timeout} seconds" in late, late
            say("ok timed_out")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
    say("DONE")
