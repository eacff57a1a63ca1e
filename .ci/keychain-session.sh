#!/usr/bin/env bash
# Runs its arguments inside a session with a working OS keychain, so the real-keychain tests
# (crates/secrets/tests/keychain.rs) run for real on a headless Linux CI machine:
#
#   ENGRAM_REQUIRE_KEYCHAIN=1 .ci/keychain-session.sh cargo test -p engram-secrets
#
# With gnome-keyring and dbus-run-session installed (Debian: gnome-keyring dbus-daemon dbus-bin), it
# starts a private D-Bus session bus and an unlocked gnome-keyring Secret Service whose keyrings live
# in a temporary XDG_DATA_HOME, deleted afterwards. Otherwise it falls back to a fresh kernel keyring
# session (`keyctl session -`, Debian: keyutils), which keyring's kernel store uses.
# ENGRAM_KEYCHAIN_SESSION=kernel forces the kernel keyring (and hides any D-Bus session bus), so CI
# can exercise both stores.
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi

if [ "${_ENGRAM_KEYCHAIN_INNER:-}" = "1" ]; then
  unset _ENGRAM_KEYCHAIN_INNER
  # We are inside dbus-run-session: start the Secret Service and wait until it owns its bus name.
  # The password only protects the throwaway login keyring in the temporary XDG_DATA_HOME.
  printf 'engram-ci' | gnome-keyring-daemon --foreground --unlock --components=secrets \
    >"$XDG_RUNTIME_DIR/gnome-keyring.log" 2>&1 &
  keyring_pid=$!
  secret_service_up() {
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null |
      grep -q 'boolean true'
  }
  for _ in $(seq 1 100); do
    secret_service_up && break
    kill -0 "$keyring_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! secret_service_up; then
    echo "keychain-session: gnome-keyring's Secret Service did not come up within 10 s:" >&2
    cat "$XDG_RUNTIME_DIR/gnome-keyring.log" >&2
    exit 1
  fi
  status=0
  "$@" || status=$?
  kill "$keyring_pid" 2>/dev/null || true
  wait "$keyring_pid" 2>/dev/null || true
  exit "$status"
fi

if [ "${ENGRAM_KEYCHAIN_SESSION:-}" != "kernel" ] && command -v gnome-keyring-daemon >/dev/null &&
  command -v dbus-run-session >/dev/null && command -v dbus-send >/dev/null; then
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/engram-keychain.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -m 700 "$tmp/data" "$tmp/run"
  export XDG_DATA_HOME="$tmp/data" XDG_RUNTIME_DIR="$tmp/run"
  echo "keychain-session: running in a D-Bus session with an unlocked gnome-keyring" >&2
  status=0
  _ENGRAM_KEYCHAIN_INNER=1 dbus-run-session -- bash "$0" "$@" || status=$?
  exit "$status"
fi

if command -v keyctl >/dev/null; then
  echo "keychain-session: running in a fresh kernel keyring session" >&2
  unset DBUS_SESSION_BUS_ADDRESS
  exec keyctl session - "$@"
fi

echo "keychain-session: neither gnome-keyring (with dbus-run-session) nor keyctl is installed;" \
  "install gnome-keyring dbus-daemon dbus-bin, or keyutils" >&2
exit 1
