#!/usr/bin/env bash
# Records what the real benchmark tools write when run against the real local llama.cpp servers
# (f16 KV = B0 analogue, q8_0 KV = 8-bit stand-in candidate), into fixtures/real-tools/:
#   fixtures/real-tools/<tool>-<version>/<kv>/   the tool's own files under out/, exactly as written,
#                                                plus the config it read, its console output, the
#                                                server's llama.cpp log and recording.json (ours)
#   fixtures/real-tools/<tool>-<version>/README.md and fixtures/real-tools/README.md (generated)
#
#   scripts/record-real-tools.sh                          # aiperf guidellm inference-perf
#   scripts/record-real-tools.sh aiperf                   # only the named tools
#   KVT_RECORD_KVS=f16 KVT_RECORD_OUT=/tmp/x scripts/record-real-tools.sh aiperf
#   scripts/record-real-tools.sh --readme-only            # only regenerate the READMEs
#
# Each recording gets a fresh server (1 slot, 1 thread, ctx 2048), started here and stopped by PID,
# also on error or Ctrl-C. Installs what is missing first (scripts/llm-setup.sh,
# scripts/tools-setup.sh). Files over 1 MiB are left out and listed as such in recording.json.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../tests/tools/lib.sh
source tests/tools/lib.sh

say() { printf 'record: %s\n' "$*"; }
die() { printf 'record: ERROR: %s\n' "$*" >&2; exit 1; }

OUT=${KVT_RECORD_OUT:-fixtures/real-tools}
read -r -a KVS <<<"${KVT_RECORD_KVS:-f16 q8_0}"
MAX_BYTES=1048576
readme_only=0
if [ "${1:-}" = --readme-only ]; then readme_only=1; shift; fi
TOOLS=("$@")
[ ${#TOOLS[@]} -gt 0 ] || TOOLS=(aiperf guidellm inference-perf)
for t in "${TOOLS[@]}"; do
  case $t in aiperf | guidellm | inference-perf) ;; *) die "no recording for tool '$t' (aiperf, guidellm, inference-perf)" ;; esac
done

