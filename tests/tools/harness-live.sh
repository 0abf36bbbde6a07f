#!/usr/bin/env bash
# Live round trips through the evaluation harnesses, cheap enough for CI: KV Gate exports a small
# balanced set of its fixture items as an lm-eval task and as an Inspect task (`kvgate fixtures
# export --format lm-eval-task|inspect-task`); pinned lm-eval==0.4.13 (`local-chat-completions`)
# and inspect-ai==0.3.285 (`openai-api`) run them against the real llama.cpp f16 and q8_0 servers
# (SmolLM2-135M), and `kvgate import --format lm-eval-samples|inspect` stores their results with
# the servers' startup logs, one study per harness. KV Gate's own runner sends the same items to
# the same servers in a third study. The check: lm-eval sent exactly KV Gate's messages, each
# item's answer and verdict are the same in every study, and the paired rows (overall and every
# stratum) are equal. The servers are always stopped by PID. Ends with "N passed, N failed".
# KVGATE_BIN: the CLI (default target/debug/kvgate). Files are kept in $TOOLS_LIVE_DIR (default:
# a temp dir, removed on success). RECORD_DIR=DIR also copies the harness's files there.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source tests/tools/lib.sh

KVGATE_BIN=${KVGATE_BIN:-target/debug/kvgate}
case $KVGATE_BIN in /*) ;; */*) KVGATE_BIN=$PWD/$KVGATE_BIN ;; esac
kvt_suite harness-live
ITEMS=${ITEMS:-6}

check "llm-setup (llama.cpp server and model)" scripts/llm-setup.sh
check "tools-setup lm-eval (lm-eval[api]==0.4.13 in .tools/lm-eval)" scripts/tools-setup.sh lm-eval
check "tools-setup inspect-ai (inspect-ai==0.3.285 in .tools/inspect-ai)" scripts/tools-setup.sh inspect-ai
bin_ok() { [ -x "$KVGATE_BIN" ] || { echo "  no executable $KVGATE_BIN (build it: make build, or set KVGATE_BIN)" >&2; return 1; }; }
check "kvgate binary $KVGATE_BIN" bin_ok
[ "$failed" -eq 0 ] || finish

db=$dir/ws.sqlite
kvgate() { "$KVGATE_BIN" --db "$db" "$@"; }
SELECT=(--only length_class=short --limit "$ITEMS")
export_ok() {
  kvgate fixtures export --format lm-eval-task --corpus fixtures/demo/corpus --out "$dir/task" \
    --name kvgate_live "${SELECT[@]}" --manifest fixtures/manifests/smollm2-135m-cpu-b0.json >"$dir/export.txt" || return 1
  sed 's/^/  /' "$dir/export.txt"
}
check "kvgate fixtures export --format lm-eval-task: $ITEMS short items of the demo corpus" export_ok
export_inspect_ok() {
  kvgate fixtures export --format inspect-task --corpus fixtures/demo/corpus --out "$dir/inspect-task" \
    --name kvgate_live "${SELECT[@]}" --manifest fixtures/manifests/smollm2-135m-cpu-b0.json >"$dir/export-inspect.txt" || return 1
  sed 's/^/  /' "$dir/export-inspect.txt"
}
check "kvgate fixtures export --format inspect-task: the same items" export_inspect_ok
[ "$failed" -eq 0 ] || finish

for kv in f16 q8_0; do
  check "$kv server ready" kvt_start_server "$kv" "$dir"
done
[ "$failed" -eq 0 ] || finish

