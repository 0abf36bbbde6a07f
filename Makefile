# The two commands of README.md: `make run` and `make test`. Both install what is missing first.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
# Where cargo puts binaries (honours CARGO_TARGET_DIR); evaluated only when a recipe needs it.
TARGET_DIR = $(shell $(CARGO) metadata --no-deps --format-version 1 | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')

.PHONY: run test setup ui build test-rust test-ui test-llm llm lint e2e bench contract fmt fuzz \
	tools test-tools-live test-tools

## Build and open the workbench on the default database (seeded with a synthetic demo study).
# The binary `make build` made (a `cargo run` of the app alone would resolve features differently
# and rebuild half the tree).
run: build
	"$(TARGET_DIR)/debug/kvgate-desktop"

## Run every test: Rust (incl. the Tauri mock-runtime command tests and the drift checks),
## the UI unit tests, lints and type checks, the end-to-end journeys in the real window, and the
## live interop check of a real benchmark tool (AIPerf) against the real llama.cpp server.
test: setup ui test-rust test-ui lint test-llm e2e test-tools-live

setup:
	@scripts/setup.sh

ui: setup
	npm run build

build: ui
	$(CARGO) build -p kvgate-desktop -p kvgate-cli

test-rust: ui llm
	$(CARGO) test --workspace

test-ui: setup
	npm run test:ui

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	npm run check

e2e: build llm
	node tests/e2e/run.mjs

## Every parser of kvgate-formats and the validator under cargo-fuzz (nightly), each for a bounded
# time (FUZZ_RUNS executions, default 1000000; FUZZ_SECONDS cap, default 300); prints one table.
fuzz: setup
	scripts/fuzz.sh

## The real llama.cpp server (f16 KV = B0 analogue, q8_0 KV = 8-bit candidate stand-in) in .llm/.
llm:
	@scripts/llm-setup.sh

test-llm: llm
	tests/llm/smoke.sh

## The real benchmark tools whose files KV Gate imports, pinned, each in its own venv under .tools/:
# AIPerf, GuideLLM (pulls torch with CUDA wheels, ~6 GB), inference-perf (needs Python >= 3.12;
# skipped with a warning without one), lm-evaluation-harness, Inspect AI. Re-record
# fixtures/real-tools/ with scripts/record-real-tools.sh.
tools:
	@scripts/tools-setup.sh

## Live interop checks: AIPerf (installed alone, no torch) against one real llama.cpp server, its
# fresh profile_export.jsonl imported by `kvgate` and compared with AIPerf's own summary; and the
# lm-eval round trip: KV Gate's exported task run by lm-eval against the f16 and q8_0 servers,
# imported, and compared item by item and pair by pair with KV Gate's own runner; and a team's own
# prompts imported, run on both servers, each verdict compared with an independent judge.
test-tools-live: build llm
	KVGATE_BIN="$(TARGET_DIR)/debug/kvgate" tests/tools/aiperf-live.sh
	KVGATE_BIN="$(TARGET_DIR)/debug/kvgate" tests/tools/harness-live.sh
	KVGATE_BIN="$(TARGET_DIR)/debug/kvgate" tests/tools/team-live.sh

## Heavier live checks, not part of `make test`: GuideLLM and inference-perf (whichever `make tools`
# installed) against a real llama.cpp server; their files parsed and, with the CLI built, imported.
test-tools: llm
	tests/tools/tools-live.sh

## Benchmarks: one table, each benchmark against its named anchor.
# `kvgate` and the harness are built in one cargo call, so features resolve once; the import and
# analyze and envelope benchmarks run `kvgate`, the dispatch benchmark runner's `dispatch_bench`
# example. KVGATE_BENCH_ONLY=analyze (envelope, import, tokenize, weights, dispatch) picks one.
bench: setup llm
	.llm/venv/bin/pip install -q --disable-pip-version-check tokenizers==0.22.2 pandas==2.2.3 scipy==1.17.1 aiohttp==3.14.5
	npm run build
	$(CARGO) build -q --release -p kvgate-cli -p kvgate-bench -p kvgate-runner -p kvgate-desktop --bin kvgate --bin kvgate-bench --bin kvgate-desktop --example dispatch_bench
	KVGATE_BENCH_PYTHON=$(CURDIR)/.llm/venv/bin/python "$(TARGET_DIR)/release/kvgate-bench"

## Regenerate the TypeScript bindings and JSON Schemas from the Rust types.
contract:
	KVGATE_BLESS=1 $(CARGO) test -q -p kvgate-app --test app contract

fmt:
	$(CARGO) fmt --all