dist_version() { "$1" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$2"; }
work=
if [ "$readme_only" = 0 ]; then
  scripts/llm-setup.sh
  scripts/tools-setup.sh "${TOOLS[@]}"
  kvt_tokenizer
  work=$(mktemp -d -t kvgate-record.XXXXXX)
  trap 'kvt_stop_all' EXIT
  trap 'exit 130' INT TERM
  say "work folder $work"
  XLLAMACPP_VERSION=$(dist_version "$KVT_PY" xllamacpp)
fi

# --- the commands --------------------------------------------------------------------------------
# Each sets ARGV (the exact command) and writes its config, if any, into $dir. $url is the server.

argv_aiperf() { # 12 streamed chat requests, 2 in flight, ISL ~128 ± 32 tokens, exactly 32 out
  local dir=$1 url=$2
  ARGV=(.tools/aiperf/bin/aiperf profile
    --model "$KVT_MODEL_NAME" --url "$url" --endpoint-type chat --streaming
    --tokenizer "$KVT_TOKENIZER_ID"
    --request-count 12 --concurrency 2 --warmup-request-count 2
    --synthetic-input-tokens-mean 128 --synthetic-input-tokens-stddev 32
    --output-tokens-mean 32 --extra-inputs ignore_eos:true
    --random-seed 42 --ui none --no-gpu-telemetry
    --output-artifact-dir "$dir/out")
}

argv_guidellm() { # two constant rates, 8 requests each, ISL ~128 ± 32 (64..192), 32 out
  local dir=$1 url=$2 kv=$3
  cat >"$dir/scenario.yaml" <<EOF
# GuideLLM 0.8.1 scenario (guidellm run --scenario FILE), written by scripts/record-real-tools.sh.
metadata:
  labels:
    kv_cache: $kv
    server: llama.cpp (xllamacpp $XLLAMACPP_VERSION), SmolLM2-135M-Instruct Q4_1, CPU, 1 slot, 1 thread
spec:
  backend:
    kind: openai_http
    target: $url
    model: $KVT_MODEL_NAME
    request_format: /v1/chat/completions
    stream: true
  tokenizer:
    kind: huggingface_auto
    model: $KVT_TOKENIZER_DIR
  data:
    - kind: synthetic_text
      prompt_tokens: 128
      prompt_tokens_stdev: 32
      prompt_tokens_min: 64
      prompt_tokens_max: 192
      output_tokens: 32
  profile:
    kind: constant
    rate: 0.3
  constraints:
    - kind: max_requests
      count: 8
  seed:
    kind: static
    value: 42
  outputs:
    - kind: json
      path: $dir/out/benchmarks.json
    - kind: csv
      path: $dir/out/benchmarks.csv
# One report, two constant-rate benchmarks (a list in profile.rate is deprecated in 0.8.1).
benchmarks:
  - profile.rate: 0.3
  - profile.rate: 0.6
EOF
  ARGV=(.tools/guidellm/bin/guidellm run --scenario "$dir/scenario.yaml" --disable-console-interactive)
}

argv_inference-perf() { # two constant-rate stages: 0.3 req/s for 20 s, 0.6 req/s for 15 s
  local dir=$1 url=$2
  cat >"$dir/inference-perf.yaml" <<EOF
# inference-perf 0.7.0 config (inference-perf -c FILE), written by scripts/record-real-tools.sh.
# Streamed /v1/completions (its synthetic data generator supports only the completion API).
# No 'metrics:' section: inference-perf reads server metrics only by PromQL from a Prometheus
# server, and there is none here (llama.cpp's own /metrics is not a Prometheus query API).
api:
  type: completion
  streaming: true
data:
  type: synthetic
  input_distribution: {min: 64, max: 192, mean: 128, std_dev: 32}
  output_distribution: {min: 32, max: 32, mean: 32, std_dev: 0}
load:
  type: constant
  interval: 1
  stages:
    - {rate: 0.3, duration: 20}
    - {rate: 0.6, duration: 15}
  num_workers: 1
  base_seed: 42
server:
  type: vllm
  model_name: $KVT_MODEL_NAME
  base_url: $url
  ignore_eos: true
tokenizer:
  pretrained_model_name_or_path: $KVT_TOKENIZER_DIR
report:
  request_lifecycle:
    summary: true
    per_stage: true
    per_request: true
storage:
  local_storage:
    path: $dir/out
EOF
  ARGV=(.tools/inference-perf/bin/inference-perf -c "$dir/inference-perf.yaml")
}

# --- one recording -------------------------------------------------------------------------------

record() { # record TOOL KV
  local tool=$1 kv=$2 dir version pyver dest date_utc t0 wall rc=0
  dir=$work/$tool/$kv
  mkdir -p "$dir/out"
  version=$(dist_version ".tools/$tool/bin/python" "$tool")
  pyver=$(".tools/$tool/bin/python" -c 'import sys; print(sys.version.split()[0])')
  kvt_start_server "$kv" "$dir" || die "$kv server did not start"
  "argv_$tool" "$dir" "${KVT_URL[$kv]}" "$kv"
  say "$tool $version against the $kv server (${KVT_URL[$kv]}): ${ARGV[*]}"
  date_utc=$(date -u)
  t0=$(kvt_ms)
  "${ARGV[@]}" >"$dir/console.log" 2>&1 || rc=$?
  wall=$(($(kvt_ms) - t0))
  kvt_stop_server "$kv"
  say "$tool $kv: exit $rc after $((wall / 1000)).$(printf '%03d' $((wall % 1000))) s"
  [ "$rc" = 0 ] || { tail -n 40 "$dir/console.log" >&2; die "$tool failed against the $kv server (work folder $dir)"; }

  dest=$OUT/$tool-$version/$kv
  rm -rf "$dest"
  mkdir -p "$dest"
  "$KVT_PY" - "$dir" "$dest" "$MAX_BYTES" "$tool" "$version" "$pyver" "$kv" "$date_utc" "$wall" \
    "$XLLAMACPP_VERSION" "$KVT_MODEL" "$KVT_MODEL_SHA256" "$PWD" "${ARGV[@]}" <<'EOF'
import hashlib, json, os, re, shlex, shutil, sys
(src, dest, max_bytes, tool, version, pyver, kv, date_utc, wall_ms, xv, model, model_sha, cwd,
 *argv) = sys.argv[1:]
max_bytes = int(max_bytes)
kept, left_out = [], []
for root, _dirs, files in os.walk(src):
    for name in sorted(files):
        path = os.path.join(root, name)
        rel = os.path.relpath(path, src)
        if name.endswith(".ready") or name.endswith(".err"):
            continue  # the launcher's ready line and (empty) stderr: ours, not evidence
        size = os.path.getsize(path)
        if size > max_bytes:
            left_out.append({"path": rel, "bytes": size, "reason": f"over {max_bytes} bytes"})
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(path, os.path.join(dest, rel))
        data = open(path, "rb").read()
        kept.append({"path": rel, "bytes": size, "sha256": hashlib.sha256(data).hexdigest()})
log = open(os.path.join(src, f"server-{kv}.log"), errors="replace").read()
kv_line = next((l.split(" I ", 1)[-1] for l in log.splitlines() if "llama_kv_cache: size =" in l), None)
flash = next((l.split(" I ", 1)[-1] for l in log.splitlines() if "flash_attn" in l and "=" in l), None)
rec = {
    "tool": tool,
    "tool_version": version,
    "python": pyver,
    "command": argv,
    "command_line": shlex.join(argv),
    "cwd": cwd,
    "date_utc": date_utc,
    "wall_s": int(wall_ms) / 1000,
    "exit_code": 0,
    "server": {
        "engine": "llama.cpp HTTP server via xllamacpp (scripts/llm_server.py)",
        "xllamacpp_version": xv,
        "kv_cache_type": kv,
        "slots": 1,
        "threads": 1,
        "ctx": 2048,
        "model_file": os.path.basename(model),
        "model_sha256": model_sha,
        "log_kv_cache": kv_line,
        "log_flash_attn": flash,
    },
    "files": kept,
    "left_out": left_out,
    "note": "CPU stand-in recording (SmolLM2-135M on llama.cpp, no GPU). q8_0 is llama.cpp's 8-bit "
            "integer KV cache (blocks of 32, one fp16 scale each): an 8-bit stand-in, not FP8.",
}
with open(os.path.join(dest, "recording.json"), "w") as f:
    json.dump(rec, f, indent=2)
    f.write("\n")
EOF
}

if [ "$readme_only" = 0 ]; then
  for tool in "${TOOLS[@]}"; do
    for kv in "${KVS[@]}"; do
      record "$tool" "$kv"
    done
  done
fi

# --- the READMEs (generated from recording.json and the tools' own summaries) --------------------
"$KVT_PY" - "$OUT" <<'EOF'
import csv, glob, json, os, sys

out = sys.argv[1]
KV_ORDER = {"f16": 0, "q8_0": 1}

def fmt(v, digits=2):
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)