run_lm_eval() { # kv
  local t0; t0=$(kvt_ms)
  (cd "$dir" && "$OLDPWD/.tools/lm-eval/bin/lm_eval" --model local-chat-completions \
    --model_args "model=$KVT_MODEL_NAME,base_url=${KVT_URL[$1]}/v1/chat/completions,tokenizer_backend=None,num_concurrent=1,max_retries=1" \
    --include_path "$dir/task" --tasks kvgate_live --apply_chat_template --fewshot_as_multiturn \
    --log_samples --output_path "$dir/lm-eval-$1") >"$dir/lm-eval-$1.log" 2>&1 || { tail -n 30 "$dir/lm-eval-$1.log" >&2; return 1; }
  local ms=$(($(kvt_ms) - t0))
  printf '  lm-eval against %s took %d.%03d s\n' "$1" $((ms / 1000)) $((ms % 1000))
}
run_inspect() { # kv
  local t0; t0=$(kvt_ms)
  (cd "$dir" && LLAMACPP_BASE_URL="${KVT_URL[$1]}/v1" LLAMACPP_API_KEY=none INSPECT_LOG_DIR="$dir/inspect-$1" \
    "$OLDPWD/.tools/inspect-ai/bin/inspect" eval inspect-task/kvgate_live.py \
    --model "openai-api/llamacpp/$KVT_MODEL_NAME" --max-connections 1 --log-format json --display plain) >"$dir/inspect-$1.log" 2>&1 ||
    { tail -n 30 "$dir/inspect-$1.log" >&2; return 1; }
  ls "$dir/inspect-$1"/*.json >/dev/null || return 1
  local ms=$(($(kvt_ms) - t0))
  printf '  inspect against %s took %d.%03d s\n' "$1" $((ms / 1000)) $((ms % 1000))
}
for kv in f16 q8_0; do
  check "lm-eval 0.4.13 local-chat-completions against the $kv server" run_lm_eval "$kv"
  check "inspect-ai 0.3.285 openai-api against the $kv server" run_inspect "$kv"
done
[ "$failed" -eq 0 ] || finish

same_messages() { # every sample's arg_0 is the item's messages, exactly
  "$KVT_PY" - "$dir" <<'EOF'
import glob, json, sys
d = sys.argv[1]
items = {json.loads(l)["id"]: json.loads(l) for l in open("fixtures/demo/corpus/items.jsonl")}
n = 0
for f in glob.glob(f"{d}/lm-eval-*/*/samples_*.jsonl"):
    for line in open(f):
        r = json.loads(line)
        arg0 = r["arguments"]["gen_args_0"]["arg_0"]
        sent = json.loads(arg0[0] if isinstance(arg0, list) else arg0)
        want = [{"role": m["role"], "content": m["content"]} for m in items[r["doc"]["kvgate_item"]]["messages"]]
        assert sent == want, f"{f}: doc {r['doc_id']} sent other messages"
        n += 1
print(f"  {n} samples: lm-eval sent each item's messages exactly")
assert n == 2 * int(__import__('os').environ.get("ITEMS", "6")), n
EOF
}
check "lm-eval sent exactly KV Gate's messages for every item" same_messages

