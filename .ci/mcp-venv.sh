#!/usr/bin/env bash
# The official MCP Python SDK (PyPI `mcp`, 2.x) the memory-server tests drive as a client
# (tests/it/mcp_memory_python.rs, tests/python/mcp_memory_client.py), in a venv made once and kept
# outside the clone. Idempotent and flock-guarded like letta-venvs.sh: a venv whose marker names
# the pinned version is left alone. Prints the venv's python; the tests find it through
# ENGRAM_MCP_PYTHON (tests/run.sh exports it).
set -euo pipefail
version="2.3.0"
root="${ENGRAM_VENVS:-/var/tmp/engram-venvs}"
mkdir -p "$root"
dir="$root/mcp-$version"
(
  flock 9
  if [ "$(cat "$dir/.engram-installed" 2>/dev/null)" != "$version" ] || [ ! -x "$dir/bin/python" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    "$dir/bin/python" -m pip install --disable-pip-version-check -q "mcp==$version" >&2
    printf '%s' "$version" >"$dir/.engram-installed"
  fi
) 9>"$root/mcp-$version.lock"
echo "$dir/bin/python"