def size(n):
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"

def aiperf_rows(d):
    s = json.load(open(os.path.join(d, "out", "profile_export_aiperf.json")))
    recs = [json.loads(l) for l in open(os.path.join(d, "out", "profile_export.jsonl")) if l.strip()]
    phases = {}
    for r in recs:
        p = r["metadata"].get("benchmark_phase")
        phases[p] = phases.get(p, 0) + 1
    errored = sum(1 for r in recs if r.get("error"))
    m = lambda k, st: (s.get(k) or {}).get(st)
    head = ["records in profile_export.jsonl", "request_count (summary)", "errored records",
            "TTFT ms avg / p50 / p99", "ITL ms avg / p50 / p99", "request latency ms avg / p50 / p99",
            "benchmark_duration s"]
    row = [f"{len(recs)} ({', '.join(f'{k}: {v}' for k, v in sorted(phases.items()))})",
           fmt(m("request_count", "avg"), 0), str(errored)]
    for k in ("time_to_first_token", "inter_token_latency", "request_latency"):
        row.append(" / ".join(fmt(m(k, st)) for st in ("avg", "p50", "p99")))
    row.append(fmt(m("benchmark_duration", "avg")))
    return head, [row], f"AIPerf `aiperf_version` {s.get('aiperf_version')}, `schema_version` {s.get('schema_version')}"

