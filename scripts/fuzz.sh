#!/usr/bin/env bash
# `make fuzz`: every parser of kvgate-formats and the validator under cargo-fuzz (libFuzzer),
# seeded with the real and malformed files of the tests, each for a bounded time. Prints one table:
# target, executions, seconds, crashes. A crash leaves its input in fuzz/artifacts/TARGET/; turn
# it into a regression test. Exits 1 when any target crashed.
#   FUZZ_RUNS      executions per target (default 1000000)
#   FUZZ_SECONDS   time cap per target (default 300)
#   FUZZ_TARGETS   space-separated subset (default: all)
# No sanitizer (-s none): the fuzzed crates hold no unsafe code, so AddressSanitizer adds nothing
# but slowness; what is looked for is a panic, an abort, a hang or unbounded memory.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${FUZZ_RUNS:-1000000}
seconds=${FUZZ_SECONDS:-300}

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

# Seeds: the files the tests read, by the format each target parses.
seed() { # target files…
  local dir=target/fuzz-seeds/$1
  shift
  mkdir -p "$dir"
  local file
  for file in "$@"; do
    # Named by path, without the leading dots of ../shared (a hidden file is no seed).
    [ -f "$file" ] && cp "$file" "$dir/$(echo "$file" | tr '/' '_' | sed 's/^[._]*//')"
  done
  return 0
}
shopt -s nullglob globstar
m=tests/imports/malformed
r=fixtures/real-tools
# The public field files beside the repository (../shared/realdata), when present; where they
# are absent (a user's clone) nullglob leaves them out and this says so.
field=../shared/realdata/field
if [ ! -d ../shared/realdata ]; then
  echo "fuzz: skipped seeds: shared field data not present (../shared/realdata); seeding from the repository's files only"
fi
seed import_vllm_bench $m/vllm-bench/**/*.* $field/vllm-bench/*.json
seed import_guidellm fixtures/imports/guidellm/* $m/guidellm/**/*.* $r/guidellm-*/*/out/benchmarks.json $field/guidellm/*.json
seed import_aiperf fixtures/imports/aiperf/* $m/aiperf/**/*.* $r/aiperf-*/*/out/profile_export.jsonl $field/aiperf/*.jsonl
seed import_inference_perf $m/inference-perf/**/*.* $r/inference-perf-*/*/out/*_metrics.json ../shared/realdata/inference-perf-kubecon-na-2025/vllm/*.json
seed import_prometheus fixtures/metrics/*.prom $m/prometheus/**/*.* $field/prometheus/*.prom
seed prometheus_exposition fixtures/metrics/*.prom $m/prometheus/**/*.*
seed import_vllm_log $m/logs/**/*.* fixtures/evidence/*.log $field/vllm-log/*.log
seed import_llamacpp_log fixtures/evidence/*.log $m/logs/**/*.* $r/*/*/server-*.log $field/llamacpp-log/acdtrx*.log
seed startup_log fixtures/evidence/*.log $m/logs/**/*.* $field/vllm-log/*.log
seed import_jsonl fixtures/demo/runs/*.jsonl $m/jsonl/**/*.*
seed run_file fixtures/demo/runs/*.jsonl $m/jsonl/**/*.*
# The validator: the recorded answers, one file each.
mkdir -p target/fuzz-seeds/validator
python3 - <<'EOF'
import json, pathlib
out = pathlib.Path("target/fuzz-seeds/validator")
for f in sorted(pathlib.Path("fixtures/demo/runs").glob("*.jsonl")):
    for i, line in enumerate(f.read_text().splitlines()):
        d = json.loads(line)
        if "request" in d:
            text = d["request"]["record"]["output_text"]
            (out / f"{f.stem}-{i:04}-a").write_bytes(b"\x00" + text.encode())
            (out / f"{f.stem}-{i:04}-b").write_bytes(b"\x03" + text.encode())
EOF

targets=${FUZZ_TARGETS:-$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^kvgate-fuzz$')}
(cd fuzz && cargo +nightly fuzz build -O -s none)

printf '%-24s %14s %9s %8s\n' target executions seconds crashes
crashed=0
for t in $targets; do
  corpus=target/fuzz-corpus/$t
  mkdir -p "$corpus" "fuzz/artifacts/$t"
  log=target/fuzz-$t.log
  start=$(date +%s)
  set +e
  # Startup logs are read line by line, each line on its own: inputs the size of the real logs
  # (about 15 KB) reach every branch, and longer ones only slow each execution down.
  case $t in
    import_vllm_log | import_llamacpp_log | startup_log) max_len=16384 ;;
    *) max_len=65536 ;;
  esac
  (cd fuzz && cargo +nightly fuzz run -O -s none "$t" "../$corpus" "../target/fuzz-seeds/$t" -- \
    -runs="$runs" -max_total_time="$seconds" -max_len="$max_len" -print_final_stats=1 \
    -artifact_prefix="artifacts/$t/") >"$log" 2>&1
  rc=$?
  set -e
  took=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=$(find "fuzz/artifacts/$t" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' \) | wc -l)
  [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes="rc=$rc"
  printf '%-24s %14s %9s %8s\n' "$t" "${execs:-?}" "$took" "$crashes"
  [ "$crashes" != 0 ] && crashed=1
done
[ "$crashed" -eq 0 ] || { echo "fuzz: crashes found; inputs in fuzz/artifacts/ (logs in target/fuzz-*.log)" >&2; exit 1; }
