#!/usr/bin/env bash
# Heavier live interop checks (`make test-tools`; NOT part of `make test`): GuideLLM 0.8.1 and
# inference-perf 0.7.0, each only if `make tools` (scripts/tools-setup.sh) installed its venv under
# .tools/. One real llama.cpp server (f16 KV) is started and always stopped by PID; each tool runs
# briefly against it; its files must exist and parse as JSON with the counts it was asked for. When
# the kvgate CLI is built (KVGATE_BIN, default target/debug/kvgate), each file is also imported and
# the stored rows are compared with the tool's own counts. Ends with "N passed, N failed, N skipped".
# Files are kept in $TOOLS_LIVE_DIR (default: a temp dir, removed on success).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source tests/tools/lib.sh

KVGATE_BIN=${KVGATE_BIN:-target/debug/kvgate}
case $KVGATE_BIN in /*) ;; */*) KVGATE_BIN=$PWD/$KVGATE_BIN ;; esac
dir=${TOOLS_LIVE_DIR:-$(mktemp -d -t kvgate-tools-live.XXXXXX)}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

passed=0 failed=0 skipped=0
ok() { passed=$((passed + 1)); printf 'ok - %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'not ok - %s\n' "$*"; }
skip() { skipped=$((skipped + 1)); printf 'skip - %s\n' "$*"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
finish() {
  echo "$passed passed, $failed failed, $skipped skipped"
  if [ "$failed" -eq 0 ] && [ -z "${TOOLS_LIVE_DIR:-}" ]; then rm -rf "$dir"; else echo "tools-live: files in $dir"; fi
  [ "$failed" -eq 0 ]
  exit
}
trap 'kvt_stop_all' EXIT
trap 'exit 130' INT TERM

have_tool() { [ -x ".tools/$1/bin/python" ]; }
tools=()
for t in guidellm inference-perf; do
  if have_tool "$t"; then
    if scripts/tools-setup.sh "$t"; then
      ok "tools-setup $t (pinned version in .tools/$t)"
      tools+=("$t")
    else
      fail "tools-setup $t (pinned version in .tools/$t)"
    fi
  else
    skip "$t: no venv in .tools/$t (make tools installs it)"
  fi
done
[ ${#tools[@]} -gt 0 ] || finish
check "llm-setup (llama.cpp server and model)" scripts/llm-setup.sh
[ "$failed" -eq 0 ] || finish
kvt_tokenizer
have_kvgate=0
if [ -x "$KVGATE_BIN" ]; then have_kvgate=1; else skip "imports: no executable $KVGATE_BIN (make build, or set KVGATE_BIN)"; fi

check "f16 server ready" kvt_start_server f16 "$dir"
[ "$failed" -eq 0 ] || finish
url=${KVT_URL[f16]}
echo "  f16 server $url (pid ${KVT_PID[f16]})"

db=$dir/ws.sqlite
kvgate() { "$KVGATE_BIN" --db "$db" "$@"; }
if [ "$have_kvgate" = 1 ]; then
  if ! { kvgate study create live >/dev/null && kvgate manifest freeze fixtures/manifests/smollm2-135m-cpu-b0.json --study live >/dev/null; }; then
    fail "kvgate: create study 'live' and freeze the B0 manifest"
  fi
fi
timed() { # timed NAME CMD...: runs CMD with output to $dir/NAME.log, prints its wall time
  local name=$1 t0 rc=0 ms; shift
  t0=$(kvt_ms)
  "$@" >"$dir/$name.log" 2>&1 || rc=$?
  ms=$(($(kvt_ms) - t0))
  printf '  %s took %d.%03d s (exit %d)\n' "$name" $((ms / 1000)) $((ms % 1000)) "$rc"
  [ "$rc" = 0 ] || tail -n 30 "$dir/$name.log" >&2
  return "$rc"
}

# --- GuideLLM: synchronous, 4 requests -----------------------------------------------------------
if [[ " ${tools[*]} " == *" guidellm "* ]]; then
  g=$dir/guidellm
  mkdir -p "$g"
  cat >"$g/scenario.yaml" <<EOF
spec:
  backend: {kind: openai_http, target: "$url", model: $KVT_MODEL_NAME, request_format: /v1/chat/completions, stream: true}
  tokenizer: {kind: huggingface_auto, model: "$KVT_TOKENIZER_DIR"}
  data:
    - {kind: synthetic_text, prompt_tokens: 64, output_tokens: 16}
  profile: {kind: synchronous}
  constraints:
    - {kind: max_requests, count: 4}
  seed: {kind: static, value: 7}
  outputs:
    - {kind: json, path: "$g/benchmarks.json"}
EOF
  check "guidellm run: 4 synchronous streamed chat requests" \
    timed guidellm .tools/guidellm/bin/guidellm run --scenario "$g/scenario.yaml" --disable-console-interactive
  guidellm_ok() {
    "$KVT_PY" - "$g/benchmarks.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
md = d["metadata"]
b = d["benchmarks"]
assert md["version"] == 2 and len(b) == 1, (md, len(b))
t = b[0]["metrics"]["request_totals"]
rows = {k: len(b[0]["requests"][k]) for k in ("successful", "errored", "incomplete")}
ttft = b[0]["metrics"]["time_to_first_token_ms"]["successful"]["mean"]
print(f"  report v{md['version']} by guidellm {md['guidellm_version']}: totals {t}, rows {rows}, TTFT mean {ttft:.1f} ms")
assert t["successful"] == 4 and t["errored"] == 0 and rows["successful"] == 4, (t, rows)
EOF
  }
  check "guidellm benchmarks.json parses: report v2, 4 successful rows" guidellm_ok
  if [ "$have_kvgate" = 1 ]; then
    guidellm_import_ok() {
      kvgate import --study live --cell B0 --format guidellm "$g/benchmarks.json" >"$g/import.txt" || return 1
      sed 's/^/  /' "$g/import.txt"
      grep -q ', 4 request rows' "$g/import.txt"
    }
    check "kvgate import --format guidellm stores the 4 rows" guidellm_import_ok
  fi
fi

# --- inference-perf: one constant-rate stage, 0.5 req/s for 8 s ----------------------------------
if [[ " ${tools[*]} " == *" inference-perf "* ]]; then
  p=$dir/inference-perf
  mkdir -p "$p/out"
  cat >"$p/config.yaml" <<EOF
api: {type: completion, streaming: true}
data:
  type: synthetic
  input_distribution: {min: 64, max: 64, mean: 64, std_dev: 0}
  output_distribution: {min: 16, max: 16, mean: 16, std_dev: 0}
load:
  type: constant
  stages:
    - {rate: 0.5, duration: 8}
  num_workers: 1
  base_seed: 7
server: {type: vllm, model_name: $KVT_MODEL_NAME, base_url: "$url", ignore_eos: true}
tokenizer: {pretrained_model_name_or_path: "$KVT_TOKENIZER_DIR"}
storage:
  local_storage: {path: "$p/out"}
EOF
  check "inference-perf: one stage, 0.5 req/s for 8 s, streamed completions" \
    timed inference-perf .tools/inference-perf/bin/inference-perf -c "$p/config.yaml"
  ip_ok() {
    "$KVT_PY" - "$p/out" <<'EOF'
import json, sys
d = sys.argv[1]
for name in ("summary_lifecycle_metrics.json", "stage_0_lifecycle_metrics.json"):
    r = json.load(open(f"{d}/{name}"))
    n, s, f = r["load_summary"]["count"], r["successes"]["count"], r["failures"]["count"]
    ttft = r["successes"]["latency"]["time_to_first_token"]["mean"]
    print(f"  {name}: {n} sent, {s} successes, {f} failures, TTFT mean {ttft:.3f} s")
    assert n >= 3 and s == n and f == 0, (n, s, f)
EOF
  }
  check "inference-perf summary and stage_0 lifecycle files parse; every request succeeded" ip_ok
  if [ "$have_kvgate" = 1 ]; then
    ip_import_ok() {
      kvgate import --study live --cell B0 --format inference-perf \
        "$p/out/stage_0_lifecycle_metrics.json" "$p/out/summary_lifecycle_metrics.json" >"$p/import.txt" || return 1
      sed 's/^/  /' "$p/import.txt"
      [ "$(grep -c ', 0 request rows, ' "$p/import.txt")" = 2 ]
    }
    check "kvgate import --format inference-perf stores both files as aggregate runs" ip_import_ok
  fi
fi

kvt_stop_server f16
finish
