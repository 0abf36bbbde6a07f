#!/usr/bin/env bash
# A team's own approved prompts, live: `kvgate fixtures import` reads a team file (written here for
# the check: short questions over short texts, in English and German, one of each answer check),
# refuses a file with a bad line and a set overlapping its calibration set (naming the line, writing
# nothing), and KV Gate's runner sends the imported corpus to the real llama.cpp f16 and q8_0
# servers (SmolLM2-135M). The check: every stored verdict equals an independent judge's (this
# script's own reading of each check, in Python, over the real answers), the paired rows that
# `kvgate analyze` gives (overall and per label) equal the pairs counted here from the same
# answers, and `kvgate review list` shows each disagreement with the team's chat and check.
# Servers are stopped by PID. Ends with "N passed, N failed".
# KVGATE_BIN: the CLI (default target/debug/kvgate). Files are kept in $TOOLS_LIVE_DIR (default:
# a temp dir, removed on success).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source tests/tools/lib.sh

KVGATE_BIN=${KVGATE_BIN:-target/debug/kvgate}
case $KVGATE_BIN in /*) ;; */*) KVGATE_BIN=$PWD/$KVGATE_BIN ;; esac
kvt_suite team-live

check "llm-setup (llama.cpp server and model)" scripts/llm-setup.sh
bin_ok() { [ -x "$KVGATE_BIN" ] || { echo "  no executable $KVGATE_BIN (build it: make build, or set KVGATE_BIN)" >&2; return 1; }; }
check "kvgate binary $KVGATE_BIN" bin_ok
[ "$failed" -eq 0 ] || finish

db=$dir/ws.sqlite
kvgate() { "$KVGATE_BIN" --db "$db" "$@"; }

# The team's file: one line per prompt.
"$KVT_PY" - "$dir" <<'EOF'
import json, sys
d = sys.argv[1]
SYSTEM = {"en": "Answer with the answer only, no other words.",
          "de": "Antworte nur mit der Antwort, ohne weitere Worte."}
items = [
    # Checks as a team writes them for a model that answers in sentences: the answer word where a
    # sentence may carry it, the strict forms (a bare number, an exact name, JSON) where it may not.
    ("cap-en", "en", "capital", "The capital of France is Paris. What is the capital of France?",
     {"kind": "regex", "pattern": "(?s).*\\bParis\\b.*"}),
    ("cap-de", "de", "capital", "Die Hauptstadt von Italien ist Rom. Was ist die Hauptstadt von Italien?",
     {"kind": "regex", "pattern": "(Die Hauptstadt von Italien ist )?Rom\\.?"}),
    ("sum-en", "en", "number", "A box holds 12 apples and another box holds 30 apples. How many apples are there in total? Reply with the number.",
     {"kind": "number", "value": 42, "tolerance": 0}),
    ("sum-de", "de", "number", "Ein Zug fährt um 9 Uhr ab und kommt 3 Stunden später an. Um wie viel Uhr kommt er an? Nur die Zahl.",
     {"kind": "number", "value": 12, "tolerance": 0}),
    ("temp-en", "en", "number", "The sensor reads 21.5 degrees. What does the sensor read? Reply with the number.",
     {"kind": "regex", "pattern": "(?s).*\\b21[.,]5\\b.*"}),
    ("color-en", "en", "word", "The car in the garage is red. What color is the car? One word.",
     {"kind": "regex", "pattern": "(?i)(the car in the garage is )?red\\.?"}),
    ("color-de", "de", "word", "Das Haus am See ist blau. Welche Farbe hat das Haus? Ein Wort.",
     {"kind": "regex", "pattern": "(?is)(das haus (am see )?ist )?blau\\..*"}),
    ("json-en", "en", "json", "Order 77 is for 3 chairs. Reply with JSON only, exactly the keys order and quantity, e.g. {\"order\": 1, \"quantity\": 1}.",
     {"kind": "json_fields", "expected": {"order": 77, "quantity": 3}}),
    ("missing-en", "en", "refusal", "The memo lists a phone number for Anna only. If the memo gives no email for Bob, reply {\"error\": \"not_found\"}. What is Bob's email?",
     {"kind": "refusal"}),
    ("name-de", "de", "word", "Der Vertrag wurde von Frau Keller unterschrieben. Wer hat den Vertrag unterschrieben? Nur der Nachname.",
     {"kind": "exact_text", "text": "Keller"}),
]
with open(f"{d}/team.jsonl", "w") as f:
    for id_, lang, task, question, check in items:
        f.write(json.dumps({"id": id_, "messages": [{"role": "system", "content": SYSTEM[lang]}, {"role": "user", "content": question}],
                            "labels": {"language": lang, "task": task}, "check": check}, ensure_ascii=False) + "\n")
with open(f"{d}/calibration.jsonl", "w") as f:
    f.write(json.dumps({"id": "cal-1", "messages": [{"role": "user", "content": "Name a prime number between 10 and 12."}],
                        "check": {"kind": "number", "value": 11, "tolerance": 0}}) + "\n")
