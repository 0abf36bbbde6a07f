"""Anchor of the envelope benchmark: the operating envelope `kvgate analyze` computes, written as
a competent analyst would write it with pandas (and scipy's Student t quantile) (vectorized over requests; the loops
run over runs and points only).

    envelope_pandas.py DB STUDY

Reads the study's locked policy (its latest version, the one `kvgate analyze` applies), its
finished runs of frozen cells and their measured (non-warm-up) requests from
the workspace SQLite file and, under the policy's rules (crates/kvgate-core/src/analysis/):
- goodput runs: a cell's clocked, non-empty load runs (its quality runs when it has none);
  a point is the cell, the run's offered open-loop rate and the manifest's admission limit
  (`scheduler.max_num_seqs`); the runs at a point are its repeats;
- per run and class (prompt tokens <= the class's max_input_tokens, first match; none:
  unclassified): cohort = planned in [t0, t0 + interval) with t0 the run's first planned
  arrival; good = cohort, `ok`, finished by t0 + interval + drain, accepted (unless the run has
  no verdicts), classified, every SLO of the class met (a timing an SLO needs missing: not
  good; ITL only for more than one output token); goodput = good / interval;
- per point and class: repeats, goodput mean, sd and Student-t 95 % interval over the runs,
  good share = mean over the runs with a cohort of good / cohort (and its interval), good and
  cohort summed, SLO-only when a run had no verdicts; cost per good response = the runs' wall
  hours (first dispatch to last finish) x the cost rate x instances (GPUs of the manifest, at
  least 1) / good of every class; the unclassified bucket only when its cohort has requests;
- per point and class, the SLO shares: of the cohort, the `ok` requests within each declared
  SLO of the class (TTFT, ITL, end-to-end; drain and verdict aside), summed over the runs;
- per point and class, latency against load: p50/p90/p99 and count of TTFT (first token -
  dispatch) and end-to-end (finish - dispatch) over the `ok` requests of the runs at the point;
- per cell the knee: the highest rate whose every class with a cohort has a share >= the bar,
  none SLO-only.

The anchor knows open-loop rate points only and says so when a goodput run offered another load.
Prints one JSON object: the figures, and seconds spent importing, reading and computing.
"""

import json
import math
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
import scipy  # noqa: E402
# The Student t quantile alone: scipy.stats would add half a second of imports to the anchor.
from scipy.special import stdtrit  # noqa: E402

UNCLASSIFIED = "(unclassified)"
LEVEL = 0.95

POLICY = """
SELECT policy_json FROM policies
WHERE study_id = (SELECT id FROM studies WHERE name = ?)
ORDER BY version DESC LIMIT 1
"""

RUNS = """
SELECT r.id AS run_id, r.kind, m.cell, r.config_json, m.text AS manifest
FROM runs r JOIN manifests m ON m.id = r.manifest_id
WHERE r.study_id = (SELECT id FROM studies WHERE name = ?)
  AND r.state != 'running' AND m.frozen_at IS NOT NULL
ORDER BY r.id
"""

REQUESTS = """
SELECT q.run_id, q.status, q.planned_arrival_ms, q.dispatch_ms, q.first_token_ms, q.finish_ms,
       q.prompt_tokens, q.completion_tokens, q.verdict_accepted
FROM runs r JOIN run_requests q ON q.run_id = r.id AND q.warmup = 0
WHERE r.study_id = (SELECT id FROM studies WHERE name = ?)
ORDER BY r.id, q.idx
"""


