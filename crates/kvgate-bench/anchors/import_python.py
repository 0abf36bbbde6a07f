"""Anchor (b) of the import benchmark: a plain Python script, standard library only, that stores
a `vllm bench serve --save-detailed` result the way `kvgate import` does: `json.load` the file,
build one `run_requests` row per request (times in ms on the run clock, chunk times as a JSON
array), `executemany` them into the table of anchors/run_requests.sql in one transaction.

Usage: import_python.py RESULT.json DATABASE (the table exists already)."""
import json
import sqlite3
import sys

path, database = sys.argv[1], sys.argv[2]
with open(path, encoding="utf-8") as f:
    result = json.load(f)

starts = result["start_times"]
zero = min(starts)


def rows():
    columns = zip(
        starts,
        result["queue_times"],
        result["input_lens"],
        result["output_lens"],
        result["ttfts"],
        result["itls"],
        result["latencies"],
        result["generated_texts"],
        result["errors"],
    )
    for i, (start, queue, input_len, output_len, ttft, itl, latency, text, error) in enumerate(columns):
        start_ms = (start - zero) * 1000.0
        queue_ms = queue * 1000.0
        planned = start_ms - queue_ms
        if error == "":
            first = start_ms + ttft * 1000.0
            chunks = [first]
            at = first
            for gap in itl:
                at += gap * 1000.0
                chunks.append(at)
            yield (1, 0, i, 0, None, "ok", planned, start_ms, queue_ms, first,
                   start_ms + latency * 1000.0, None, input_len, output_len, None, None, None,
                   text, json.dumps(chunks), None, None, None, None)
        else:
            # vLLM's 0 placeholders of a failed request are not measurements: stored absent.
            yield (1, 0, i, 0, None, "error", planned, start_ms, queue_ms, None, None, None,
                   input_len, None, None, None, error, text, "[]", None, None, None, None)


db = sqlite3.connect(database, isolation_level=None)
db.execute("PRAGMA synchronous = NORMAL")
db.execute("BEGIN")
db.executemany("INSERT INTO run_requests VALUES (" + ", ".join(["?"] * 23) + ")", rows())
db.execute("COMMIT")
db.close()
