"""Anchor of the analyze benchmark: what `kvgate analyze` computes, written as a competent
analyst would write it with pandas (vectorized, no Python loop over rows).

    analyze_pandas.py DB POLICY_JSON STUDY

Reads the measured (non-warm-up) requests of the study's finished runs of frozen cells from the
workspace SQLite file, then computes, under the policy's rules (crates/kvgate-core/src/analysis.rs):
- per cell and class: p50/p90/p99 of TTFT, mean ITL and e2e over `ok` requests (numpy's linear
  interpolation), their counts and the `ok` requests with at most one output token;
- per cell and class: useful goodput over the cell's load runs (its quality runs when it has no
  load run): cohort = planned in [t0, t0 + interval), good = ok, finished by the drain deadline,
  accepted (unless the run has no verdicts), every SLO of its class met;
- per candidate against B0, on each cell's first pass per item (lowest run, then repeat, then
  plan index): n, b, c overall and per language and length class;
- the noise floor: B0's first pass against its second.

Prints one JSON object: the figures, and seconds spent importing, reading and computing.
"""

import json
import os
import sys
import time

T_START = time.perf_counter()

# This folder holds tokenize.py (another anchor), which would shadow the standard library's
# module of that name that pandas imports.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

import sqlite3  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

UNCLASSIFIED = "(unclassified)"

RUNS = """
SELECT r.id AS run_id, r.kind, m.cell
FROM runs r JOIN manifests m ON m.id = r.manifest_id
WHERE r.study_id = (SELECT id FROM studies WHERE name = ?)
  AND r.state != 'running' AND m.frozen_at IS NOT NULL
ORDER BY r.id
"""

REQUESTS = """
SELECT q.run_id, q.idx, q.repeat, q.item_id, q.status, q.planned_arrival_ms, q.dispatch_ms,
       q.first_token_ms, q.finish_ms, q.prompt_tokens, q.completion_tokens, q.verdict_accepted
FROM runs r JOIN run_requests q ON q.run_id = r.id AND q.warmup = 0
WHERE r.study_id = (SELECT id FROM studies WHERE name = ?)
ORDER BY r.id, q.idx
"""

STRATA = {
    2: ("language", {"en", "de"}),
    3: ("length_class", {"short", "medium", "long"}),
}
ALL_STRATA = [
    {"en", "de"},
    {"short", "medium", "long"},
    {"begin", "middle", "end"},
    {"literal", "numeric", "multi_document", "business_rule"},
    {"present", "absent"},
]


