#!/usr/bin/env bash
# Live interop check, cheap enough for CI: installs AIPerf (scripts/tools-setup.sh aiperf, no torch),
# starts ONE real llama.cpp server (f16 KV), runs AIPerf briefly against it, then imports the fresh
# profile_export.jsonl with `kvgate import --format aiperf` and checks that KV Gate stored what AIPerf
# wrote: one per-request run with as many rows as AIPerf's records, the same count as AIPerf's own
# summary (request_count), the same errors and the same mean TTFT. The server is always stopped by PID.
# Ends with "N passed, N failed". KVGATE_BIN: the CLI (default target/debug/kvgate).
# Files are kept in $TOOLS_LIVE_DIR (default: a temp dir, removed on success).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source tests/tools/lib.sh

KVGATE_BIN=${KVGATE_BIN:-target/debug/kvgate}
kvt_suite aiperf-live

check "llm-setup (llama.cpp server and model)" scripts/llm-setup.sh
check "tools-setup aiperf (aiperf==0.13.0 in .tools/aiperf)" scripts/tools-setup.sh aiperf
[ "$failed" -eq 0 ] || finish
kvt_tokenizer

check "f16 server ready" kvt_start_server f16 "$dir"
[ "$failed" -eq 0 ] || finish
echo "  f16 server ${KVT_URL[f16]} (pid ${KVT_PID[f16]})"

REQUESTS=6
run_aiperf() {
  local t0; t0=$(kvt_ms)
  .tools/aiperf/bin/aiperf profile --model "$KVT_MODEL_NAME" --url "${KVT_URL[f16]}" \
    --endpoint-type chat --streaming --tokenizer "$KVT_TOKENIZER_ID" \
    --request-count "$REQUESTS" --concurrency 1 \
    --synthetic-input-tokens-mean 64 --synthetic-input-tokens-stddev 0 \
    --output-tokens-mean 16 --extra-inputs ignore_eos:true --random-seed 7 \
    --ui none --no-gpu-telemetry --no-server-metrics \
    --output-artifact-dir "$dir/aiperf" >"$dir/aiperf.log" 2>&1 || { tail -n 30 "$dir/aiperf.log" >&2; return 1; }
  local ms=$(($(kvt_ms) - t0))
  printf '  aiperf took %d.%03d s\n' $((ms / 1000)) $((ms % 1000))
}
check "aiperf profile: $REQUESTS streamed chat requests against the f16 server" run_aiperf
kvt_stop_server f16

export_ok() { # the records and the summary exist; prints the counts the import must match
  "$KVT_PY" - "$dir/aiperf" >"$dir/expect.env" <<'EOF' || return 1
import json, sys
d = sys.argv[1]
recs = [json.loads(l) for l in open(f"{d}/profile_export.jsonl") if l.strip()]
summary = json.load(open(f"{d}/profile_export_aiperf.json"))
phase = lambda r: r["metadata"].get("benchmark_phase") or r["metadata"].get("phase_name")
prof = [r for r in recs if phase(r) == "profiling"]
errored = [r for r in prof if r.get("error")]
ok = [r for r in prof if not r.get("error")]
ttft = [r["metrics"]["time_to_first_token"]["value"] for r in ok if "time_to_first_token" in r["metrics"]]
assert all(r["metrics"]["time_to_first_token"]["unit"] == "ms" for r in ok if "time_to_first_token" in r["metrics"])
print(f"RECORDS={len(recs)} PROFILING={len(prof)} ERRORED={len(errored)}")
# request_count counts the successful requests; errors are counted apart (a live server may
# drop a connection: the import must keep that request as an error, not lose it).
errors = summary.get("error_request_count") or {}
print(f"SUMMARY_COUNT={int(summary['request_count']['avg'])} SUMMARY_ERRORS={int(errors.get('avg') or 0)}")
print(f"SUMMARY_TTFT={summary['time_to_first_token']['avg']!r} RECORD_TTFT={sum(ttft) / len(ttft)!r}")
print(f"AIPERF_VERSION={summary['aiperf_version']}")
EOF
  # shellcheck disable=SC1091
  source "$dir/expect.env"
  echo "  profile_export.jsonl: $RECORDS records ($PROFILING profiling, $ERRORED errored); summary request_count $SUMMARY_COUNT; aiperf $AIPERF_VERSION"
}
check "profile_export.jsonl and profile_export_aiperf.json written and parsed" export_ok
# No warm-up: every record is a profiling record, so the file, the summary and the import agree.
summary_ok() {
  [ "${RECORDS:-x}" = "$REQUESTS" ] && [ "${PROFILING:-y}" = "$RECORDS" ] &&
    [ $(( ${SUMMARY_COUNT:-0} + ${SUMMARY_ERRORS:-0} )) = "$RECORDS" ] && [ "${SUMMARY_ERRORS:-z}" = "${ERRORED:-w}" ]
}
check "AIPerf wrote $REQUESTS profiling records; its summary's request_count and error_request_count add up to them" summary_ok