def num(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def open_loop_rate(config):
    """The offered rate of an open-loop run that is not a trace replay; None otherwise."""
    open_loop = (config.get("mode") or {}).get("open_loop")
    if config.get("import") is not None or not isinstance(open_loop, dict):
        return None
    rate = open_loop.get("rate")
    if open_loop.get("kind") in (None, "trace") or not isinstance(rate, (int, float)):
        return None
    return float(rate) if math.isfinite(rate) and rate > 0 else None


def summary(values):
    """n, mean, sd (n - 1) and the Student-t 95 % interval of the mean (sd and interval from 2)."""
    v = values.to_numpy(dtype="float64")
    n = len(v)
    out = {"n": n, "mean": None, "sd": None, "ci_low": None, "ci_high": None}
    if n == 0:
        return out
    mean = float(v.sum() / n)
    out["mean"] = mean
    if n < 2:
        return out
    sd = float(np.std(v, ddof=1))
    half = float(stdtrit(n - 1, 1 - (1 - LEVEL) / 2)) * sd / math.sqrt(n)
    out.update(sd=sd, ci_low=mean - half, ci_high=mean + half)
    return out


def main():
    pd.options.mode.copy_on_write = True
    db, study = sys.argv[1:3]
    t_import = time.perf_counter() - T_START

    t = time.perf_counter()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    locked = con.execute(POLICY, (study,)).fetchone()
    if locked is None:
        raise SystemExit(f"study {study!r} has no locked policy")
    policy = json.loads(locked[0])
    runs = pd.read_sql_query(RUNS, con, params=(study,))
    q = pd.read_sql_query(REQUESTS, con, params=(study,))
    con.close()
    t_read = time.perf_counter() - t

    t = time.perf_counter()
    classes = policy["classes"]
    k = len(classes)
    names = [c["name"] for c in classes] + [UNCLASSIFIED]
    interval_s = float(policy["goodput"]["interval_s"])
    interval_ms = interval_s * 1000.0
    drain_ms = policy["goodput"]["drain_s"] * 1000.0
    bar = (policy.get("envelope") or {}).get("min_good_share")
    cost_rate = (policy.get("cost") or {}).get("per_instance_hour")

    # Per run: what it offered, whether it is clocked, its cell's admission limit and instances.
    config = runs["config_json"].map(json.loads)
    manifest = runs["manifest"].map(json.loads)
    runs["rate"] = config.map(open_loop_rate)
    runs["clocked"] = config.map(lambda c: (c.get("import") or {}).get("clocked", True) is not False)
    runs["admission"] = manifest.map(lambda m: m["scheduler"]["max_num_seqs"])
    runs["instances"] = manifest.map(
        lambda m: max(1, sum(g["count"] for g in m.get("gpu_inventory", [])))
    )
    measured = q.groupby("run_id").size()
    clocked = runs[runs["clocked"] & runs["run_id"].isin(measured.index)]
    has_load = clocked["kind"].eq("load").groupby(clocked["cell"]).any()
    goodput_runs = clocked[~clocked["cell"].map(has_load) | clocked["kind"].eq("load")]
    if goodput_runs["rate"].isna().any():
        raise SystemExit(
            "envelope_pandas.py computes open-loop rate points only; runs "
            f"{list(goodput_runs.loc[goodput_runs['rate'].isna(), 'run_id'])} offered another load"
        )
    goodput_runs = goodput_runs.set_index("run_id")

    g = q[q["run_id"].isin(goodput_runs.index)]
    pt = g["prompt_tokens"].to_numpy(dtype="float64", na_value=np.nan)
    cls = np.select([pt <= c["max_input_tokens"] for c in classes], list(range(k)), default=k)
    by_run = g.groupby("run_id")
    end = by_run["planned_arrival_ms"].transform("min") + interval_ms
    cohort = g["planned_arrival_ms"] < end
    slo_only = by_run["verdict_accepted"].transform("count").eq(0)
    ttft = (g["first_token_ms"] - g["dispatch_ms"]).to_numpy()
    e2e = (g["finish_ms"] - g["dispatch_ms"]).to_numpy()
    ct = g["completion_tokens"].to_numpy(dtype="float64", na_value=np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        itl = np.where(ct > 1, (e2e - ttft) / (ct - 1), np.nan)

    def limit(key):
        limits = [c["slo"].get(key) for c in classes]
        return np.array([np.nan if x is None else x for x in limits] + [np.nan])[cls]

    def meets(values, lim):
        # NaN (a timing not recorded) never meets a limit.
        return np.isnan(lim) | (values <= lim)

    itl_limit = limit("itl_ms")
    good = (
        cohort
        & g["status"].eq("ok")
        & (g["finish_ms"] <= end + drain_ms)
        & (slo_only | g["verdict_accepted"].eq(1))
        & (cls < k)
        & meets(ttft, limit("ttft_ms"))
        & meets(e2e, limit("e2e_ms"))
        & (np.isnan(itl_limit) | (ct <= 1) | (itl <= itl_limit))
    )
    # Within each declared SLO of its class: the cohort's `ok` requests, drain and verdict aside.
    ok_cohort = (cohort & g["status"].eq("ok")).to_numpy() & (cls < k)
    ttft_limit, e2e_limit = limit("ttft_ms"), limit("e2e_ms")
    met = {
        "ttft_met": ok_cohort & ~np.isnan(ttft_limit) & (ttft <= ttft_limit),
        "itl_met": ok_cohort & ~np.isnan(itl_limit) & ((ct <= 1) | (itl <= itl_limit)),
        "e2e_met": ok_cohort & ~np.isnan(e2e_limit) & (e2e <= e2e_limit),
    }
    counted = ["good", "cohort", *met]
    per = pd.DataFrame({"run_id": g["run_id"], "cls": cls, "good": good, "cohort": cohort, **met})
    per = per.groupby(["run_id", "cls"])[counted].sum()
    # Every run has a row for every class, zeros included: its goodput is 0, not missing.
    grid = pd.MultiIndex.from_product([goodput_runs.index, range(k + 1)], names=["run_id", "cls"])
    per = per.reindex(grid, fill_value=0).reset_index()
    per["per_s"] = per["good"] / interval_s
    per["share"] = (per["good"] / per["cohort"]).where(per["cohort"] > 0)
    run_info = goodput_runs[["cell", "rate", "admission"]]
    per = per.join(run_info, on="run_id")
    per["slo_only"] = per["run_id"].map(slo_only.groupby(g["run_id"]).first())

    # Wall hours per run: first dispatch to last finish of every request sent.
    first = by_run["dispatch_ms"].min()
    last = by_run["finish_ms"].max()
    hours = ((last - first) / 3_600_000.0).where(last >= first)
    point_keys = ["cell", "rate", "admission"]
    runs_at = goodput_runs.reset_index().groupby(point_keys)["run_id"]
    point_hours = runs_at.apply(lambda ids: hours.reindex(ids).sum(min_count=len(ids)))
    point_good = per.groupby(point_keys)["good"].sum()
    instances = goodput_runs.groupby("cell")["instances"].first()

    # Latency against load: TTFT and end-to-end of the `ok` requests per point and class, every
    # measured one (numpy's linear percentiles, as kvgate's).
    ok = g["status"].eq("ok").to_numpy()
    lat = pd.DataFrame({"run_id": g["run_id"].to_numpy(), "cls": cls, "ttft": ttft, "e2e": e2e})[ok]
    lat = lat.join(run_info, on="run_id")
    by = lat.groupby(point_keys + ["cls"])[["ttft", "e2e"]]
    pct = by.quantile([0.5, 0.9, 0.99]).unstack()
    lat_n = by.count()

    def percentiles(key, metric):
        n = int(lat_n[metric].get(key, 0))
        if n == 0:
            return {"p50": None, "p90": None, "p99": None, "count": 0}
        p = pct.loc[key, metric]
        return {"p50": num(p[0.5]), "p90": num(p[0.9]), "p99": num(p[0.99]), "count": n}

    envelope = []
    for (cell, rate, admission, c), rows in per.groupby(point_keys + ["cls"], sort=True):
        cohort_n = int(rows["cohort"].sum())
        if c == k and cohort_n == 0:
            continue
        shares = rows["share"].dropna()
        slo = classes[c]["slo"] if c < k else {}

        def slo_share(key, metric):
            declared = slo.get(key) is not None
            return rows[metric].sum() / cohort_n if declared and cohort_n > 0 else None

        good_all = int(point_good[(cell, rate, admission)])
        hrs = point_hours[(cell, rate, admission)]
        cost = None
        if cost_rate is not None and good_all > 0 and not math.isnan(hrs):
            cost = hrs * cost_rate * instances[cell] / good_all
        envelope.append({
            "cell": cell,
            "offered_rps": float(rate),
            "admission_limit": int(admission),
            # KV Gate's own open-loop runs set no client cap on requests in flight.
            "client_concurrency": None,
            "class": names[c],
            "repeats": len(rows),
            "runs": sorted(int(r) for r in rows["run_id"]),
            "goodput_per_s": summary(rows["per_s"]),
            "good_share": num(shares.mean()) if len(shares) else None,
            "good_share_repeats": summary(shares),
            "good": int(rows["good"].sum()),
            "cohort": cohort_n,
            "slo_share": {
                "ttft": slo_share("ttft_ms", "ttft_met"),
                "itl": slo_share("itl_ms", "itl_met"),
                "e2e": slo_share("e2e_ms", "e2e_met"),
            },
            "ttft_ms": percentiles((cell, rate, admission, c), "ttft"),
            "e2e_ms": percentiles((cell, rate, admission, c), "e2e"),
            "slo_only": bool(rows["slo_only"].any()),
            "cost_per_good_response": cost,
        })

    knee = {}
    frame = pd.DataFrame(envelope)
    for cell in runs["cell"].unique():
        knee[cell] = None
        if bar is None or frame.empty or cell not in set(frame["cell"]):
            continue
        at = frame[(frame["cell"] == cell) & (frame["cohort"] > 0)]
        inside = (~at["slo_only"]) & (at["good_share"].astype("float64") >= bar)
        ok = inside.groupby(at["offered_rps"]).all()
        if ok.any():
            knee[cell] = float(ok[ok].index.max())
    t_compute = time.perf_counter() - t

    json.dump({
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "measured_requests": len(q[q["run_id"].isin(runs["run_id"])]),
        "points": len(per.groupby(point_keys)),
        "seconds": {"import": t_import, "read": t_read, "compute": t_compute},
        "envelope": envelope,
        "knee_rps": knee,
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
