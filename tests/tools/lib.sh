# shellcheck shell=bash disable=SC2034  # sourced; its variables are used by the sourcing scripts
# Shared by tests/tools/*.sh and scripts/record-real-tools.sh (sourced, from the repository root):
# the local llama.cpp servers (started and stopped by PID) and the offline tokenizer the tools load.
# Needs `make llm` (scripts/llm-setup.sh) and the tools' venvs (scripts/tools-setup.sh).

KVT_PY=.llm/venv/bin/python
KVT_MODEL=.llm/models/SmolLM2-135M-Instruct.Q4_1.gguf
KVT_MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
KVT_TOKENIZER_JSON=fixtures/tokenizers/smollm2-135m-instruct/tokenizer.json
# The model name the tools send; llama.cpp serves its one model whatever the name.
KVT_MODEL_NAME=SmolLM2-135M-Instruct
KVT_READY_TIMEOUT=${KVT_READY_TIMEOUT:-60}

# No tool may reach a model hub: everything they load is local.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export DO_NOT_TRACK=1
# Loopback only: a proxy set for the registries must not carry requests to 127.0.0.1.
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"

# kvt_tokenizer: lays the pinned SmolLM2 tokenizer out as an offline Hugging Face cache entry
# (HF_HOME=.tools/hf-home, repo id local/smollm2-135m-instruct) and sets
#   KVT_TOKENIZER_ID  the repo id (AIPerf 0.13.0 with HF_HUB_OFFLINE=1 resolves --tokenizer only
#                     through the cache: a plain directory path is refused with HFValidationError)
#   KVT_TOKENIZER_DIR the snapshot directory: a plain local path for the other tools
# The snapshot holds a symlink to the committed tokenizer.json and a minimal tokenizer_config.json;
# the revision is the first 40 hex digits of tokenizer.json's sha256.
kvt_tokenizer() {
  local sha rev repo
  sha=$(cut -d' ' -f1 "${KVT_TOKENIZER_JSON}.sha256")
  rev=${sha:0:40}
  export HF_HOME=$PWD/.tools/hf-home
  repo=$HF_HOME/hub/models--local--smollm2-135m-instruct
  KVT_TOKENIZER_ID=local/smollm2-135m-instruct
  KVT_TOKENIZER_DIR=$repo/snapshots/$rev
  mkdir -p "$KVT_TOKENIZER_DIR" "$repo/refs"
  printf '%s' "$rev" >"$repo/refs/main"
  ln -sfn "$PWD/$KVT_TOKENIZER_JSON" "$KVT_TOKENIZER_DIR/tokenizer.json"
  cat >"$KVT_TOKENIZER_DIR/tokenizer_config.json" <<'EOF'
{"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<|im_end|>", "unk_token": "<|endoftext|>", "model_max_length": 8192, "add_prefix_space": false, "clean_up_tokenization_spaces": false}
EOF
}

declare -A KVT_PID=() KVT_URL=()

# kvt_start_server KV DIR: starts a llama.cpp server (1 slot, 1 thread, ctx 2048) with the given KV
# cache type, llama.cpp's log in DIR/server-KV.log; waits for its ready line; sets KVT_PID[KV] and
# KVT_URL[KV]. Returns non-zero if it does not come up.
kvt_start_server() {
  local kv=$1 dir=$2 deadline
  rm -f "$dir/server-$kv.ready"  # the wait below must not read a previous server's line
  "$KVT_PY" scripts/llm_server.py --model "$KVT_MODEL" --kv "$kv" --port 0 --threads 1 --ctx 2048 \
    --log "$dir/server-$kv.log" >"$dir/server-$kv.ready" 2>"$dir/server-$kv.err" &
  KVT_PID[$kv]=$!
  deadline=$((SECONDS + KVT_READY_TIMEOUT))
  while [ ! -s "$dir/server-$kv.ready" ]; do
    if ! kill -0 "${KVT_PID[$kv]}" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      echo "tools: $kv server did not become ready; its stderr:" >&2
      cat "$dir/server-$kv.err" >&2
      kvt_stop_server "$kv"
      return 1
    fi
    sleep 0.05
  done
  KVT_URL[$kv]=$("$KVT_PY" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["url"])' \
    "$dir/server-$kv.ready") || return 1
}

# kvt_stop_server KV: SIGTERM by PID, SIGKILL only if it is ignored for 10 s.
kvt_stop_server() {
  local p=${KVT_PID[$1]:-}
  [ -n "$p" ] || return 0
  kill -TERM "$p" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null; fi
  wait "$p" 2>/dev/null
  unset "KVT_PID[$1]" "KVT_URL[$1]"
}

kvt_stop_all() {
  local kv
  for kv in "${!KVT_PID[@]}"; do kvt_stop_server "$kv"; done
}

kvt_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }

# kvt_suite NAME: a live check's bookkeeping. Sets $dir (an absolute work folder: $TOOLS_LIVE_DIR,
# else a temp dir removed on success), the pass/fail counters behind `ok`, `fail` and
# `check NAME COMMAND...`, and `finish`, which prints how long the check took and
# "N passed, N failed" and exits with its verdict. Every server started is stopped by PID on exit.
kvt_suite() {
  kvt_suite_name=$1
  dir=${TOOLS_LIVE_DIR:-$(mktemp -d -t "kvgate-$1.XXXXXX")}
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  passed=0 failed=0
  trap 'kvt_stop_all' EXIT
  trap 'exit 130' INT TERM
  t_start=$(kvt_ms)
}
ok() { passed=$((passed + 1)); printf 'ok - %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'not ok - %s\n' "$*"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
finish() {
  local ms=$(($(kvt_ms) - t_start))
  printf '  %s took %d.%03d s end to end\n' "$kvt_suite_name" $((ms / 1000)) $((ms % 1000))
  echo "$passed passed, $failed failed"
  if [ "$failed" -eq 0 ] && [ -z "${TOOLS_LIVE_DIR:-}" ]; then rm -rf "$dir"; else echo "$kvt_suite_name: files in $dir"; fi
  [ "$failed" -eq 0 ]
  exit
}