def guidellm_rows(d):
    rep = json.load(open(os.path.join(d, "out", "benchmarks.json")))
    head = ["benchmark", "successful / errored / incomplete", "TTFT ms mean / median / p99",
            "ITL ms mean / median / p99", "request latency s mean / median / p99"]
    rows = []
    for b in rep["benchmarks"]:
        st = b["config"]["strategy"]
        name = st["type_"] + (f"@{st['rate']}" if st.get("rate") is not None else "")
        t = b["metrics"]["request_totals"]
        row = [name, f"{t['successful']} / {t['errored']} / {t['incomplete']}"]
        for k in ("time_to_first_token_ms", "inter_token_latency_ms", "request_latency"):
            s = b["metrics"][k]["successful"]
            row.append(" / ".join(fmt(x, 3 if k == "request_latency" else 2)
                                  for x in (s["mean"], s["median"], s["percentiles"]["p99"])))
        rows.append(row)
    md = rep["metadata"]
    return head, rows, (f"GuideLLM report `metadata.version` {md.get('version')}, "
                        f"`guidellm_version` {md.get('guidellm_version')}")

def inference_perf_rows(d):
    head = ["file", "load count", "successes / failures", "TTFT s mean / median / p99",
            "ITL s mean / median / p99", "request latency s mean / median / p99"]
    rows = []
    files = sorted(glob.glob(os.path.join(d, "out", "stage_*_lifecycle_metrics.json")))
    files.append(os.path.join(d, "out", "summary_lifecycle_metrics.json"))
    for f in files:
        r = json.load(open(f))
        lat = r["successes"]["latency"]
        row = [os.path.basename(f), str(r["load_summary"]["count"]),
               f"{r['successes']['count']} / {r['failures']['count']}"]
        for k in ("time_to_first_token", "inter_token_latency", "request_latency"):
            s = lat.get(k) or {}
            row.append(" / ".join(fmt(s.get(x), 4) for x in ("mean", "median", "p99")))
        rows.append(row)
    return head, rows, "inference-perf lifecycle reports (seconds)"

HEADLINES = {"aiperf": aiperf_rows, "guidellm": guidellm_rows, "inference-perf": inference_perf_rows}

