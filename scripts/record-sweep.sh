#!/usr/bin/env bash
# Records the demo's offered-load sweep: the real llama.cpp server on CPU with
# Qwen2.5-Coder-0.5B-Instruct (scripts/qwen-model.sh), f16 KV (B0) and q8_0 KV (Q8, an 8-bit
# stand-in, not FP8), one slot and one thread each, swept by `kvgate run sweep` over the short,
# present items of fixtures/disagreements/corpus under the demo policy
# (fixtures/policies/demo-qwen-cpu.json: its goodput interval and drain size each run); writes
# every run as a kvgate-run file under fixtures/sweep/runs/ (or OUT_DIR).
# Usage: scripts/record-sweep.sh [RATES] [RUNS_PER_POINT] [OUT_DIR]   (needs `make llm`, a built
# `kvgate`; RATES default 0.02,0.08 requests/s, below and above a one-slot server's capacity here)
set -euo pipefail
cd "$(dirname "$0")/.."
rates=${1:-0.02,0.08}
repeats=${2:-2}
out=${3:-fixtures/sweep/runs}
policy=fixtures/policies/demo-qwen-cpu.json
model=.llm/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
kvgate=${KVGATE_BIN:-target/debug/kvgate}
scripts/qwen-model.sh
duration=$(python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["goodput"]; print(g["interval_s"] + g["drain_s"])' "$policy")
work=$(mktemp -d)
export KVGATE_DB=$work/sweep.sqlite
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait || true; rm -rf "$work"; }
trap cleanup EXIT

"$kvgate" study create "sweep" >/dev/null
for m in fixtures/manifests/qwen25-coder-05b-cpu-b0.json fixtures/manifests/qwen25-coder-05b-cpu-q8.json; do
  "$kvgate" manifest freeze --study sweep "$m" >/dev/null
done
"$kvgate" policy lock --study sweep --file "$policy" --by "recording" >/dev/null

for kv in f16 q8_0; do
  .llm/venv/bin/python scripts/llm_server.py --model "$model" --kv "$kv" --log "$work/$kv.log" \
    >"$work/$kv.ready" 2>"$work/$kv.err" &
  pids+=("$!")
done
for kv in f16 q8_0; do
  for _ in $(seq 1 240); do [ -s "$work/$kv.ready" ] && break; sleep 0.5; done
  [ -s "$work/$kv.ready" ] || { cat "$work/$kv.err" >&2; echo "record-sweep: $kv server not ready" >&2; exit 1; }
done
url() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["url"])' "$work/$1.ready"; }

echo "record-sweep: rates $rates, $repeats runs per point, $duration s each (+ the policy's drain)" >&2
"$kvgate" run sweep --study sweep --cells B0,Q8 \
  --endpoint "B0=$(url f16)" --endpoint "Q8=$(url q8_0)" \
  --startup-log "B0=$work/f16.log" --startup-log "Q8=$work/q8_0.log" \
  --corpus fixtures/disagreements/corpus --only length_class=short --only answer_kind=present \
  --rates "$rates" --runs-per-point "$repeats" --duration "$duration" --seed 5 --scrape-interval-ms 5000

mkdir -p "$out"
rm -f "$out"/*.kvgate-run.jsonl
"$kvgate" run list --study sweep --json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    s = r["config"]["sweep"]
    print(r["id"], "%s-%gps-r%d" % (r["cell"].lower(), s["rate"], s["repeat"] + 1))
' | while read -r id name; do
  "$kvgate" run export "$id" --out "$out/$name.kvgate-run.jsonl"
done
ls -la "$out" >&2
