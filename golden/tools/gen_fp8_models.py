#!/usr/bin/env python3
"""Goldens of the FP8 block-quantized tiny model, configs/models/tiny-deepseek-v3-fp8 (tiny-deepseek-v3
plus quantization_config {quant_method: fp8, weight_block_size: [16, 16]}), from torch alone.

Usage:
  python3 golden/tools/gen_fp8_models.py --harness build/bin/harness [--root REPO_ROOT]

1. `harness model synth --seed 0 --shards 2` of tiny-deepseek-v3 (the bf16 original) and of
   tiny-deepseek-v3-fp8.  fp8_blocks.quantize (torch, the documented block rule) is applied to
   every quantized projection of the original; its q and weight_scale_inv must equal the fp8
   checkpoint's bytes, and every other tensor must equal the original's.  The sha256 of each tensor
   *as torch quantized it* goes into golden/models/tiny-deepseek-v3-fp8.json (the C++ tests check
   the harness synthesizes those bytes).
2. The fp8 checkpoint loaded with its weights dequantized in torch (fp8_blocks.load_dequantized,
   f32, eager attention): golden/models/tiny-deepseek-v3-fp8/{p7,p13}.safetensors, in dump_hf's
   format (probes, logits, greedy ids).  The golden depends on the block rule, not on the
   harness's kernels.
3. The quantization error budget as torch sees it: the fp8 model's logits against the bf16
   original's goldens (golden/models/tiny-deepseek-v3/<prompt>.safetensors, same prompts): mean KL
   (original || quantized) over positions, top-1 agreement, the first greedy step that differs.
   Recorded in the JSON ("quantization_budget"), so the harness's own numbers can be checked.

The e2e goldens come from gen_e2e.py --only tiny-deepseek-v3-fp8 (it loads the checkpoint through
dump_hf.load_model, which dequantizes by the same rule).  golden/manifest.json is updated.
"""

from __future__ import annotations

import os
import sys

if "torch" in sys.modules:
    raise RuntimeError("gen_fp8_models.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dump_hf  # noqa: E402
import fp8_blocks  # noqa: E402
from manifest import update_manifest  # noqa: E402

torch.set_num_threads(1)

NAME, ORIGINAL = "tiny-deepseek-v3-fp8", "tiny-deepseek-v3"
SEED, SHARDS, GREEDY = 0, 2, 8
PRODUCER = "golden/tools/gen_fp8_models.py"
PROMPTS = {"p7": [1000, 17, 263, 951, 4, 588, 120],
           "p13": [1000, 42, 7, 999, 318, 64, 512, 3, 870, 233, 101, 676, 45]}


def synth(harness: str, model_dir: Path, out: Path) -> None:
    subprocess.run([harness, "model", "synth", "--model", str(model_dir), "--out", str(out),
                    "--seed", str(SEED), "--shards", str(SHARDS)], check=True, stdout=subprocess.DEVNULL)


def sha256(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


def torch_quantized(original: dict[str, torch.Tensor], br: int, bc: int) -> dict[str, torch.Tensor]:
    """The original checkpoint with its projections quantized by fp8_blocks (torch)."""
    out = {}
    for key, t in original.items():
        if fp8_blocks.QUANTIZED.match(key) and t.dim() == 2:
            q, s = fp8_blocks.quantize(t, br, bc)
            out[key], out[key + fp8_blocks.SCALE_SUFFIX] = q, s
        else:
            out[key] = t
    return out


def budget(root: Path, prompt_id: str, logits: torch.Tensor, greedy: torch.Tensor) -> dict:
    """KL(original || quantized) per position (mean, max), top-1 agreement, first differing greedy step."""
    path = root / "golden" / "models" / ORIGINAL / f"{prompt_id}.safetensors"
    with safe_open(str(path), "pt") as f:
        ref_logits, ref_greedy = f.get_tensor("logits").double(), f.get_tensor("greedy_ids")
    p = torch.log_softmax(ref_logits, -1)
    q = torch.log_softmax(logits.double(), -1)
    kl = (p.exp() * (p - q)).sum(-1)
    diverge = next((i for i, (a, b) in enumerate(zip(ref_greedy.tolist(), greedy.tolist())) if a != b), None)
    return {"kl_mean": kl.mean().item(), "kl_max": kl.max().item(),
            "top1_agreement": (p.argmax(-1) == q.argmax(-1)).double().mean().item(),
            "greedy_divergence": diverge, "greedy_steps": len(ref_greedy)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", required=True)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    root = Path(args.root)
    model_dir = root / "configs" / "models" / NAME
    br, bc = fp8_blocks.block_size(json.loads((model_dir / "config.json").read_text()))
    out_models = root / "golden" / "models"
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        orig_dir, fp8_dir = Path(tmp) / ORIGINAL, Path(tmp) / NAME
        synth(args.harness, root / "configs" / "models" / ORIGINAL, orig_dir)
        synth(args.harness, model_dir, fp8_dir)
        expected = torch_quantized(fp8_blocks.read_checkpoint(orig_dir), br, bc)
        got = fp8_blocks.read_checkpoint(fp8_dir)
        if set(expected) != set(got):
            raise SystemExit(f"{NAME}: tensor names differ from torch's quantization of {ORIGINAL}: "
                             f"{sorted(set(expected) ^ set(got))[:10]}")
        bad = [k for k in expected if sha256(expected[k]) != sha256(got[k])]
        quantized = sum(1 for k in expected if k.endswith(fp8_blocks.SCALE_SUFFIX))
        if bad:
            raise SystemExit(f"{NAME}: the harness's fp8 checkpoint differs from torch's quantization in "
                             f"{len(bad)} tensors, e.g. {bad[:3]}")
        print(f"{NAME}: {len(expected)} tensors ({quantized} fp8 projections) equal torch's block quantization")

        model = fp8_blocks.load_dequantized(fp8_dir, AutoModelForCausalLM, torch.float32, attn_implementation="eager")
        model.eval()
        golden_dir = out_models / NAME
        budgets = {}
        for prompt_id, ids in PROMPTS.items():
            tensors, probes = dump_hf.dump(model, ids, None, GREEDY)
            md = dump_hf.metadata(PRODUCER, NAME, prompt_id, probes, "float32", "cpu", GREEDY, None)
            md["weights"] = f"fp8 block-quantized ({br}x{bc}), dequantized in torch by golden/tools/fp8_blocks.py"
            path = golden_dir / f"{prompt_id}.safetensors"
            dump_hf.save(path, tensors, md)
            written.append(path)
            budgets[prompt_id] = budget(root, prompt_id, tensors["logits"], tensors["greedy_ids"])
            print(f"  {NAME}/{prompt_id}: greedy {tensors['greedy_ids'].tolist()}, budget vs {ORIGINAL}: "
                  f"{budgets[prompt_id]}")

    golden = {
        "model": NAME,
        "original": ORIGINAL,
        "weight_block_size": [br, bc],
        "quantized_projections": quantized,
        "synth": {"seed": SEED, "shards": SHARDS,
                  "tensor_sha256": {k: sha256(v) for k, v in sorted(expected.items())}},
        "quantization_budget": budgets,
    }
    path = out_models / f"{NAME}.json"
    path.write_text(json.dumps(golden, indent=2, sort_keys=True) + "\n", encoding="utf-8", newline="\n")
    written.append(path)
    update_manifest(root / "golden", written, producer=PRODUCER)


if __name__ == "__main__":
    main()
