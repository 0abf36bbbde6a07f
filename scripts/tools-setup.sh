#!/usr/bin/env bash
# Installs the real benchmark tools whose result files KV Gate imports, each at an exact pinned
# version in its own venv under .tools/<tool>/ (ignored by git), for the recordings in
# fixtures/real-tools/ (scripts/record-real-tools.sh) and the live interop checks in tests/tools/.
# Idempotent: a tool whose venv already holds the pinned version is skipped.
#
#   scripts/tools-setup.sh                 # all tools (inference-perf skipped without Python >= 3.12)
#   scripts/tools-setup.sh aiperf          # only the named tools: a tool that cannot be installed fails
#
# Tools: aiperf guidellm inference-perf lm-eval inspect-ai. guidellm pulls torch with its CUDA
# wheels (~6 GB). Python: $PYTHON (default python3) for every tool but inference-perf, which needs
# Python >= 3.12: $PYTHON312, else the first python3.1x >= 3.12 found on PATH or under pyenv.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'tools-setup: %s\n' "$*"; }
warn() { printf 'tools-setup: WARNING: %s\n' "$*" >&2; }

ALL_TOOLS=(aiperf guidellm inference-perf lm-eval inspect-ai)
# tool -> pip requirement (exact pin), distribution name, minimum Python (major.minor)
declare -A SPEC=(
  [aiperf]='aiperf==0.13.0'
  [guidellm]='guidellm==0.8.1'
  [inference-perf]='inference-perf==0.7.0'
  [lm-eval]='lm-eval[api]==0.4.13'
  [inspect-ai]='inspect-ai==0.3.285'
)
# tool -> further pinned requirements it needs at run time (Inspect's OpenAI-compatible provider
# imports the openai package, which inspect-ai does not depend on)
declare -A EXTRA=([inspect-ai]='openai==3.63.0')
declare -A DIST=([aiperf]=aiperf [guidellm]=guidellm [inference-perf]=inference-perf [lm-eval]=lm-eval [inspect-ai]=inspect-ai)
declare -A MINPY=([aiperf]=3.10 [guidellm]=3.10 [inference-perf]=3.12 [lm-eval]=3.10 [inspect-ai]=3.10)

root=${KVGATE_TOOLS_DIR:-.tools}  # another folder only for testing this script
PYTHON=${PYTHON:-python3}

explicit=1
if [ $# -eq 0 ]; then set -- "${ALL_TOOLS[@]}"; explicit=0; fi
for t in "$@"; do
  [ -n "${SPEC[$t]:-}" ] || { printf 'tools-setup: ERROR: unknown tool %q (known: %s)\n' "$t" "${ALL_TOOLS[*]}" >&2; exit 2; }
done

# py_ok PY MIN: PY runs, is >= MIN and can make venvs.
py_ok() {
  "$1" - "$2" >/dev/null 2>&1 <<'EOF'
import sys, venv, ensurepip  # noqa: F401
want = tuple(int(x) for x in sys.argv[1].split("."))
sys.exit(0 if sys.version_info[:2] >= want else 1)
EOF
}
# find_python MIN: prints a Python >= MIN, or nothing.
find_python() {
  local min=$1 c cands=()
  if [ "$min" = 3.12 ]; then
    [ -n "${PYTHON312:-}" ] && cands+=("$PYTHON312")
    cands+=("$PYTHON" python3.14 python3.13 python3.12)
    local proot; proot=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
    for c in "$proot"/versions/3.1[2-9]*/bin/python3; do [ -x "$c" ] && cands+=("$c"); done
  else
    cands+=("$PYTHON")
  fi
  for c in "${cands[@]}"; do
    command -v "$c" >/dev/null 2>&1 || continue
    if py_ok "$c" "$min"; then command -v "$c"; return 0; fi
  done
  return 0
}

# installed TOOL: the venv's python runs, pip is there, and the marker names the exact requirement
# and the installed distribution has the pinned version.
installed() {
  local t=$1 py=$root/$1/bin/python want=${SPEC[$1]}
  [ -x "$py" ] && "$py" -c 'import pip' >/dev/null 2>&1 || return 1
  [ "$(cat "$root/$t/.kvgate-requirement" 2>/dev/null)" = "$want${EXTRA[$t]:+ ${EXTRA[$t]}}" ] || return 1
  py_ok "$py" "${MINPY[$t]}" || return 1
  local have; have=$("$py" -c "import importlib.metadata as m; print(m.version('${DIST[$t]}'))" 2>/dev/null) || return 1
  [ "$have" = "${want##*==}" ]
}

failed=()
mkdir -p "$root"
for t in "$@"; do
  dir=$root/$t
  if installed "$t"; then
    say "$t ok (${SPEC[$t]}, $("$dir/bin/python" -c 'import sys; print("Python", sys.version.split()[0])'))"
    continue
  fi
  py=$(find_python "${MINPY[$t]}")
  if [ -z "$py" ]; then
    msg="$t needs Python >= ${MINPY[$t]}; none found (tried \$PYTHON312, $PYTHON, python3.12+ on PATH, pyenv): skipping $t"
    if [ "$explicit" = 1 ]; then
      printf 'tools-setup: ERROR: %s\n' "$msg" >&2
      failed+=("$t")
    else
      warn "$msg"
    fi
    continue
  fi
  start=$SECONDS
  say "installing ${SPEC[$t]} into $dir ($("$py" -c 'import sys; print("Python", sys.version.split()[0])'), $py)"
  rm -rf "$dir"
  if ! "$py" -m venv "$dir" || ! "$dir/bin/python" -m pip install -q --disable-pip-version-check "${SPEC[$t]}" ${EXTRA[$t]:+"${EXTRA[$t]}"}; then
    printf 'tools-setup: ERROR: pip could not install %s into %s\n' "${SPEC[$t]}" "$dir" >&2
    failed+=("$t")
    continue
  fi
  printf '%s\n' "${SPEC[$t]}${EXTRA[$t]:+ ${EXTRA[$t]}}" >"$dir/.kvgate-requirement"
  if ! installed "$t"; then
    printf 'tools-setup: ERROR: %s: the venv does not report the pinned version after install\n' "$t" >&2
    failed+=("$t")
    continue
  fi
  say "$t installed in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1))"
done

if ((${#failed[@]})); then
  printf 'tools-setup: ERROR: not installed: %s\n' "${failed[*]}" >&2
  exit 1
fi
