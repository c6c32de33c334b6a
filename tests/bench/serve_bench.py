#!/usr/bin/env python3
"""Throughput of the embedded server (`harness serve`) at several concurrencies.

Starts `harness serve --model MODEL --port 0`, then for each concurrency C sends N completion
requests (token-id prompts, max_tokens T, ignore_eos, temperature 0) from C client threads and
reports output tokens/s, the ratio to concurrency 1 measured in the same run, mean TTFT-free
latency, and the engine's mean batch size over that phase (from GET /metrics). Python stdlib only.

  tests/bench/serve_bench.py --harness build/bin/harness [--model configs/models/tiny-llama]
                             [--requests 48] [--max-tokens 64] [--concurrency 1,4,16] [--kv-tokens N] [--json]
"""
import argparse
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def metrics(base):
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        text = r.read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(harness_engine_\w+) (\S+)$", text, re.M)}


def phase(base, concurrency, n, max_tokens, prompt_len):
    work = queue.Queue()
    for i in range(n):
        work.put([1000] + [(37 * i + 11 * j + 5) % 1000 for j in range(prompt_len - 1)])
    latencies, tokens, errors = [], [0], []
    lock = threading.Lock()

    def client():
        while True:
            try:
                prompt = work.get_nowait()
            except queue.Empty:
                return
            t0 = time.perf_counter()
            try:
                r = post(base + "/v1/completions", {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                                                    "ignore_eos": True})
            except Exception as e:  # noqa: BLE001 - reported, not raised
                with lock:
                    errors.append(str(e))
                continue
            with lock:
                latencies.append(time.perf_counter() - t0)
                tokens[0] += r["usage"]["completion_tokens"]

    before = metrics(base)
    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    after = metrics(base)
    steps = after["harness_engine_steps_total"] - before["harness_engine_steps_total"]
    seqs = after["harness_engine_batched_sequences_total"] - before["harness_engine_batched_sequences_total"]
    return {"concurrency": concurrency, "requests": n, "errors": len(errors), "output_tokens": tokens[0],
            "seconds": wall, "tokens_per_s": tokens[0] / wall,
            "mean_latency_s": sum(latencies) / max(len(latencies), 1),
            "mean_batch_size": seqs / steps if steps else 0.0, "steps": int(steps)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harness", default=os.path.join(ROOT, "build", "bin", "harness"))
    ap.add_argument("--model", default=os.path.join(ROOT, "configs", "models", "tiny-llama"))
    ap.add_argument("--platform", default="")
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--kv-tokens", type=int, default=0, help="the server's --kv-tokens (default: its own)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    levels = [int(x) for x in a.concurrency.split(",")]
    cmd = [a.harness, "serve", "--model", a.model, "--port", "0", "--max-batch", str(max(levels))]
    if a.platform:
        cmd += ["--platform", a.platform]
    if a.kv_tokens:
        cmd += ["--kv-tokens", str(a.kv_tokens)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"on (http://\S+)", line)
        if not m:
            sys.exit("serve_bench: the server did not start: " + line)
        base = m.group(1)
        post(base + "/v1/completions", {"prompt": [1000, 1, 2], "max_tokens": 4, "ignore_eos": True})  # warm-up
        rows = [phase(base, c, a.requests, a.max_tokens, a.prompt_len) for c in levels]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    base_tps = rows[0]["tokens_per_s"]
    for r in rows:
        r["speedup_vs_first"] = r["tokens_per_s"] / base_tps
    if a.json:
        print(json.dumps({"model": os.path.basename(a.model.rstrip("/")), "max_tokens": a.max_tokens, "phases": rows}, indent=2))
        return
    print(f"{os.path.basename(a.model.rstrip('/'))}: {a.requests} requests x {a.max_tokens} tokens per concurrency level")
    print(f"{'conc':>5} {'tok/s':>10} {'x conc1':>8} {'mean batch':>11} {'latency s':>10} {'errors':>7}")
    for r in rows:
        print(f"{r['concurrency']:>5} {r['tokens_per_s']:>10.1f} {r['speedup_vs_first']:>8.2f} "
              f"{r['mean_batch_size']:>11.2f} {r['mean_latency_s']:>10.3f} {r['errors']:>7}")


if __name__ == "__main__":
    main()
