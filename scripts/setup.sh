#!/usr/bin/env bash
# Installs what KV Gate needs to build, run and test, and skips what is already there.
# Idempotent: a second run does nothing but checks. Debian 12 / Ubuntu 22.04+; elsewhere it
# prints what to install by hand (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }

apt_packages=(
  build-essential pkg-config file
  libwebkit2gtk-4.1-dev librsvg2-dev libayatana-appindicator3-dev   # the Tauri window
  webkit2gtk-driver xvfb                                            # end-to-end tests
  sqlite3                                                           # make bench: the .import anchor; e2e: an edit made outside the app; CLI tests: integrity_check
  libdbus-1-dev                                                     # the OS keyring (Secret Service over D-Bus) for endpoint API keys
  dbus-daemon gnome-keyring libsecret-tools                         # CLI tests: a real Secret Service on a private session bus
)
# The standard minisign, for the test that a signed packet verifies with `minisign -V`: added
# where the distribution has it (Debian 11+, Ubuntu universe); the test says it skipped without.
# (The policy is read whole first: `grep -q` ending the pipe early would fail it under pipefail.)
if command -v apt-cache >/dev/null 2>&1 \
  && grep -q 'Candidate: [0-9]' <<<"$(apt-cache policy minisign 2>/dev/null)"; then
  apt_packages+=(minisign)
fi

missing=()
if command -v dpkg >/dev/null 2>&1; then
  for p in "${apt_packages[@]}"; do
    [[ "$p" == \#* ]] && continue
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if ((${#missing[@]})); then
    say "installing Debian packages: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
else
  say "no dpkg: install WebKitGTK 4.1 (dev), WebKitWebDriver and Xvfb by hand (README.md, 'Other platforms')"
fi

if ! command -v cargo >/dev/null 2>&1; then
  say "Rust is missing: install it with rustup (https://rustup.rs), then run make again"
  exit 1
fi

if ! command -v node >/dev/null 2>&1; then
  say "Node.js is missing: install Node.js 20.19 or newer (with npm), then run make again"
  exit 1
fi
node -e '
  const [maj, min] = process.versions.node.split(".").map(Number);
  if (maj < 20 || (maj === 20 && min < 19)) {
    console.error(`setup: Node.js ${process.versions.node} is too old; the UI build needs 20.19 or newer`);
    process.exit(1);
  }'

# npm ci when node_modules is missing or older than the lock file.
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  say "installing UI packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
