#!/usr/bin/env bash
# Smoke test of the real local LLM servers: starts an f16 (B0 analogue) and a q8_0 (8-bit stand-in
# candidate) llama.cpp server with scripts/llm_server.py, checks the KV-cache evidence in their logs
# and one greedy streamed chat request each, and always stops both by PID. Ends with
# "N passed, N failed". Logs are kept in $LLM_SMOKE_DIR (default: a temp dir, removed on success).
set -uo pipefail
cd "$(dirname "$0")/../.."

PY=.llm/venv/bin/python
MODEL=.llm/models/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
READY_TIMEOUT=${LLM_READY_TIMEOUT:-40}
dir=${LLM_SMOKE_DIR:-$(mktemp -d -t kvgate-llm-smoke.XXXXXX)}
mkdir -p "$dir"

passed=0 failed=0
elapsed_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }
ok() { passed=$((passed + 1)); printf 'ok - %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'not ok - %s\n' "$*"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }

declare -A pid=() url=()
stop_rc=
stop_server() { # stop_server KV: sets stop_rc; SIGKILL only if SIGTERM is ignored for 10 s
  local p=${pid[$1]:-}
  stop_rc=
  [ -n "$p" ] || return 0
  kill -TERM "$p" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null; fi
  wait "$p" 2>/dev/null; stop_rc=$?
  unset "pid[$1]"
}
cleanup() {
  local kv
  for kv in "${!pid[@]}"; do echo "smoke: stopping $kv server (pid ${pid[$kv]}) in cleanup" >&2; stop_server "$kv"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

scripts/llm-setup.sh || { fail "llm-setup"; echo "$passed passed, $failed failed"; exit 1; }

start_ms=$(elapsed_ms)
for kv in f16 q8_0; do
  "$PY" scripts/llm_server.py --model "$MODEL" --kv "$kv" --port 0 --threads 1 --ctx 2048 \
    --log "$dir/$kv.log" >"$dir/$kv.ready" 2>"$dir/$kv.err" &
  pid[$kv]=$!
done

# Wait for each ready line (both servers load in parallel).
wait_ready() { # wait_ready KV
  local kv=$1 deadline=$((SECONDS + READY_TIMEOUT))
  while [ $SECONDS -lt $deadline ]; do
    [ -s "$dir/$kv.ready" ] && return 0
    kill -0 "${pid[$kv]}" 2>/dev/null || { cat "$dir/$kv.err" >&2; return 1; }
    sleep 0.05
  done
  echo "smoke: $kv server not ready after ${READY_TIMEOUT}s" >&2
  return 1
}
ready_ok() { # ready_ok KV: the ready line is JSON with our pid, kv and the model's sha256
  local kv=$1
  wait_ready "$kv" || return 1
  url[$kv]=$("$PY" - "$dir/$kv.ready" "${pid[$kv]}" "$kv" "$MODEL_SHA256" <<'EOF'
import json, sys
path, pid, kv, sha = sys.argv[1:]
r = json.loads(open(path).readline())
assert r["event"] == "ready" and r["pid"] == int(pid) and r["kv"] == kv and r["model_sha256"] == sha, r
assert r["url"].startswith("http://127.0.0.1:"), r
print(r["url"])
EOF
  ) || return 1
  local ms=$(($(elapsed_ms) - start_ms))
  printf '  %s ready at %s, %d.%03d s after launch\n' "$kv" "${url[$kv]}" $((ms / 1000)) $((ms % 1000))
}
check "f16 server ready" ready_ok f16
check "q8_0 server ready" ready_ok q8_0

kv_line() { grep -m1 'llama_kv_cache: size =' "$dir/$1.log"; }
kv_ok() { # kv_ok KV MIB: the startup log states the KV cache's size and types
  local line; line=$(kv_line "$1") || return 1
  echo "  $1: ${line#* I }"
  [[ $line == *"size =   $2 MiB (  2048 cells,  30 layers,  1/1 seqs), K ($1):"*", V ($1):"* ]]
}
check "f16 log: llama_kv_cache size 45.00 MiB, K/V f16" kv_ok f16 45.00
check "q8_0 log: llama_kv_cache size 23.91 MiB, K/V q8_0" kv_ok q8_0 23.91
flash_ok() { grep -q 'llama_context: flash_attn *= enabled' "$dir/$1.log"; }
check "f16 log: flash_attn enabled" flash_ok f16
check "q8_0 log: flash_attn enabled" flash_ok q8_0

chat_ok() { # chat_ok KV: one greedy streamed chat completion, SSE parsed chunk by chunk
  [ -n "${url[$1]:-}" ] || return 1
  "$PY" - "${url[$1]}" "$1" "$dir/$1.text" <<'EOF'
import json, sys, urllib.request
url, kv, out = sys.argv[1:]
body = {"messages": [{"role": "user", "content": "Name three colours."}], "stream": True,
        "temperature": 0, "max_tokens": 32, "stream_options": {"include_usage": True}}
req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
chunks, done = [], False
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
with direct.open(req, timeout=30) as r:
    for line in r:
        line = line.decode().rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            done = True
            break
        chunks.append(json.loads(line[6:]))
text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
last = chunks[-1]
assert done, "no [DONE]"
assert all(c["object"] == "chat.completion.chunk" for c in chunks)
assert text.strip(), "empty output"
assert last["usage"]["completion_tokens"] == 32 and last["timings"]["predicted_n"] == 32, last
open(out, "w").write(text)
t = last["timings"]
print(f"  {kv}: {len(chunks)} chunks, prompt {t['prompt_n']} tok in {t['prompt_ms']:.0f} ms, "
      f"{t['predicted_per_second']:.1f} tok/s: {text!r}")
EOF
}
check "f16 greedy streamed chat completion" chat_ok f16
check "q8_0 greedy streamed chat completion" chat_ok q8_0
if [ -s "$dir/f16.text" ] && [ -s "$dir/q8_0.text" ]; then
  if cmp -s "$dir/f16.text" "$dir/q8_0.text"; then echo "  f16 and q8_0 outputs identical"
  else echo "  f16 and q8_0 outputs differ (expected with an 8-bit KV cache)"; fi
fi

tokens_ok() { # tokens_ok: every token_count of a generated corpus equals the server's /tokenize count
  [ -n "${url[f16]:-}" ] || return 1
  ${KVGATE_BIN:-cargo run -q -p kvgate-cli --} fixtures generate --seed 11 --preset test-2k \
    --out "$dir/corpus" >/dev/null || return 1
  "$PY" - "${url[f16]}" "$dir/corpus/items.jsonl" <<'EOF'
import json, sys, urllib.request
url, path = sys.argv[1:]
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
items = [json.loads(line) for line in open(path, encoding="utf-8")]
bad = []
for item in items:
    body = {"content": item["prompt_text"], "add_special": False, "parse_special": True}
    req = urllib.request.Request(url + "/tokenize", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with direct.open(req, timeout=30) as r:
        n = len(json.load(r)["tokens"])
    if n != item["token_count"]:
        bad.append((item["id"], item["token_count"], n))
print(f"  {len(items)} items, token_count vs llama.cpp /tokenize: {len(bad)} mismatches {bad[:3]}")
assert not bad
EOF
}
check "corpus token counts equal llama.cpp's own tokenizer" tokens_ok

series_ok() { # series_ok: `kvgate run quality --cells` runs B0 (f16) and Q8 (q8_0) in a seeded, recorded order
  [ -n "${url[f16]:-}" ] && [ -n "${url[q8_0]:-}" ] || return 1
  local kg=(${KVGATE_BIN:-cargo run -q -p kvgate-cli --}) db="$dir/series.sqlite"
  "${kg[@]}" --db "$db" study create series >/dev/null || return 1
  local m
  for m in smollm2-135m-cpu-b0 smollm2-135m-cpu-q8; do
    "${kg[@]}" --db "$db" manifest freeze --study series "fixtures/manifests/$m.json" >/dev/null || return 1
  done
  "${kg[@]}" --db "$db" policy lock --study series --file fixtures/policies/demo-cpu.json --by smoke >/dev/null || return 1
  "${kg[@]}" --db "$db" run quality --study series --cells B0,Q8 \
    --endpoint "B0=${url[f16]}" --endpoint "Q8=${url[q8_0]}" \
    --startup-log "B0=$dir/f16.log" --startup-log "Q8=$dir/q8_0.log" \
    --corpus fixtures/demo/corpus --limit 2 --warmup 1 --seed 5 --json >"$dir/series.json" 2>"$dir/series.err" \
    || { cat "$dir/series.err" >&2; return 1; }
  "$PY" - "$dir/series.json" <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))
order = [r["run"]["cell"] for r in runs]
assert sorted(order) == ["B0", "Q8"], order
for i, r in enumerate(runs):
    c = r["run"]["config"]
    assert c["cell_order"] == {"seed": 5, "order": order, "position": i}, c["cell_order"]
    assert r["run"]["state"] == "completed" and r["validity"]["valid"], (r["run"]["state"], r["validity"])
    warm = c["warmup"]["items"]
    assert len(warm) == 1 and warm[0] not in c["corpus"]["selected"], (warm, c["corpus"]["selected"])
    assert r["accepted"] + r["rejected"] + r["unvalidated"] == 2, r
print(f"  series order (seed 5): {' -> '.join(order)}; warm-up items outside the measured ones")
EOF
}
check "both cells in one seeded, recorded order (kvgate run quality --cells)" series_ok

slots_ok() { # slots_ok: `kvgate llm serve --slots 2` admits two sequences of 2048 tokens each, as its log says
  local kg=(${KVGATE_BIN:-cargo run -q -p kvgate-cli --}) out="$dir/slots.ready" kp line
  "${kg[@]}" --db "$dir/slots.sqlite" llm serve --kv f16 --slots 2 >"$out" 2>"$dir/slots.err" &
  kp=$!
  local deadline=$((SECONDS + READY_TIMEOUT + 60))
  while [ ! -s "$out" ] && [ $SECONDS -lt $deadline ] && kill -0 "$kp" 2>/dev/null; do sleep 0.1; done
  local log
  log=$("$PY" -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); assert r["slots"] == 2, r; print(r["log"])' "$out") \
    || { cat "$dir/slots.err" >&2; kill -TERM "$kp" 2>/dev/null; wait "$kp" 2>/dev/null; return 1; }
  kill -TERM "$kp" 2>/dev/null
  wait "$kp" 2>/dev/null
  line=$(grep -m1 'n_seq_max' "$log") || return 1
  echo "  2 slots: ${line#* I }; $(grep -m1 -o 'n_slots = [0-9]*, n_ctx_slot = [0-9]*' "$log")"
  [[ $line == *"n_seq_max"*"= 2" ]] && grep -q 'n_slots = 2, n_ctx_slot = 2048' "$log"
}
check "two slots of 2048 tokens each (kvgate llm serve --slots 2), n_seq_max in the log" slots_ok

for kv in f16 q8_0; do
  stop_server "$kv"
  check "$kv server exits 0 on SIGTERM (rc=$stop_rc)" test "$stop_rc" = 0
done

echo "$passed passed, $failed failed"
if [ "$failed" -eq 0 ] && [ -z "${LLM_SMOKE_DIR:-}" ]; then rm -rf "$dir"; else echo "smoke: logs in $dir"; fi
[ "$failed" -eq 0 ]
