#!/usr/bin/env bash
# Records the long set: the real llama.cpp server on CPU with Qwen2.5-Coder-0.5B-Instruct
# (scripts/qwen-model.sh) at a 4,096-token context, f16 KV (B0) against q8_0 KV (Q8, an 8-bit
# integer stand-in, not FP8) and q4_0 KV (Q4, 4-bit: a stronger perturbation), one slot and one
# thread each,
# over a balanced selection of the 4k-preset corpus fixtures/long/corpus (token counts by the
# pinned Qwen tokenizer). Every cell runs in bounded parts (`kvgate run quality --resume
# --at-most N`), each exported as soon as it finishes to fixtures/long/runs/ (or OUT_DIR):
# an interrupted recording is resumed by running this script again, which imports the parts
# already written and sends only the items left. Needs `make llm` and a built `kvgate`.
# Usage: scripts/record-long.sh [ITEMS] [PART] [OUT_DIR]   (defaults 48 items per cell, 12 per part)
# CELLS="B0 Q4" (the default) names the cells to record; Q8 (q8_0 KV) is the third, recorded
# alone with CELLS=Q8 against the B0 already written.
set -euo pipefail
cd "$(dirname "$0")/.."
items=${1:-48}
part=${2:-12}
out=${3:-fixtures/long/runs}
corpus=fixtures/long/corpus
model=.llm/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
kvgate=${KVGATE_BIN:-target/debug/kvgate}
scripts/qwen-model.sh
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait || true; rm -rf "$work"; }
trap cleanup EXIT

record() { # cell kv manifest: one study per cell, its parts so far imported, then the rest
  local cell=$1 kv=$2 manifest=$3 db=$work/$1.sqlite name
  name=$(echo "$cell-$kv" | tr '[:upper:]' '[:lower:]')
  export KVGATE_DB=$db
  "$kvgate" study create long >/dev/null
  "$kvgate" manifest freeze --study long "$manifest" >/dev/null
  # Run files carry verdicts, which are written only under a locked policy.
  "$kvgate" policy lock --study long --file fixtures/policies/demo-qwen-cpu.json --by recording >/dev/null
  for f in "$out/$name"-part*.kvgate-run.jsonl; do
    [ -e "$f" ] || continue
    "$kvgate" run import --study long "$f" >/dev/null
  done
  nice -n 19 .llm/venv/bin/python scripts/llm_server.py --model "$model" --kv "$kv" --ctx 4096 \
    --log "$work/$kv.log" >"$work/$kv.ready" 2>"$work/$kv.err" &
  local server=$!
  trap 'kill -TERM '"$server"' 2>/dev/null || true' EXIT
  trap 'exit 143' TERM INT
  for _ in $(seq 1 240); do [ -s "$work/$kv.ready" ] && break; sleep 0.5; done
  [ -s "$work/$kv.ready" ] || { cat "$work/$kv.err" >&2; echo "record-long: $kv server not ready" >&2; return 1; }
  local url
  url=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["url"])' "$work/$kv.ready")
  while :; do
    local before after n
    before=$("$kvgate" run list --study long --json | python3 -c 'import json,sys; print(max([r["id"] for r in json.load(sys.stdin)] or [0]))')
    "$kvgate" run quality --study long --cell "$cell" --endpoint "$url" --startup-log "$work/$kv.log" \
      --corpus "$corpus" --limit "$items" --resume --at-most "$part" --seed 7 --warmup 1 \
      --scrape-interval-ms 5000 >"$work/$cell.out" || { cat "$work/$cell.out" >&2; return 1; }
    after=$("$kvgate" run list --study long --json | python3 -c 'import json,sys; print(max([r["id"] for r in json.load(sys.stdin)] or [0]))')
    [ "$after" = "$before" ] && break
    n=$(find "$out" -maxdepth 1 -name "$name-part*.kvgate-run.jsonl" | wc -l)
    "$kvgate" run export "$after" --out "$out/$name-part$(printf %02d $((n + 1))).kvgate-run.jsonl"
    echo "record-long: $cell part $((n + 1)) written: $(cat "$work/$cell.out")" >&2
  done
  echo "record-long: $cell done" >&2
}

cells=${CELLS:-B0 Q4}
for cell in $cells; do
  case $cell in
    B0) kv=f16 ;;
    Q4) kv=q4_0 ;;
    Q8) kv=q8_0 ;;
    *) echo "record-long: unknown cell $cell (expected B0, Q4 or Q8)" >&2; exit 2 ;;
  esac
  (record "$cell" "$kv" "fixtures/manifests/qwen25-coder-05b-cpu-4k-$(echo "$cell" | tr '[:upper:]' '[:lower:]').json") &
  pids+=("$!")
done
for p in "${pids[@]}"; do wait "$p"; done
ls -la "$out" >&2
