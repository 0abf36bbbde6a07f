#!/usr/bin/env bash
# Records the demo study that `make run` seeds: the real llama.cpp server on CPU (SmolLM2-135M),
# f16 KV (B0) and q8_0 KV (Q8, an 8-bit stand-in, not FP8), 24 items of the committed synthetic
# corpus each, run by KV Gate itself; writes the two kvgate-run files under fixtures/demo/runs/
# (or under OUT_DIR, for a larger recording kept apart from the demo).
# Usage: scripts/record-demo.sh [ITEMS] [OUT_DIR]   (needs `make llm` and a built `kvgate`)
# ITEMS may be `all`. KVGATE_RECORD_CORPUS picks another corpus folder (default fixtures/demo/corpus)
# and KVGATE_RECORD_ONLY a strata filter, e.g. "length_class=short answer_kind=present".
# KVGATE_RECORD_MODEL=FILE.gguf serves another model through scripts/llm_server.py, with the
# manifests KVGATE_RECORD_MANIFESTS="B0.json Q8.json" (default: the SmolLM2 ones).
set -euo pipefail
cd "$(dirname "$0")/.."
items=${1:-24}
out=${2:-fixtures/demo/runs}
corpus=${KVGATE_RECORD_CORPUS:-fixtures/demo/corpus}
select=()
[ "$items" = all ] || select+=(--limit "$items")
for o in ${KVGATE_RECORD_ONLY:-}; do select+=(--only "$o"); done
kvgate=${KVGATE_BIN:-target/debug/kvgate}
work=$(mktemp -d)
export KVGATE_DB=$work/demo.sqlite
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait || true; rm -rf "$work"; }
trap cleanup EXIT

"$kvgate" study create "recording" >/dev/null
for m in ${KVGATE_RECORD_MANIFESTS:-fixtures/manifests/smollm2-135m-cpu-b0.json fixtures/manifests/smollm2-135m-cpu-q8.json}; do
  "$kvgate" manifest freeze --study recording "$m" >/dev/null
done

serve() { # kv → ready line in $work/$kv.json (with the startup log's path as "log")
  if [ -n "${KVGATE_RECORD_MODEL:-}" ]; then
    .llm/venv/bin/python scripts/llm_server.py --model "$KVGATE_RECORD_MODEL" --kv "$1" \
      --log "$work/$1.log" >"$work/$1.ready" 2>"$work/$1.err" &
  else
    "$kvgate" llm serve --kv "$1" >"$work/$1.json" 2>"$work/$1.err" &
  fi
  pids+=("$!")
}
serve f16
serve q8_0
for kv in f16 q8_0; do
  for _ in $(seq 1 240); do
    if [ -s "$work/$kv.ready" ] && [ ! -s "$work/$kv.json" ]; then
      python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); d["log"]=sys.argv[2]; print(json.dumps(d))' \
        "$work/$kv.ready" "$work/$kv.log" >"$work/$kv.json"
    fi
    [ -s "$work/$kv.json" ] && break
    sleep 0.5
  done
  [ -s "$work/$kv.json" ] || { cat "$work/$kv.err" >&2; echo "record-demo: $kv server not ready" >&2; exit 1; }
done
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

run() { # cell kv
  "$kvgate" run quality --study recording --cell "$1" --endpoint "$(field "$work/$2.json" url)" \
    --startup-log "$(field "$work/$2.json" log)" --corpus "$corpus" "${select[@]}" \
    --seed 7 --warmup 1 >"$work/$1.out"
}
run B0 f16 &
b0=$!
run Q8 q8_0 &
q8=$!
wait "$b0"
wait "$q8"
cat "$work/B0.out" "$work/Q8.out"
mkdir -p "$out"
rm -f "$out/b0-f16.kvgate-run.jsonl" "$out/q8-q8_0.kvgate-run.jsonl"
run_of() { # cell → run id
  "$kvgate" run list --study recording --json |
    python3 -c "import json,sys; print(next(r['id'] for r in json.load(sys.stdin) if r['cell'] == sys.argv[1]))" "$1"
}
"$kvgate" run export "$(run_of B0)" --out "$out/b0-f16.kvgate-run.jsonl"
"$kvgate" run export "$(run_of Q8)" --out "$out/q8-q8_0.kvgate-run.jsonl"