# A bad file: a pattern that does not compile on line 2. A leaky one: the calibration question,
# re-spaced and re-cased, on line 3.
lines = open(f"{d}/team.jsonl").read().splitlines()
bad = json.loads(lines[1]); bad["check"] = {"kind": "regex", "pattern": "(Rom"}
open(f"{d}/bad.jsonl", "w").write("\n".join([lines[0], json.dumps(bad, ensure_ascii=False)] + lines[2:]) + "\n")
leak = {"id": "leak", "messages": [{"role": "user", "content": "name a  PRIME number between 10 and 12."}], "check": {"kind": "refusal"}}
open(f"{d}/leaky.jsonl", "w").write("\n".join(lines[:2] + [json.dumps(leak)]) + "\n")
print(f"  {len(items)} prompts written to {d}/team.jsonl")
EOF

refused() { # file out expected...: the import fails, its message names each expected text, nothing written
  local file=$1 out=$2; shift 2
  if kvgate fixtures import "$dir/$file" --split evaluation --out "$dir/$out" --disjoint-from "$dir/calibration" >"$dir/$out.out" 2>"$dir/$out.err"; then
    echo "  $file was imported" >&2; return 1
  fi
  local want
  for want in "$@"; do grep -qF -- "$want" "$dir/$out.err" || { echo "  no \"$want\" in:" >&2; cat "$dir/$out.err" >&2; return 1; }; done
  [ ! -e "$dir/$out" ] || { echo "  $dir/$out was written" >&2; return 1; }
  sed 's/^/  /' "$dir/$out.err" | head -n 3
}
import_ok() {
  kvgate fixtures import "$dir/calibration.jsonl" --split calibration --out "$dir/calibration" >/dev/null || return 1
  refused bad.jsonl bad-corpus "line 2, \$.check.pattern" "nothing was written" || return 1
  refused leaky.jsonl leaky-corpus "line 3, \$.messages" "calibration" || return 1
  kvgate fixtures import "$dir/team.jsonl" --split evaluation --out "$dir/team" --disjoint-from "$dir/calibration" --json >"$dir/team-meta.json" || return 1
  "$KVT_PY" - "$dir/team-meta.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["kind"] == "team" and m["synthetic"] is False and m["item_count"] == 10, m
assert m["labels"]["language"] == {"de": 4, "en": 6}, m["labels"]
assert len(m["disjoint_from"]) == 1 and m["disjoint_from"][0]["split"] == "calibration", m["disjoint_from"]
print(f"  imported 10 prompts, checks {m['checks']}, items sha256 {m['items_sha256'][:12]}…")
EOF
}
check "kvgate fixtures import: a bad line and an overlap are refused (named, nothing written); the team file imports" import_ok
[ "$failed" -eq 0 ] || finish

for kv in f16 q8_0; do
  check "$kv server ready" kvt_start_server "$kv" "$dir"
done
[ "$failed" -eq 0 ] || finish

run_ok() {
  kvgate study create team >/dev/null &&
    kvgate manifest freeze --study team fixtures/manifests/smollm2-135m-cpu-b0.json >/dev/null &&
    kvgate manifest freeze --study team fixtures/manifests/smollm2-135m-cpu-q8.json >/dev/null || return 1
  "$KVT_PY" -c '
import json, sys
p = json.load(open("fixtures/policies/demo-cpu.json"))
p["segments"].append({"name": "team de", "filter": {"labels": {"language": "de"}}, "margin": 0.1, "protected": False})
json.dump(p, open(sys.argv[1], "w"))' "$dir/policy.json" || return 1
  kvgate policy lock --study team --file "$dir/policy.json" --by live >/dev/null || return 1
  local t0 ms; t0=$(kvt_ms)
  kvgate run quality --study team --cell B0 --endpoint "${KVT_URL[f16]}" --startup-log "$dir/server-f16.log" \
    --corpus "$dir/team" --warmup 0 >"$dir/run-b0.txt" 2>&1 || { cat "$dir/run-b0.txt" >&2; return 1; }
  kvgate run quality --study team --cell Q8 --endpoint "${KVT_URL[q8_0]}" --startup-log "$dir/server-q8_0.log" \
    --corpus "$dir/team" --warmup 0 >"$dir/run-q8.txt" 2>&1 || { cat "$dir/run-q8.txt" >&2; return 1; }
  ms=$(($(kvt_ms) - t0))
  printf '  both cells ran the 10 prompts in %d.%03d s\n' $((ms / 1000)) $((ms % 1000))
}
check "kvgate run quality: the team corpus on B0 (f16) and Q8 (q8_0)" run_ok
kvt_stop_all
[ "$failed" -eq 0 ] || finish

