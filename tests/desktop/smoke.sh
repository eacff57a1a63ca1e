#!/usr/bin/env bash
# Smoke test of the real desktop binary: under Xvfb, in a D-Bus session (the single-instance
# plugin uses the session bus), driven through tauri-driver + WebKitWebDriver by WebdriverIO.
# The scripted model plays the LLM; a throwaway ENGRAM_HOME holds one agent made with the CLI.
#
# Usage: tests/desktop/smoke.sh TARGET_DIR [SCREENSHOT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${1:?target dir}
shots=${2:-}

scratch=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

"$target/debug/mock-llm" --port 0 --print-port-file "$scratch/port" 2>"$scratch/mock.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$scratch/port" ] && break; sleep 0.1; done
mock="http://127.0.0.1:$(cat "$scratch/port")/v1"

export ENGRAM_HOME="$scratch/home" ENGRAM_SECRETS=memory OPENAI_API_KEY= OPENAI_BASE_URL= ANTHROPIC_API_KEY=
# Keys live in the (in-memory) keychain of one process, so the agent's provider is a local URL
# that needs none.
"$target/debug/engram" provider set mock --base-url "$mock" >/dev/null
"$target/debug/engram" agent create --name "Smoke Sam" --model mock/mock-small \
  --block "persona=I am Sam." --block "human=" >/dev/null

# A second engine served over HTTPS with a self-signed certificate: the server the window
# connects to at the end (Settings → Server), with an agent of its own. It keeps its agents on
# PostgreSQL, as a team's server would: a cluster of its own in a temp dir on 127.0.0.1 (run
# as `nobody` when we are root, since PostgreSQL refuses root), stopped on exit.
pgbin=${ENGRAM_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
pgdir=$(mktemp -d /tmp/engram-smoke-pg.XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown nobody: "$pgdir"
  as_pg=(runuser -u nobody --)
fi
stop_pg() {
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$pgdir"
}
trap 'cleanup; stop_pg' EXIT
"${as_pg[@]}" "$pgbin/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 >/dev/null
pgport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w \
  -o "-p $pgport -k $pgdir -c listen_addresses=127.0.0.1" start >/dev/null
server=("$target/debug/engram" --database "postgres://postgres@127.0.0.1:$pgport/postgres")
ENGRAM_HOME="$scratch/server" "${server[@]}" provider set mock --base-url "$mock" >/dev/null
ENGRAM_HOME="$scratch/server" "${server[@]}" agent create --name "Remote Rita" \
  --model mock/mock-small --block "persona=I am Rita." --block "human=" >/dev/null
ENGRAM_HOME="$scratch/server" "${server[@]}" serve --port 0 --tls-self-signed --show-token \
  >"$scratch/serve.out" 2>"$scratch/serve.log" &
pids+=($!)
for _ in $(seq 200); do grep -q '^token: ' "$scratch/serve.out" 2>/dev/null && break; sleep 0.1; done
REMOTE_URL=$(sed -n 's/^listening on //p' "$scratch/serve.out")
REMOTE_FINGERPRINT=$(sed -n 's/^certificate sha256: //p' "$scratch/serve.out")
REMOTE_TOKEN=$(sed -n 's/^token: //p' "$scratch/serve.out")
[ -n "$REMOTE_TOKEN" ] || { cat "$scratch/serve.log" >&2; echo "engram serve did not start" >&2; exit 1; }
export REMOTE_URL REMOTE_FINGERPRINT REMOTE_TOKEN

# The debug build's save dialog returns this path instead of asking (release builds ignore it).
export ENGRAM_TEST_SAVE_PATH="$scratch/export.af"
export ENGRAM_DESKTOP_BIN="$target/debug/engram-desktop" SMOKE_SCREENSHOTS="$shots"
dbus-run-session -- xvfb-run -a -s "-screen 0 1280x800x24" \
  node ui/e2e-desktop/smoke.mjs
