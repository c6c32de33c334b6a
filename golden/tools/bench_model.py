#!/usr/bin/env python3
"""Prefill and decode tokens/s: the harness executor on a platform vs PyTorch eager, same run.

Usage:
  python3 golden/tools/bench_model.py --harness build/bin/harness [--model configs/models/tiny-llama]
      [--platform configs/platforms/cpu.yaml] [--prompt 128] [--decode 64] [--repeats 3]

Both sides get the same checkpoint (`harness model synth`, seed 0), the same prompt and greedy
decoding with a KV cache, in f32 on the CPU with as many threads as cores:
  harness   `harness model run --json --repeats R` (prefill, then one token per step over its paged cache)
  pytorch   transformers' model in eager mode: one forward of the prompt with use_cache=True, then one
            forward per token with past_key_values; best of R, after one unmeasured warm-up
Prints tokens/s of each and the harness/pytorch ratios (target >= 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM


def pytorch(ckpt: Path, prompt: list[int], decode: int, repeats: int) -> tuple[float, float, list[int]]:
    torch.set_num_threads(os.cpu_count() or 1)
    model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32, attn_implementation="eager").eval()
    ids = torch.tensor([prompt])
    best_prefill, best_decode, tokens = float("inf"), float("inf"), []
    with torch.inference_mode():
        for r in range(repeats + 1):
            start = time.perf_counter()
            out = model(ids, use_cache=True)
            prefill = time.perf_counter() - start
            past, nxt = out.past_key_values, int(out.logits[0, -1].argmax())
            tokens = [nxt]
            start = time.perf_counter()
            for _ in range(decode - 1):
                out = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
                past, nxt = out.past_key_values, int(out.logits[0, -1].argmax())
                tokens.append(nxt)
            dec = time.perf_counter() - start
            if r > 0:  # the first run warms up
                best_prefill, best_decode = min(best_prefill, prefill), min(best_decode, dec)
    return len(prompt) / best_prefill, (decode - 1) / best_decode, tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", required=True)
    ap.add_argument("--model", default="configs/models/tiny-llama")
    ap.add_argument("--platform", default="configs/platforms/cpu.yaml")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    prompt = [(i * 7 + 3) % 1000 for i in range(args.prompt)]
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = Path(tmp) / "ckpt"
        subprocess.run([args.harness, "model", "synth", "--model", args.model, "--out", str(ckpt)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ours = json.loads(subprocess.run(
            [args.harness, "model", "run", "--model", str(ckpt), "--platform", args.platform, "--json",
             "--greedy", str(args.decode), "--repeats", str(args.repeats + 1),
             "--prompt-ids", ",".join(map(str, prompt))], check=True, capture_output=True, text=True).stdout)
        pt_prefill, pt_decode, pt_tokens = pytorch(ckpt, prompt, args.decode, args.repeats)
    same = ours["generated"] == pt_tokens
    print(f"{args.model} on {ours['backend']}, f32, prompt {args.prompt}, decode {args.decode}, {os.cpu_count()} threads;"
          f" greedy tokens {'identical' if same else 'DIFFER'}")
    print(f"  prefill  harness {ours['prefill_tokens_per_s']:9.0f} tok/s  pytorch {pt_prefill:9.0f} tok/s"
          f"  ratio {ours['prefill_tokens_per_s'] / pt_prefill:5.2f}x")
    print(f"  decode   harness {ours['decode_tokens_per_s']:9.0f} tok/s  pytorch {pt_decode:9.0f} tok/s"
          f"  ratio {ours['decode_tokens_per_s'] / pt_decode:5.2f}x")


if __name__ == "__main__":
    main()