judged_ok() {
  local ids id
  ids=$(kvgate run list --study team --json | "$KVT_PY" -c 'import json,sys; print(" ".join(str(r["id"]) for r in json.load(sys.stdin) if r["kind"] == "quality"))') || return 1
  for id in $ids; do kvgate run show "$id" --json >"$dir/run-$id.json" || return 1; done
  kvgate analyze --study team --json >"$dir/analysis.json" || return 1
  kvgate review list --study team --agreeing 10 --json >"$dir/review.json" || return 1
  "$KVT_PY" - "$dir" <<'EOF'
import glob, json, re, sys
from decimal import Decimal, InvalidOperation
d = sys.argv[1]
items = {json.loads(l)["id"]: json.loads(l) for l in open(f"{d}/team/items.jsonl")}
NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")

def judge(check, text):
    """This script's own reading of each check."""
    t = text.strip()
    if not t:
        return False
    k = check["kind"]
    if k == "exact_text":
        return t == check["text"]
    if k == "regex":
        return re.fullmatch(check["pattern"], t) is not None
    if k == "number":
        if not NUMBER.fullmatch(t):
            return False
        return abs(Decimal(t) - Decimal(str(check["value"]))) <= Decimal(str(check["tolerance"]))
    def obj(s):
        try:
            pairs = json.loads(s, parse_float=Decimal, parse_int=Decimal, object_pairs_hook=lambda p: p)
        except ValueError:
            return None
        if not isinstance(pairs, list) or len({k for k, _ in pairs}) != len(pairs):
            return None
        return dict(pairs)
    o = obj(t)
    if k == "refusal":
        return o == {"error": "not_found"}
    if k == "json_fields":
        want = {k2: Decimal(str(v)) if isinstance(v, (int, float)) else v for k2, v in check["expected"].items()}
        return o is not None and o == want
    raise AssertionError(k)

verdicts = {}
n = 0
for f in sorted(glob.glob(f"{d}/run-*.json")):
    r = json.load(open(f))
    for q in r["requests"]:
        if q["warmup"]:
            continue
        item = items[q["record"]["item_id"]]
        text = q["record"].get("output_text") or ""
        mine = judge(item["check"], text) if q["record"]["status"] == "ok" else False
        theirs = q["verdict"]["accepted"]
        assert mine == theirs, f"{r['run']['cell']} {item['source_id']}: KV Gate {theirs}, this judge {mine}, answer {text!r}"
        verdicts[(r["run"]["cell"], item["id"])] = theirs
        n += 1
assert n == 20, n
print(f"  {n} real answers: every KV Gate verdict equals this script's own judgement")

def pairs(keep):
    n = b = c = 0
    for iid, item in items.items():
        if not keep(item):
            continue
        x, y = verdicts[("B0", iid)], verdicts[("Q8", iid)]
        n += 1; b += x and not y; c += y and not x
    return (n, b, c)
a = json.load(open(f"{d}/analysis.json"))
q8 = [c for c in a["cells"] if c["cell"] == "Q8"][0]
rows = {p["stratum"]: (p["n"], p["b"], p["c"]) for p in q8["paired"]}
want = {"overall": pairs(lambda i: True), "team de": pairs(lambda i: i["labels"]["language"] == "de")}
for key in ("language", "task", "context_length"):
    for v in {i["labels"][key] for i in items.values()}:
        want[f"label.{key}={v}"] = pairs(lambda i, key=key, v=v: i["labels"][key] == v)
for s, w in want.items():
    assert rows.get(s) == w, f"{s}: analysis {rows.get(s)}, counted {w}"
accepted = {cell: sum(v for (c, _), v in verdicts.items() if c == cell) for cell in ("B0", "Q8")}
print(f"  accepted B0 {accepted['B0']}/10, Q8 {accepted['Q8']}/10; Q8 against B0 overall n {want['overall'][0]}, b {want['overall'][1]}, c {want['overall'][2]}; {len(want)} rows equal the count")

queue = json.load(open(f"{d}/review.json"))
disagree = sorted(i for i in items if verdicts[("B0", i)] != verdicts[("Q8", i)])
shown = sorted(p["item_id"] for p in queue["pairs"] if p["disagreement"])
assert shown == disagree, f"queue {shown}, disagreements {disagree}"
# Agreeing pairs are listed too (--agreeing), so the team's items are shown even when the cells agree.
assert len(queue["pairs"]) == 10, len(queue["pairs"])
for p in queue["pairs"]:
    t = p["team"]
    assert t["source_id"] == items[p["item_id"]]["source_id"] and t["messages"] == items[p["item_id"]]["messages"], p["item_id"]
    assert t["check"] == items[p["item_id"]]["check"] and t["target"], p["item_id"]
print(f"  review queue: {len(shown)} disagreement(s) and {len(queue['pairs']) - len(shown)} agreeing pairs, each with the team's chat and check")
EOF
}
check "verdicts = an independent judge; analyze's pairs (overall, per label, the label segment) = the count; the review shows the team's items" judged_ok
finish