# A relative KVGATE_BIN is taken from the repository root.
case $KVGATE_BIN in /*) ;; */*) KVGATE_BIN=$PWD/$KVGATE_BIN ;; esac
bin_ok() { [ -x "$KVGATE_BIN" ] || { echo "  no executable $KVGATE_BIN (build it: make build, or set KVGATE_BIN)" >&2; return 1; }; }
check "kvgate binary $KVGATE_BIN" bin_ok
[ "$failed" -eq 0 ] || finish

db=$dir/ws.sqlite
kvgate() { "$KVGATE_BIN" --db "$db" "$@"; }
import_ok() {
  kvgate study create live >/dev/null || return 1
  kvgate manifest freeze fixtures/manifests/smollm2-135m-cpu-b0.json --study live >/dev/null || return 1
  kvgate import --study live --cell B0 --format aiperf "$dir/aiperf/profile_export.jsonl" >"$dir/import.txt" || return 1
  sed 's/^/  /' "$dir/import.txt"
  grep -q 'written by aiperf' "$dir/import.txt"
}
check "kvgate import --format aiperf of the fresh profile_export.jsonl" import_ok

runs_ok() { # one per-request run; ok + failed = AIPerf's records = its summary's request_count
  kvgate run list --study live --json >"$dir/runs.json" || return 1
  "$KVT_PY" - "$dir/runs.json" "${RECORDS:-}" "${ERRORED:-}" <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))
want, errored = int(sys.argv[2]), int(sys.argv[3])
assert len(runs) == 1, f"{len(runs)} runs"
r = runs[0]
print(f"  run {r['id']}: {r['granularity']}, {r['ok']} ok + {r['failed']} failed, state {r['state']}")
assert r["granularity"] == "per_request", r["granularity"]
assert r["ok"] + r["failed"] == want, f"{r['ok']} + {r['failed']} != {want} records"
assert r["failed"] == errored, f"{r['failed']} failed != {errored} errored records"
EOF
}
check "run list: imported request count equals AIPerf's profiling records and its summary" runs_ok

ttft_ok() { # the stored rows' mean TTFT equals AIPerf's own (ms, within 0.01 ms)
  local id
  id=$("$KVT_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["id"])' "$dir/runs.json") || return 1
  kvgate run show "$id" --json >"$dir/run.json" || return 1
  "$KVT_PY" - "$dir/run.json" "${SUMMARY_TTFT:-nan}" "${RECORDS:-0}" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want, records = float(sys.argv[2]), int(sys.argv[3])
rows = d["requests"]
measured = [r for r in rows if not r["warmup"]]
ttft = [r["ttft_ms"] for r in measured if r["record"]["status"] == "ok" and r["ttft_ms"] is not None]
got = sum(ttft) / len(ttft)
print(f"  {len(rows)} stored rows ({len(rows) - len(measured)} warm-up); mean TTFT {got:.4f} ms, "
      f"AIPerf summary {want:.4f} ms")
assert len(rows) == records, f"{len(rows)} stored rows != {records} records in the file"
assert abs(got - want) <= 0.01, f"{got} != {want}"
EOF
}
check "imported mean TTFT equals AIPerf's time_to_first_token.avg" ttft_ok

finish