NOTES = {
    "aiperf": """\
- Tokenizer: AIPerf 0.13.0 with `HF_HUB_OFFLINE=1` resolves `--tokenizer` only through the Hugging
  Face cache (`snapshot_download(local_files_only=True)`); a plain directory path is refused with
  `HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name'`. So the
  recording lays the pinned tokenizer (`fixtures/tokenizers/smollm2-135m-instruct/tokenizer.json`,
  symlinked, plus a minimal `tokenizer_config.json`) out as an offline cache entry
  `local/smollm2-135m-instruct` under `HF_HOME=.tools/hf-home` (tests/tools/lib.sh, `kvt_tokenizer`).
- `--warmup-request-count 2`: see the phase counts above for whether warm-up records are exported.
- Server metrics: AIPerf scrapes the server's `/metrics` by default; llama.cpp's `llamacpp:` series
  land in `out/server_metrics_export.{json,csv}`.
- AIPerf warns that client-side token counts differ from the server's `usage` (the server counts the
  chat template's tokens too): kept as written.
- `out/inputs.json` holds the synthetic prompts sent; `out/logs/aiperf.log` AIPerf's own log.""",
    "guidellm": """\
- GuideLLM 0.8.1 has no `guidellm benchmark` command any more: `guidellm run` takes a scenario file
  (`scenario.yaml`, committed) or `kind=...,key=value` options.
- Per-request rows live in `benchmarks[i].requests.{successful,errored,incomplete}[]` (plus `total`);
  each row carries `request_id`, `info.timings` (Unix seconds), `request_args` (the request body,
  prompt included), `output`, token counts and per-request `time_to_first_token_ms`,
  `inter_token_latency_ms`, `request_latency` (s).
- A sweep (synchronous + throughput + constant rates) was tried first: ~2 minutes per server on this
  busy 2-core box, so the recording uses two constant rates instead.""",
    "inference-perf": """\
- Streamed `/v1/completions` with `server.type: vllm` (llama.cpp speaks the same OpenAI-compatible
  API). Its `synthetic` data generator refuses the chat API (`Unsupported API type`), so the
  completion API is used.
- No `stage_N_prometheus_metrics.json` / `summary_prometheus_metrics.json`: inference-perf reads
  server metrics only by PromQL queries to a Prometheus server (`metrics.prometheus.url` or Google
  managed); there is none here, and llama.cpp's `/metrics` text endpoint is not a query API. The
  `metrics:` section is therefore left out of the config (collection disabled).
- `out/per_request_lifecycle_metrics.json` (per_request: true) holds per-request rows: `start_time`,
  `end_time` (monotonic seconds), `request` (body), `response` (the raw SSE text), `info`, `error`.
- `out/config.yaml` (the resolved config), `out/inference-perf.partial.stage_N.yaml` (a per-stage
  report, `version: 0.2.1`, `run{uid,eid,time}`, `results.request_performance.aggregate{...}`) and
  `out/validation.json` (its own checks of the reports) are written by inference-perf itself;
  `inference-perf.yaml` is the config it was given.""",
}

tools = {}
for rec_path in sorted(glob.glob(os.path.join(out, "*", "*", "recording.json"))):
    d = os.path.dirname(rec_path)
    rec = json.load(open(rec_path))
    tools.setdefault(os.path.basename(os.path.dirname(d)), []).append((d, rec))

