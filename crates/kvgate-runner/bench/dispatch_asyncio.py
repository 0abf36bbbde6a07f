#!/usr/bin/env python3
"""Open-loop dispatch precision of a Python asyncio + aiohttp client: the client design of
vLLM's `bench serve`, measured exactly like `examples/dispatch_bench.rs` (lag = time the request
task starts sending minus its planned arrival, constant rate, absolute targets, no drift).

Needs aiohttp (outside the repo, e.g. `python3 -m venv /tmp/kvgate-bench-venv &&
/tmp/kvgate-bench-venv/bin/pip install aiohttp`). Runs against the same local fast SSE server as
the Rust bench, started here from its binary and ended by its PID:

    /tmp/kvgate-bench-venv/bin/python crates/kvgate-runner/bench/dispatch_asyncio.py \
        --server-bin target/release/examples/dispatch_bench --rate 2000 --seconds 10

Loopback only; bounded in rate and time.
"""

import argparse
import asyncio
import json
import subprocess
import sys
import time

import aiohttp


async def send(session, url, payload, planned_s, t0, lags, counts):
    lags.append((time.perf_counter() - t0 - planned_s) * 1e3)
    try:
        async with session.post(
            url, data=payload, headers={"Content-Type": "application/json"}
        ) as resp:
            done = False
            async for line in resp.content:
                if line.strip() == b"data: [DONE]":
                    done = True
            ok = resp.status == 200 and done
            counts["ok" if ok else "error"] += 1
    except Exception:  # every failure is counted, none is raised
        counts["error"] += 1


async def run(url, rate, seconds):
    payload = json.dumps(
        {
            "model": "bench",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 4,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    planned = [i / rate for i in range(int(rate * seconds))]
    lags, counts, tasks = [], {"ok": 0, "error": 0}, []
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, trust_env=False
    ) as session:
        t0 = time.perf_counter()
        for planned_s in planned:
            # Sleep to the absolute target (yielding even when late, so tasks can start).
            await asyncio.sleep(max(0.0, t0 + planned_s - time.perf_counter()))
            tasks.append(
                asyncio.create_task(send(session, url, payload, planned_s, t0, lags, counts))
            )
        await asyncio.gather(*tasks)
    return lags, counts, len(planned)


def rank(sorted_values, p):
    i = min(max(int(-(-p * len(sorted_values) // 1)), 1), len(sorted_values))
    return sorted_values[i - 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="base URL of a running fast server, e.g. http://127.0.0.1:P/fast")
    where.add_argument("--server-bin", help="path of the dispatch_bench binary to start as the server")
    args = parser.parse_args()
    if not (0 < args.rate <= 20000 and 0 < args.seconds <= 600):
        sys.exit("expected 0 < --rate <= 20000 and 0 < --seconds <= 600")

    server = None
    base = args.url
    if args.server_bin:
        server = subprocess.Popen(
            [args.server_bin, "serve", "--seconds", str(args.seconds + 60)],
            stdout=subprocess.PIPE,
            text=True,
        )
        base = server.stdout.readline().strip()
    try:
        lags, counts, planned = asyncio.run(
            run(base.rstrip("/") + "/v1/chat/completions", args.rate, args.seconds)
        )
    finally:
        if server is not None:
            server.kill()
            server.wait()
    lags.sort()
    print(
        json.dumps(
            {
                "client": f"Python {sys.version.split()[0]} asyncio + aiohttp {aiohttp.__version__}",
                "url": base,
                "rate": args.rate,
                "seconds": args.seconds,
                "planned": planned,
                "ok": counts["ok"],
                "lag_ms": {"p50": rank(lags, 0.50), "p99": rank(lags, 0.99), "max": lags[-1]},
            }
        )
    )


if __name__ == "__main__":
    main()