def num(x):
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def main():
    pd.options.mode.copy_on_write = True
    db, policy_path, study = sys.argv[1:4]
    with open(policy_path) as f:
        policy = json.load(f)
    t_import = time.perf_counter() - T_START

    t = time.perf_counter()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    runs = pd.read_sql_query(RUNS, con, params=(study,))
    q = pd.read_sql_query(REQUESTS, con, params=(study,))
    con.close()
    t_read = time.perf_counter() - t

    t = time.perf_counter()
    q = q[q["run_id"].isin(runs["run_id"])]
    q["cell"] = q["run_id"].map(runs.set_index("run_id")["cell"])

    classes = policy["classes"]
    k = len(classes)
    names = np.array([c["name"] for c in classes] + [UNCLASSIFIED], dtype=object)
    pt = q["prompt_tokens"].to_numpy(dtype="float64", na_value=np.nan)
    q["cls"] = np.select([pt <= c["max_input_tokens"] for c in classes], list(range(k)), default=k)

    ok = q["status"].eq("ok")
    ct = q["completion_tokens"]
    q["ttft"] = q["first_token_ms"] - q["dispatch_ms"]
    q["e2e"] = q["finish_ms"] - q["dispatch_ms"]
    q["itl"] = ((q["e2e"] - q["ttft"]) / (ct - 1)).where(ct > 1)

    # Latency per cell and class, `ok` requests only.
    lat = q[ok]
    by = lat.groupby(["cell", "cls"])
    metrics = ["ttft", "itl", "e2e"]
    pct = by[metrics].quantile([0.5, 0.9, 0.99]).unstack()
    counts = by[metrics].count()
    n_ok = by.size()
    not_applicable = lat["completion_tokens"].le(1).groupby([lat["cell"], lat["cls"]]).sum()
    # Every class of the policy; the unclassified bucket when any request of the cell fell in it.
    seen = q.groupby(["cell", "cls"]).size()
    cells = list(runs["cell"].unique())
    keys = [(c, i) for c in cells for i in range(k)] + [
        (c, k) for c in cells if (c, k) in seen.index
    ]
    latency = []
    for cell, i in keys:
        row = {"cell": cell, "class": names[i], "count": int(n_ok.get((cell, i), 0)),
               "itl_not_applicable": int(not_applicable.get((cell, i), 0))}
        for m in metrics:
            n = int(counts[m].get((cell, i), 0))
            if n and (cell, i) in pct.index:
                p = pct.loc[(cell, i), m]
                row[f"{m}_ms"] = [num(p[0.5]), num(p[0.9]), num(p[0.99]), n]
            else:
                row[f"{m}_ms"] = [None, None, None, 0]
        latency.append(row)

    # Useful goodput per run and class, over the load runs of a cell that has any.
    has_load = runs["kind"].eq("load").groupby(runs["cell"]).any()
    counted = runs[~runs["cell"].map(has_load) | runs["kind"].eq("load")]["run_id"]
    g = q[q["run_id"].isin(counted)]
    by_run = g.groupby("run_id")
    interval_ms = policy["goodput"]["interval_s"] * 1000.0
    end = by_run["planned_arrival_ms"].transform("min") + interval_ms
    deadline = end + policy["goodput"]["drain_s"] * 1000.0
    slo_only = by_run["verdict_accepted"].transform("count").eq(0)
    cohort = g["planned_arrival_ms"] < end
    cls = g["cls"].to_numpy()

    def limit(key):
        return np.array([c["slo"].get(key, np.nan) for c in classes] + [np.nan])[cls]

    def meets(values, lim):
        return np.isnan(lim) | (values.to_numpy() <= lim)

    itl_limit = limit("itl_ms")
    good = (
        cohort
        & g["status"].eq("ok")
        & (g["finish_ms"] <= deadline)
        & (slo_only | g["verdict_accepted"].eq(1))
        & (cls < k)
        & meets(g["ttft"], limit("ttft_ms"))
        & meets(g["e2e"], limit("e2e_ms"))
        & (np.isnan(itl_limit) | g["completion_tokens"].le(1).to_numpy() | (g["itl"].to_numpy() <= itl_limit))
    )
    totals = pd.DataFrame({"cell": g["cell"], "cls": g["cls"], "good": good, "cohort": cohort})
    totals = totals.groupby(["cell", "cls"])[["good", "cohort"]].sum()
    runs_per_cell = g.groupby("cell")["run_id"].nunique()
    goodput = []
    for cell in runs_per_cell.index:
        for i in range(k + 1):
            good_n = int(totals["good"].get((cell, i), 0))
            cohort_n = int(totals["cohort"].get((cell, i), 0))
            if i == k and cohort_n == 0:
                continue
            goodput.append({"cell": cell, "class": names[i], "good": good_n, "cohort": cohort_n,
                            "per_s": good_n / policy["goodput"]["interval_s"] / runs_per_cell[cell]})

    # Paired verdicts: each cell's first pass per item; B0's second pass for the noise floor.
    v = q.loc[q["item_id"].notna() & q["verdict_accepted"].notna(),
              ["cell", "item_id", "run_id", "repeat", "idx", "verdict_accepted"]]
    v["item"], items = pd.factorize(v["item_id"])
    v = v.sort_values(["cell", "item", "run_id", "repeat", "idx"])
    first = v.drop_duplicates(["cell", "item"]).set_index(["cell", "item"])["verdict_accepted"]
    passes = v.drop_duplicates(["cell", "item", "run_id", "repeat"])
    second = passes[passes.groupby(["cell", "item"]).cumcount().eq(1)]
    second = second.set_index(["cell", "item"])["verdict_accepted"]

    parts = pd.Series(items).str.split("-", expand=True)
    valid = pd.Series(items).str.count("-").eq(7)
    for col, allowed in enumerate(ALL_STRATA, start=2):
        valid &= parts[col].isin(allowed)

    def pair(base, cand):
        j = pd.concat([base.rename("x"), cand.rename("y")], axis=1, join="inner")
        return j, (j["x"].eq(1) & j["y"].eq(0)), (j["x"].eq(0) & j["y"].eq(1))

    paired = []
    base = first.xs("B0") if "B0" in first.index.get_level_values(0) else None
    for cell in cells:
        if cell == "B0" or base is None or cell not in first.index.get_level_values(0):
            continue
        j, b, c = pair(base, first.xs(cell))
        paired.append({"cell": cell, "stratum": "overall", "n": len(j), "b": int(b.sum()), "c": int(c.sum())})
        ok_strata = valid.to_numpy()[j.index]
        for col, (dim, _) in STRATA.items():
            value = parts[col].to_numpy()[j.index]
            frame = pd.DataFrame({"v": value, "b": b.to_numpy(), "c": c.to_numpy()})[ok_strata]
            per = frame.groupby("v").agg(n=("b", "size"), b=("b", "sum"), c=("c", "sum"))
            for name, r in per.iterrows():
                paired.append({"cell": cell, "stratum": f"{dim}={name}", "n": int(r["n"]),
                               "b": int(r["b"]), "c": int(r["c"])})
    noise = None
    if base is not None and "B0" in second.index.get_level_values(0):
        j, b, c = pair(base, second.xs("B0"))
        if len(j):
            noise = {"n": len(j), "b": int(b.sum()), "c": int(c.sum())}
    t_compute = time.perf_counter() - t

    json.dump({
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "measured_requests": len(q),
        "seconds": {"import": t_import, "read": t_read, "compute": t_compute},
        "latency": latency,
        "goodput": goodput,
        "paired": paired,
        "noise_floor": noise,
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
