#!/usr/bin/env python3
"""Prefill and decode tokens/s: the harness executor on a platform vs PyTorch eager, same run.

Usage:
  python3 golden/tools/bench_model.py --harness build/bin/harness [--model configs/models/tiny-llama]
      [--platform configs/platforms/cpu.yaml] [--prompt 128[,4096,...]] [--decode 64] [--repeats 3]
      [--attn eager|sdpa]

Both sides get the same checkpoint (`harness model synth`, seed 0), the same prompt and greedy
decoding with a KV cache, in f32 on the CPU with as many threads as cores:
  harness   `harness model run --json --repeats R` (prefill, then one token per step over its paged cache)
  pytorch   transformers' model in eager mode: one forward of the prompt with use_cache=True, then one
            forward per token with past_key_values; best of R, after one unmeasured warm-up
Prints tokens/s of each and the harness/pytorch ratios (target >= 1).

A real-width checkpoint (docs/day0.md "Models at the width they ship"): `--checkpoint DIR` runs on an
existing checkpoint (tests/bench/synth_rss.sh --keep writes one from a real config cut to 2 layers)
instead of synthesizing, `--torch-dtype bf16` runs PyTorch in the checkpoint's bf16 (eager, as a
user would), and `--baseline-harness OLD` runs a second harness binary (an earlier commit) in the
same run; each harness run's peak RSS is reported (/usr/bin/time).

Long context (docs/serving.md "Long context"): `--prompt 4096,16384,32768 --decode 1 --repeats 1
--attn sdpa` measures prefill at each length. PyTorch's eager attention materializes [heads, T, T]
scores (16 GiB per layer at 32K for tiny-llama's 4 heads in f32), which a 24 GiB machine cannot
hold; `--attn sdpa` is PyTorch's fused scaled_dot_product_attention, still eager (not compiled).
Run it 3 times and report the range.
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


def pytorch(ckpt: Path, prompt: list[int], decode: int, repeats: int,
            attn: str = "eager", dtype: torch.dtype = torch.float32) -> tuple[float, float, list[int]]:
    torch.set_num_threads(os.cpu_count() or 1)
    model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=dtype, attn_implementation=attn).eval()
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
    return len(prompt) / best_prefill, (decode - 1) / best_decode if decode > 1 else 0.0, tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", required=True)
    ap.add_argument("--model", default="configs/models/tiny-llama")
    ap.add_argument("--platform", default="configs/platforms/cpu.yaml")
    ap.add_argument("--prompt", default="128", help="prompt length(s), comma separated")
    ap.add_argument("--attn", choices=("eager", "sdpa"), default="eager",
                    help="PyTorch's attention implementation (sdpa for 16K and longer)")
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--checkpoint", help="an existing checkpoint directory (no synthesis)")
    ap.add_argument("--torch-dtype", choices=("f32", "bf16"), default="f32", help="PyTorch's dtype")
    ap.add_argument("--baseline-harness", help="a second harness binary measured in the same run")
    args = ap.parse_args()
    torch_dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.torch_dtype]

    def harness_run(binary: str, ckpt: Path, prompt: list[int]) -> dict:
        with tempfile.NamedTemporaryFile() as timing:
            out = subprocess.run(
                ["/usr/bin/time", "-f", "%M", "-o", timing.name, binary, "model", "run", "--model", str(ckpt),
                 "--platform", args.platform, "--json", "--greedy", str(args.decode), "--repeats",
                 str(args.repeats + 1), "--prompt-ids", ",".join(map(str, prompt))],
                check=True, capture_output=True, text=True).stdout
            result = json.loads(out)
            result["peak_rss_gib"] = int(Path(timing.name).read_text().split()[-1]) / 2**20
            return result

    with tempfile.TemporaryDirectory() as tmp:
        ckpt = Path(args.checkpoint) if args.checkpoint else Path(tmp) / "ckpt"
        if not args.checkpoint:
            subprocess.run([args.harness, "model", "synth", "--model", args.model, "--out", str(ckpt)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for length in (int(x) for x in args.prompt.split(",")):
            prompt = [(i * 7 + 3) % 1000 for i in range(length)]
            ours = harness_run(args.harness, ckpt, prompt)
            if args.baseline_harness:
                base = harness_run(args.baseline_harness, ckpt, prompt)
                print(f"  baseline harness ({args.baseline_harness}): prefill {base['prefill_tokens_per_s']:.1f} "
                      f"tok/s, decode {base['decode_tokens_per_s']:.2f} tok/s, peak RSS {base['peak_rss_gib']:.2f} GiB"
                      f"; greedy tokens {'identical' if base['generated'] == ours['generated'] else 'DIFFER'}")
                print(f"  harness now: prefill {ours['prefill_tokens_per_s']:.1f} tok/s, decode "
                      f"{ours['decode_tokens_per_s']:.2f} tok/s, peak RSS {ours['peak_rss_gib']:.2f} GiB; decode "
                      f"{ours['decode_tokens_per_s'] / base['decode_tokens_per_s']:.2f}x the baseline", flush=True)
            pt_prefill, pt_decode, pt_tokens = pytorch(ckpt, prompt, args.decode, args.repeats, args.attn,
                                                       torch_dtype)
            same = ours["generated"] == pt_tokens
            print(f"{args.checkpoint or args.model} on {ours['backend']}, f32 (pytorch {args.torch_dtype}), "
                  f"prompt {length}, decode {args.decode}, "
                  f"{os.cpu_count()} threads, pytorch {args.attn}; greedy tokens {'identical' if same else 'DIFFER'}")
            print(f"  prefill  harness {ours['prefill_tokens_per_s']:9.0f} tok/s  pytorch {pt_prefill:9.0f} tok/s"
                  f"  ratio {ours['prefill_tokens_per_s'] / pt_prefill:5.2f}x", flush=True)
            if args.decode > 1:
                print(f"  decode   harness {ours['decode_tokens_per_s']:9.0f} tok/s  pytorch {pt_decode:9.0f} tok/s"
                      f"  ratio {ours['decode_tokens_per_s'] / pt_decode:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
