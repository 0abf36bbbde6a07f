"""Starts one llama.cpp OpenAI-compatible server (xllamacpp) with a chosen KV-cache type.

Prints one JSON line {"event":"ready",...} on stdout once /health answers 200, then blocks until
SIGTERM/SIGINT and exits 0. llama.cpp's startup log (the KV-cache evidence) goes to --log.
Run it with the venv made by scripts/llm-setup.sh (`make llm`).
"""
import argparse, hashlib, json, os, signal, sys, threading, time, urllib.request

KV = {"f16": "GGML_TYPE_F16", "q8_0": "GGML_TYPE_Q8_0", "q4_0": "GGML_TYPE_Q4_0", "bf16": "GGML_TYPE_BF16"}

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--model", required=True)
ap.add_argument("--kv", choices=sorted(KV), required=True)
ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
ap.add_argument("--ctx", type=int, default=2048)
ap.add_argument("--parallel", type=int, default=1, help="slots")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--log", help="file for llama.cpp's log (stderr)")
ap.add_argument("--ready-timeout", type=float, default=120.0)
a = ap.parse_args()

stop = threading.Event()
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda *_: stop.set())

h = hashlib.sha256()
with open(a.model, "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)

err = sys.stderr
if a.log:
    # The native code writes to fd 2 itself: redirect the fd, not just sys.stderr.
    err = os.fdopen(os.dup(2), "w")
    fd = os.open(a.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)

import xllamacpp as x  # noqa: E402  (after the fd redirect, so its output lands in --log)

p = x.CommonParams()
p.model.path = a.model
p.n_ctx = a.ctx
p.n_parallel = a.parallel
p.cpuparams.n_threads = a.threads
p.cpuparams_batch.n_threads = a.threads
p.hostnames = ["127.0.0.1"]
p.port = a.port
p.endpoint_metrics = True
p.endpoint_slots = True
p.verbosity = 4
p.cache_type_k = p.cache_type_v = getattr(x.ggml_type, KV[a.kv])
# Needed for a quantized V cache; enabled for every type so the attention backend is held constant.
p.flash_attn_type = x.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED

if stop.is_set():  # stopped before loading
    sys.exit(0)
try:
    server = x.Server(p)  # blocks while the model loads
except RuntimeError as e:
    print(f"llm_server: {e} (see {a.log or 'the log above'})", file=err, flush=True)
    sys.exit(1)
url = server.listening_address
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: ignore *_proxy
deadline = time.monotonic() + a.ready_timeout
while not stop.is_set():
    try:
        with direct.open(url + "/health", timeout=2) as r:
            if r.status == 200:
                break
    except OSError:
        pass
    if time.monotonic() > deadline:
        print(f"llm_server: {url}/health not ready after {a.ready_timeout}s", file=err, flush=True)
        sys.exit(1)
    stop.wait(0.05)
else:
    sys.exit(0)

ready = {"event": "ready", "url": url, "pid": os.getpid(), "kv": a.kv, "model_sha256": h.hexdigest()}
print(json.dumps(ready, separators=(",", ":")), flush=True)
while not stop.wait(1.0):
    pass
del server  # ~Server stops the HTTP and main loops
sys.exit(0)
