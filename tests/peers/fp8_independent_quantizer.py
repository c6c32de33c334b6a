#!/usr/bin/env python3
"""RUN BY HAND ONLY, NEVER BY CI: needs torch and transformers (golden/tools/requirements.txt).

An FP8 checkpoint the harness did not write, through the whole Day-0 workflow:
  1. transformers makes a tiny DeepSeek-V3 (from_config, seed 0) and saves it (save_pretrained, bf16):
     the unquantized original O;
  2. a quantizer written here, not golden/tools/fp8_blocks.py, applies the documented block rule
     (amax / 448 per block, f8_e4m3, f32 weight_scale_inv) to the 2-D projections it picks
     (--layout deepseek: every decoder projection, as DeepSeek-V3 ships; --layout linear-only:
     nn.Linear modules only, the routed experts left in bf16, as a module-walking quantizer does),
     with --block (default 32) and ragged last blocks, and writes the result with safetensors plus a
     config.json carrying quantization_config: the checkpoint Q;
  3. the reference goldens of Q: golden/tools/dump_hf.py (weights dequantized by the rule) for two
     prompts, and gen_e2e.py --model Q (served answers); dump_hf.py of O for the quantization budget;
  4. `harness day0 --model Q --golden G --original-golden GO`: every stage must pass;
  5. the refusals: Q with one weight_scale_inv a block column short (a K that is not block-aligned
     with no ragged scale) and with a scale of the wrong shape: `harness load` exits 2 naming it.
Exit status 0 when all of it holds.

Usage: python3 tests/peers/fp8_independent_quantizer.py [--harness build/bin/harness] [--block 32]
       [--layout deepseek|linear-only] [--out DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "configs" / "models" / "tiny-deepseek-v3"


def make_original(out: Path) -> None:
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    cfg = json.loads((TOKENIZER / "config.json").read_text())
    cfg.pop("architectures", None)
    cfg.pop("model_type", None)
    cfg.pop("num_nextn_predict_layers", None)
    torch.manual_seed(0)
    config = DeepseekV3Config(**cfg)
    model = DeepseekV3ForCausalLM(config).to(torch.bfloat16)
    with torch.no_grad():  # spread the logits: transformers' init (std 0.02) leaves them nearly flat
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.normal_(0, 1 / p.shape[-1] ** 0.5 if "embed" not in name else 1.0)
    model.save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER / f, out / f)


def quantize_block(w: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """q f8_e4m3 and f32 scales, one per block x block tile; the last tiles ragged."""
    n, k = w.shape
    rows, cols = (n + block - 1) // block, (k + block - 1) // block
    x = w.double()
    scale = torch.empty(rows, cols, dtype=torch.float32)
    q = torch.empty(n, k, dtype=torch.float8_e4m3fn)
    for i in range(rows):
        for j in range(cols):
            tile = x[i * block:(i + 1) * block, j * block:(j + 1) * block]
            amax = tile.abs().max().item()
            s = torch.tensor(amax / 448.0 if amax > 0 else 1.0, dtype=torch.float32)
            scale[i, j] = s
            q[i * block:(i + 1) * block, j * block:(j + 1) * block] = \
                (tile / s.double()).clamp(-448, 448).float().to(torch.float8_e4m3fn)
    return q, scale


def quantize(src: Path, dst: Path, block: int, layout: str) -> int:
    dst.mkdir(parents=True)
    tensors = {}
    for f in sorted(src.glob("*.safetensors")):
        tensors.update(load_file(f))
    pick = re.compile(r"^model\.layers\.\d+\..*(proj|proj_with_mqa)\.weight$")
    out, n = {}, 0
    for name, t in tensors.items():
        routed = ".mlp.experts." in name
        if t.dim() == 2 and pick.match(name) and not (layout == "linear-only" and routed):
            out[name], out[name + "_scale_inv"] = quantize_block(t, block)
            n += 1
        else:
            out[name] = t
    save_file(out, str(dst / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                                     "weight_block_size": [block, block]}
    (dst / "config.json").write_text(json.dumps(config, indent=2))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / f, dst / f)
    return n


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, text=True, capture_output=True, **kw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", default=str(ROOT / "build" / "bin" / "harness"))
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--layout", choices=["deepseek", "linear-only"], default="deepseek")
    ap.add_argument("--out")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="fp8_peer."))
    work.mkdir(parents=True, exist_ok=True)
    py, tools = sys.executable, ROOT / "golden" / "tools"
    failures = []
    try:
        original, quantized = work / "original", work / "quantized"
        make_original(original)
        n = quantize(original, quantized, args.block, args.layout)
        print(f"quantized {n} projections in {args.block}x{args.block} blocks ({args.layout})")
        golden, golden_original = work / "golden", work / "golden-original"
        for model, out in ((quantized, golden), (original, golden_original)):
            for stem, prompt in (("hello", "Hello! Who are you?"), ("france", "The capital of France is")):
                r = run([py, str(tools / "dump_hf.py"), "--model", str(model), "--prompt", prompt,
                         "--prompt-id", stem, "--out", str(out)])
                if r.returncode != 0:
                    print(r.stdout, r.stderr)
                    return 1
        r = run([py, str(tools / "gen_e2e.py"), "--model", str(quantized), "--out", str(golden)])
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            return 1
        r = run([args.harness, "day0", "--json", "--no-db", "--model", str(quantized), "--golden", str(golden),
                 "--original-golden", str(golden_original), "--out", str(work / "day0")])
        report = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
        for s in report.get("stages", []):
            print(f"  {s['status']:>8}  {s['id']}: {s['summary']}")
            if s["status"] != "pass":
                failures.append(f"day0 stage {s['id']}: {s['status']}")
        if r.returncode != 0:
            failures.append(f"day0 exited {r.returncode}: {r.stderr[-2000:]}")

        # The refusals: a scale one block column short, and one of the wrong shape entirely.
        tensors = load_file(quantized / "model.safetensors")
        victim = next(k for k in tensors if k.endswith("o_proj.weight_scale_inv"))
        for label, bad in (("a block column short", tensors[victim][:, :-1]),
                           ("the wrong shape", torch.ones(1, 1))):
            broken = work / f"broken-{label.replace(' ', '-')}"
            shutil.copytree(quantized, broken)
            save_file({**tensors, victim: bad.contiguous()}, str(broken / "model.safetensors"), metadata={"format": "pt"})
            r = run([args.harness, "load", "--model", str(broken)])
            if r.returncode != 2 or victim not in r.stderr:
                failures.append(f"load of a scale {label}: exit {r.returncode}, {r.stderr.strip()}")
            else:
                print(f"  refused ({label}): {r.stderr.strip().splitlines()[-1]}")
    finally:
        if not args.keep and not args.out:
            shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    print("fp8 independent quantizer:", "FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
