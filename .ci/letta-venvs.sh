#!/usr/bin/env bash
# The letta-client SDK virtualenvs the tests drive (tests/it/letta_client.rs), one per SDK version
# named there, made before any test starts and kept outside the clone. Idempotent: a venv whose
# marker is there is left alone. Uses the same lock file and marker as the test's own fallback, so
# a test started by hand meanwhile waits instead of racing. Prints the folder; the tests find it
# through ENGRAM_LETTA_VENVS (tests/run.sh exports it).
set -euo pipefail
cd "$(dirname "$0")/.."
root="${ENGRAM_LETTA_VENVS:-/var/tmp/engram-venvs}"
mkdir -p "$root"
versions=$(sed -n 's/^const SDK_[0-9_]*: &str = "\([^"]*\)";/\1/p' tests/it/letta_client.rs)
[ -n "$versions" ] || { echo "letta-venvs: no SDK versions found in tests/it/letta_client.rs" >&2; exit 1; }
for v in $versions; do
  (
    flock 9
    dir="$root/$v"
    if [ ! -f "$dir/.engram-installed" ] || [ ! -x "$dir/bin/python" ]; then
      rm -rf "$dir"
      python3 -m venv "$dir" >&2
      "$dir/bin/python" -m pip install --disable-pip-version-check -q "letta-client==$v" >&2
      printf '%s' "$v" >"$dir/.engram-installed"
    fi
  ) 9>"$root/$v.lock"
done
echo "$root"
