#!/usr/bin/env bash
# The README's test command: sets up what the tests need and runs all of them.
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/setup.sh

# Rust: unit tests of every crate and the whole-system tests in tests/, inside a session with a
# real keychain (the secrets crate's test round-trips a key through it).
if cargo nextest --version >/dev/null 2>&1; then
  runner=(cargo nextest run --workspace --locked --no-fail-fast)
else
  runner=(cargo test --workspace --locked --no-fail-fast)
fi
# The whole-system tests run the real `engram` binary; `cargo test` alone does not build it.
cargo build --workspace --bins --locked
bash .ci/keychain-session.sh "${runner[@]}"