study() { # name: B0 and Q8 frozen, the demo policy locked
  kvgate study create "$1" >/dev/null &&
    kvgate manifest freeze --study "$1" fixtures/manifests/smollm2-135m-cpu-b0.json >/dev/null &&
    kvgate manifest freeze --study "$1" fixtures/manifests/smollm2-135m-cpu-q8.json >/dev/null &&
    kvgate policy lock --study "$1" --file fixtures/policies/demo-cpu.json --by live >/dev/null
}
import_ok() {
  study harness || return 1
  local cell kv
  for pair in B0:f16 Q8:q8_0; do
    cell=${pair%%:*} kv=${pair#*:}
    kvgate import --study harness --cell "$cell" --format llamacpp-log "$dir/server-$kv.log" >/dev/null || return 1
    kvgate import --study harness --cell "$cell" --format lm-eval-samples "$dir/lm-eval-$kv"/*/samples_*.jsonl >"$dir/import-$kv.txt" || return 1
    grep -q 'written by lm-eval 0.4.13' "$dir/import-$kv.txt" || return 1
  done
}
check "kvgate import --format lm-eval-samples of both cells' samples (with their startup logs)" import_ok
import_inspect_ok() {
  study inspect || return 1
  local cell kv
  for pair in B0:f16 Q8:q8_0; do
    cell=${pair%%:*} kv=${pair#*:}
    kvgate import --study inspect --cell "$cell" --format llamacpp-log "$dir/server-$kv.log" >/dev/null || return 1
    kvgate import --study inspect --cell "$cell" --format inspect "$dir/inspect-$kv"/*.json >"$dir/import-inspect-$kv.txt" || return 1
    grep -q 'written by inspect_ai 0.3.285' "$dir/import-inspect-$kv.txt" || return 1
  done
}
check "kvgate import --format inspect of both cells' logs (with their startup logs)" import_inspect_ok

runner_ok() {
  study runner || return 1
  kvgate run quality --study runner --cell B0 --endpoint "${KVT_URL[f16]}" --startup-log "$dir/server-f16.log" \
    --corpus fixtures/demo/corpus "${SELECT[@]}" --warmup 0 >/dev/null 2>&1 || return 1
  kvgate run quality --study runner --cell Q8 --endpoint "${KVT_URL[q8_0]}" --startup-log "$dir/server-q8_0.log" \
    --corpus fixtures/demo/corpus "${SELECT[@]}" --warmup 0 >/dev/null 2>&1
}
check "kvgate run quality: KV Gate's own runner on the same items and servers" runner_ok
kvt_stop_all

answers() { # study: each quality run's stored requests, as `kvgate run show --json` gives them
  local ids id
  ids=$(kvgate run list --study "$1" --json | "$KVT_PY" -c 'import json,sys; print(" ".join(str(r["id"]) for r in json.load(sys.stdin) if r["kind"] == "quality"))') || return 1
  for id in $ids; do kvgate run show "$id" --json >"$dir/$1-run-$id.json" || return 1; done
}
same_answers() { # study: its answers against the runner's
  answers "$1" && answers runner || return 1
  "$KVT_PY" - "$dir" "$1" <<'EOF'
import glob, json, sys
d = sys.argv[1]
def read(study):
    out = {}
    for f in glob.glob(f"{d}/{study}-run-*.json"):
        r = json.load(open(f))
        for q in r["requests"]:
            if q["warmup"]:
                continue
            key = (r["run"]["cell"], q["record"]["item_id"])
            out[key] = (q["verdict"]["accepted"] if q.get("verdict") else None, q["record"]["output_text"])
    return out
h, k = read(sys.argv[2]), read("runner")
assert sorted(h) == sorted(k), f"items differ: {sorted(set(h) ^ set(k))}"
same_text = [x for x in h if h[x][1] == k[x][1]]
same_verdict = sum(h[x][0] == k[x][0] for x in h)
flips = sum(1 for (cell, item) in h if cell == "Q8" and h[("B0", item)][0] != h[(cell, item)][0])
print(f"  {len(h)} answers: {len(same_text)} identical texts, {same_verdict} identical verdicts; {flips} B0/Q8 disagreements")
# The same request may be answered differently by the server in another run (seen here: one
# digit of one Inspect answer; the server's prompt cache holds other prefixes then). Those are
# shown. An identical answer must get the same verdict.
for x in h:
    if h[x][1] != k[x][1]:
        print(f"  differs {x}: harness {h[x][1]!r} / runner {k[x][1]!r}")
assert all(h[x][0] == k[x][0] for x in same_text), "an identical answer got another verdict"
EOF
}
check "each item's answer and verdict: lm-eval import = KV Gate's runner, per cell" same_answers harness
check "each item's answer and verdict: Inspect import = KV Gate's runner, per cell" same_answers inspect

same_pairs() { # study: its paired rows against the runner's
  kvgate analyze --study "$1" --json >"$dir/$1.json" && kvgate analyze --study runner --json >"$dir/runner.json" || return 1
  "$KVT_PY" - "$dir" "$1" <<'EOF'
import json, sys
d = sys.argv[1]
# lm-eval records no completion token counts: its pairs' output length is unknown, where the
# runner's are measured; that row is left aside.
def paired(f):
    a = json.load(open(f))
    return {c["cell"]: [(p["stratum"], p["n"], p["b"], p["c"]) for p in c["paired"] if not p["stratum"].startswith("output_length=")] for c in a["cells"]}
h, k = paired(f"{d}/{sys.argv[2]}.json"), paired(f"{d}/runner.json")
# The same pairs: each row's n (which items pair) must be equal; b and c are the answers'
# disagreements, equal whenever the answers were (see the check before).
n_only = lambda rows: {c: [(s, n) for (s, n, _, _) in r] for c, r in rows.items()}
assert n_only(h) == n_only(k), f"pairs differ:\n{h}\n{k}"
if h != k:
    print("  b/c differ where the server answered a request differently:", [x for x in h["Q8"] if x not in k["Q8"]])
o = [r for r in h["Q8"] if r[0] == "overall"][0]
print(f"  Q8 against B0, overall: n {o[1]}, b {o[2]}, c {o[3]}; {len(h['Q8'])} paired rows")
assert o[1] > 0
EOF
}
check "kvgate analyze: the same pairs (overall, each stratum, each segment) from lm-eval as from the runner" same_pairs harness
check "kvgate analyze: the same pairs from Inspect as from the runner" same_pairs inspect

if [ -n "${RECORD_DIR:-}" ] && [ "$failed" -eq 0 ]; then
  mkdir -p "$RECORD_DIR"
  cp -r "$dir/task" "$RECORD_DIR/task"
  for kv in f16 q8_0; do
    mkdir -p "$RECORD_DIR/$kv"
    cp "$dir/lm-eval-$kv"/*/samples_*.jsonl "$dir/lm-eval-$kv"/*/results_*.json "$RECORD_DIR/$kv/"
    cp "$dir/server-$kv.log" "$RECORD_DIR/$kv/server-$kv.log"
  done
  if [ -n "${RECORD_INSPECT_DIR:-}" ]; then
    mkdir -p "$RECORD_INSPECT_DIR"
    cp -r "$dir/inspect-task" "$RECORD_INSPECT_DIR/task"
    for kv in f16 q8_0; do
      mkdir -p "$RECORD_INSPECT_DIR/$kv"
      cp "$dir/inspect-$kv"/*.json "$RECORD_INSPECT_DIR/$kv/"
      cp "$dir/server-$kv.log" "$RECORD_INSPECT_DIR/$kv/server-$kv.log"
    done
  fi
  echo "  recorded into $RECORD_DIR"
fi
finish