index = []
for tdir, recs in sorted(tools.items()):
    recs.sort(key=lambda x: KV_ORDER.get(x[1]["server"]["kv_cache_type"], 9))
    tool = recs[0][1]["tool"]
    L = [f"# {tool} {recs[0][1]['tool_version']}: real output against llama.cpp (CPU stand-in)", "",
         "Written by the real tool, unedited, under `<kv>/out/`; re-recorded with "
         f"`scripts/record-real-tools.sh {tool}` (this README is generated by it).", "",
         "**CPU stand-in recording**: SmolLM2-135M-Instruct (Q4_1 GGUF) on llama.cpp's HTTP server on a "
         "2-core CPU box, no GPU. The `f16` folder is the B0 analogue (KV cache in f16); **`q8_0` is "
         "llama.cpp's 8-bit integer KV cache (blocks of 32 with an fp16 scale), an 8-bit stand-in, "
         "not FP8**. Numbers are CPU numbers on a shared machine, meaningful only as what the tool "
         "writes.", ""]
    for d, rec in recs:
        kv = rec["server"]["kv_cache_type"]
        s = rec["server"]
        L += [f"## `{kv}/`", "",
              f"- date (`date -u`): {rec['date_utc']}; wall time {rec['wall_s']:.1f} s",
              f"- {tool} {rec['tool_version']}, Python {rec['python']}",
              f"- server: llama.cpp via xllamacpp {s['xllamacpp_version']}, KV cache {kv}, "
              f"{s['slots']} slot, {s['threads']} thread, ctx {s['ctx']}, flash attention on; model "
              f"`{s['model_file']}` sha256 `{s['model_sha256']}`",
              f"- startup log: `{s['log_kv_cache']}`",
              "- command (run from the repository root; the URL's port was picked by the server):", "",
              "```sh", rec["command_line"], "```", ""]
        cfg = [c for c in ("scenario.yaml", "inference-perf.yaml") if os.path.exists(os.path.join(d, c))]
        if cfg:
            L += [f"The config file the command read is committed as `{kv}/{cfg[0]}` (it was written to "
                  "the temp work folder named in the command; byte-identical, see `recording.json`).", ""]
        else:
            L += ["No config file: everything is on the command line.", ""]
        head, rows, label = HEADLINES[tool](d)
        L += [f"Headline numbers from the tool's own summary ({label}):", "",
              "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        L += ["| " + " | ".join(r) + " |" for r in rows]
        L += ["", "Files (`recording.json` lists them with sha256):", ""]
        L += [f"- `{kv}/{f['path']}` ({size(f['bytes'])})" for f in rec["files"]]
        if rec["left_out"]:
            L += ["", "Left out:", ""]
            L += [f"- `{f['path']}` ({size(f['bytes'])}): {f['reason']}" for f in rec["left_out"]]
        else:
            L += ["", "Left out: nothing (every file the tool wrote is under 1 MiB)."]
        L.append("")
    L += ["## Notes", "", NOTES.get(tool, ""), "",
          "Besides the tool's files: `console.log` is the command's stdout and stderr as captured, "
          "`server-<kv>.log` llama.cpp's log for this recording only (startup with the KV-cache "
          "lines, then the requests), `recording.json` the facts above in JSON. The outputs keep "
          "this machine's absolute paths (temp folders, `.tools/hf-home`) as the tool wrote them.", ""]
    open(os.path.join(out, tdir, "README.md"), "w").write("\n".join(L))
    for d, rec in recs:
        index.append((tdir, rec))

I = ["# Real outputs from the real tools", "",
     "What the benchmark tools KV Gate imports really write, recorded against the real local llama.cpp "
     "servers (`make llm`): SmolLM2-135M-Instruct on CPU, KV cache **f16** (B0 analogue) and "
     "**q8_0** (an 8-bit integer stand-in, **not FP8**). A CPU stand-in recording: the shapes, units "
     "and fields are the tools' own; the numbers are a 2-core CPU's.", "",
     "Re-record with `make tools` then `scripts/record-real-tools.sh [aiperf|guidellm|inference-perf]` "
     "(starts and stops its own servers; rewrites the folders and these READMEs). Synthetic, "
     "hand-written fixtures stay in `../imports/`.", "",
     "| folder | tool | KV | recorded (UTC) | wall s | main files |", "|---|---|---|---|---|---|"]
MAIN = {"aiperf": "out/profile_export.jsonl, out/profile_export_aiperf.json",
        "guidellm": "out/benchmarks.json", "inference-perf":
        "out/summary_lifecycle_metrics.json, out/stage_N_lifecycle_metrics.json"}
for tdir, rec in index:
    kv = rec["server"]["kv_cache_type"]
    I.append(f"| [`{tdir}/{kv}/`]({tdir}/README.md) | {rec['tool']} {rec['tool_version']} | {kv} | "
             f"{rec['date_utc']} | {rec['wall_s']:.1f} | {MAIN.get(rec['tool'], '')} |")
I += ["", "Not recorded here: lm-evaluation-harness and Inspect AI (installed by "
      "`scripts/tools-setup.sh`, not exercised by these recordings).", ""]
open(os.path.join(out, "README.md"), "w").write("\n".join(I))
EOF
say "done: $OUT"
[ -z "$work" ] || rm -rf "$work"
