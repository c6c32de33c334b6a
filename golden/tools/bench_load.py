#!/usr/bin/env python3
"""Load throughput: `harness load` vs the Python `safetensors` package on the same files.

Usage:
  python3 golden/tools/bench_load.py --harness build/bin/harness [--gib 1.0] [--repeats 3]

Synthesizes (once, under $TMPDIR/h0-bench-load) a Llama-shaped checkpoint of about --gib GiB in
4 shards with `harness model synth`, then, in the same run and with the files in the page cache
(each reader runs once unmeasured first):
  harness      `harness load --model DIR --tp 1 --rank 0 --json` (pread into owned memory, all threads)
  harness+sha  the same with --sha256 (every tensor checksummed as loaded)
  safetensors  safe_open(..., framework="pt") and get_tensor().clone() of every tensor, one shard
               after another: get_tensor alone only maps the file (0.8.0 is zero-copy), clone
               reads the bytes into process memory as the harness's load does
  safetensors+sha256  the same, each tensor hashed with hashlib (OpenSSL's SHA-256, as the harness)
and prints GB/s of each and the ratios harness / python of the same kind (target >= 1).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import torch
from safetensors import safe_open


def config_for(gib: float) -> dict:
    hidden, inter, vocab = 2048, 5632, 32000
    per_layer = 4 * hidden * hidden + 3 * hidden * inter + 2 * hidden
    layers = max(1, int((gib * 2**30 / 2 - 2 * vocab * hidden) / per_layer))
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
            "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": 16,
            "num_key_value_heads": 16, "vocab_size": vocab, "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
            "tie_word_embeddings": False}


def prepare(harness: str, gib: float) -> Path:
    root = Path(tempfile.gettempdir()) / "h0-bench-load"
    model = root / f"llama-{gib:g}gib"
    ckpt = root / f"llama-{gib:g}gib-ckpt"
    if not (ckpt / "model.safetensors.index.json").exists():
        model.mkdir(parents=True, exist_ok=True)
        (model / "config.json").write_text(json.dumps(config_for(gib), indent=1))
        subprocess.run([harness, "model", "synth", "--model", str(model), "--out", str(ckpt), "--shards", "4"],
                       check=True, stdout=subprocess.DEVNULL)
    return ckpt


def harness_load(harness: str, ckpt: Path, sha: bool) -> tuple[float, int]:
    cmd = [harness, "load", "--model", str(ckpt), "--json"] + (["--sha256"] if sha else [])
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    rank = out["ranks"][0]
    return rank["seconds"], rank["bytes_read"]


def python_load(ckpt: Path, sha: bool = False) -> tuple[float, int]:
    start = time.perf_counter()
    total = 0
    for f in sorted(ckpt.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as s:
            for k in s.keys():
                t = s.get_tensor(k).clone()  # get_tensor maps the file; clone reads it into memory
                if sha:
                    hashlib.sha256(t.view(torch.uint8).numpy()).hexdigest()
                total += t.numel() * t.element_size()
    return time.perf_counter() - start, total


def best(fn, repeats: int) -> tuple[float, int]:
    fn()  # warm the page cache and the code paths
    runs = [fn() for _ in range(repeats)]
    return min(r[0] for r in runs), runs[0][1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", required=True)
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    ckpt = prepare(args.harness, args.gib)
    rows = {
        "harness": best(lambda: harness_load(args.harness, ckpt, False), args.repeats),
        "harness+sha256": best(lambda: harness_load(args.harness, ckpt, True), args.repeats),
        "safetensors (python)": best(lambda: python_load(ckpt), args.repeats),
        "safetensors+sha256": best(lambda: python_load(ckpt, True), args.repeats),
    }
    base = rows["safetensors (python)"][1] / rows["safetensors (python)"][0] / 1e9
    print(f"checkpoint {ckpt}: {rows['harness'][1] / 2**30:.2f} GiB, {os.cpu_count()} cores, page cache warm")
    sha_base = rows["safetensors+sha256"][1] / rows["safetensors+sha256"][0] / 1e9
    for name, (seconds, nbytes) in rows.items():
        gbps = nbytes / seconds / 1e9
        ref = sha_base if "sha" in name else base
        print(f"  {name:22s} {seconds:7.3f} s  {gbps:6.2f} GB/s  {gbps / ref:5.2f}x the python row of the same kind")


if __name__ == "__main__":
    main()
