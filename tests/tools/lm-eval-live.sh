#!/usr/bin/env bash
# Live round trip through lm-evaluation-harness, cheap enough for CI: KV Gate exports a small
# balanced set of its fixture items as an lm-eval task (`kvgate fixtures export --format
# lm-eval-task`), pinned lm-eval==0.4.13 runs it with `local-chat-completions` against the real
# llama.cpp f16 and q8_0 servers (SmolLM2-135M), and `kvgate import --format lm-eval-samples`
# stores the samples with the servers' startup logs. KV Gate's own runner then sends the same
# items to the same servers in a second study. The check: lm-eval sent exactly KV Gate's messages,
# each item's answer and verdict are the same in both studies, and the paired rows (overall and
# every stratum) are equal. The servers are always stopped by PID. Ends with "N passed, N failed".
# KVGATE_BIN: the CLI (default target/debug/kvgate). Files are kept in $TOOLS_LIVE_DIR (default:
# a temp dir, removed on success). RECORD_DIR=DIR also copies the harness's files there.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source tests/tools/lib.sh

KVGATE_BIN=${KVGATE_BIN:-target/debug/kvgate}
case $KVGATE_BIN in /*) ;; */*) KVGATE_BIN=$PWD/$KVGATE_BIN ;; esac
dir=${TOOLS_LIVE_DIR:-$(mktemp -d -t kvgate-lm-eval-live.XXXXXX)}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
ITEMS=${ITEMS:-6}

passed=0 failed=0
ok() { passed=$((passed + 1)); printf 'ok - %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'not ok - %s\n' "$*"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
finish() {
  local ms=$(($(kvt_ms) - t_start))
  printf '  lm-eval-live took %d.%03d s end to end\n' $((ms / 1000)) $((ms % 1000))
  echo "$passed passed, $failed failed"
  if [ "$failed" -eq 0 ] && [ -z "${TOOLS_LIVE_DIR:-}" ]; then rm -rf "$dir"; else echo "lm-eval-live: files in $dir"; fi
  [ "$failed" -eq 0 ]
  exit
}
trap 'kvt_stop_all' EXIT
trap 'exit 130' INT TERM
t_start=$(kvt_ms)

check "llm-setup (llama.cpp server and model)" scripts/llm-setup.sh
check "tools-setup lm-eval (lm-eval[api]==0.4.13 in .tools/lm-eval)" scripts/tools-setup.sh lm-eval
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
for kv in f16 q8_0; do
  check "lm-eval 0.4.13 local-chat-completions against the $kv server" run_lm_eval "$kv"
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
same_answers() {
  answers harness && answers runner || return 1
  "$KVT_PY" - "$dir" <<'EOF'
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
h, k = read("harness"), read("runner")
assert sorted(h) == sorted(k), f"items differ: {sorted(set(h) ^ set(k))}"
same_text = sum(h[x][1] == k[x][1] for x in h)
same_verdict = sum(h[x][0] == k[x][0] for x in h)
flips = sum(1 for (cell, item) in h if cell == "Q8" and h[("B0", item)][0] != h[(cell, item)][0])
print(f"  {len(h)} answers: {same_text} identical texts, {same_verdict} identical verdicts; {flips} B0/Q8 disagreements")
assert same_verdict == len(h), "a verdict differs between lm-eval's answer and the runner's"
assert same_text == len(h), "an answer text differs between lm-eval and the runner"
EOF
}
check "each item's answer and verdict: lm-eval import = KV Gate's runner, per cell" same_answers

same_pairs() {
  kvgate analyze --study harness --json >"$dir/harness.json" && kvgate analyze --study runner --json >"$dir/runner.json" || return 1
  "$KVT_PY" - "$dir" <<'EOF'
import json, sys
d = sys.argv[1]
# lm-eval records no completion token counts: its pairs' output length is unknown, where the
# runner's are measured. Every other row must be equal.
def paired(f):
    a = json.load(open(f))
    return {c["cell"]: [(p["stratum"], p["n"], p["b"], p["c"]) for p in c["paired"] if not p["stratum"].startswith("output_length=")] for c in a["cells"]}
h, k = paired(f"{d}/harness.json"), paired(f"{d}/runner.json")
o = [r for r in h["Q8"] if r[0] == "overall"][0]
print(f"  Q8 against B0, overall: n {o[1]}, b {o[2]}, c {o[3]}; {len(h['Q8'])} paired rows")
assert h == k, f"paired rows differ:\n{h}\n{k}"
assert o[1] > 0
EOF
}
check "kvgate analyze: the same paired rows (overall, each stratum, each segment; output length aside: lm-eval records no token counts) from lm-eval as from the runner" same_pairs

if [ -n "${RECORD_DIR:-}" ] && [ "$failed" -eq 0 ]; then
  mkdir -p "$RECORD_DIR"
  cp -r "$dir/task" "$RECORD_DIR/task"
  for kv in f16 q8_0; do
    mkdir -p "$RECORD_DIR/$kv"
    cp "$dir/lm-eval-$kv"/*/samples_*.jsonl "$dir/lm-eval-$kv"/*/results_*.json "$RECORD_DIR/$kv/"
    cp "$dir/server-$kv.log" "$RECORD_DIR/$kv/server-$kv.log"
  done
  echo "  recorded into $RECORD_DIR"
fi
finish
