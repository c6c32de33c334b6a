#!/usr/bin/env python3
"""Engine-profile traces from a real profiler, for `harness profile import` (tests/data/traces/).

Usage:  python3 golden/tools/gen_profile_trace.py [--out tests/data/traces] [--steps 12]

PyTorch's profiler (torch.profiler.profile, CPU activity) around transformers' forward of
tiny-mistral (tests/data/models/tiny-mistral, f32, eager, one thread): one prefill step of the
13-token prompt and --steps decode steps with the KV cache, each under record_function("prefill")
or record_function("decode") as an engine annotates its steps; export_chrome_trace writes the
Chrome trace-event JSON a serving engine's torch profiler writes (vLLM's --profiler-config torch).
Written twice, by two separate runs (the same stack: their kernels' times differ by the machine's
noise only), gzipped: torch_cpu_tiny_mistral_run1.json.gz and _run2.json.gz. Trimmed: the events'
"args" (record-function ids, input shapes) are dropped, everything else is the profiler's own.
"""
from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function
from transformers import AutoModelForCausalLM

ROOT = Path(__file__).resolve().parents[2]
PROMPT_13 = [1000, 42, 7, 999, 318, 64, 512, 3, 870, 233, 101, 676, 45]


@torch.no_grad()
def trace(model, steps: int, out: Path) -> None:
    ids = torch.tensor([PROMPT_13])
    model(ids)  # warm-up, outside the profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("prefill"):
            o = model(ids, use_cache=True)
        past, tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
        for _ in range(steps):
            with record_function("decode"):
                o = model(tok, past_key_values=past, use_cache=True)
            past, tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
    with tempfile.TemporaryDirectory() as d:
        raw = Path(d) / "trace.json"
        prof.export_chrome_trace(str(raw))
        t = json.loads(raw.read_text())
    for e in t["traceEvents"]:
        if e.get("ph") == "X":
            e.pop("args", None)
    with gzip.open(out, "wt", compresslevel=9) as f:
        json.dump(t, f, separators=(",", ":"))
    kinds = {}
    for e in t["traceEvents"]:
        kinds[(e.get("ph"), e.get("cat"))] = kinds.get((e.get("ph"), e.get("cat")), 0) + 1
    print(f"{out}: {len(t['traceEvents'])} events {kinds}, {out.stat().st_size} bytes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "traces"))
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(ROOT / "tests/data/models/tiny-mistral", dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for run in (1, 2):
        trace(model, args.steps, out / f"torch_cpu_tiny_mistral_run{run}.json.gz")


if __name__ == "__main__":
    main()
