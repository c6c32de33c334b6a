#!/usr/bin/env python3
"""Write tests/data/models/tiny-gpt-oss-mxfp4: tiny-gpt-oss with its experts stored as the released
gpt-oss checkpoints store them, MXFP4.

Usage:
  python3 golden/tools/gen_mxfp4_model.py [--src tests/data/models/tiny-gpt-oss] [--out tests/data/models/tiny-gpt-oss-mxfp4]

The layout is the released one (openai/gpt-oss-120b's model.safetensors): for each fused expert
weight W (gate_up_proj [E, D, 2F], down_proj [E, F, D], applied as x · W[e]) the transposed
[E, out, in] matrix is cut into groups of 32 consecutive `in` elements; a group stores one E8M0
scale byte (2^(s - 127)) in `<W>_scales` [E, out, in / 32] and 16 bytes of E2M1 codes in
`<W>_blocks` [E, out, in / 32, 16], two codes per byte, the low nibble first. Everything else
(attention, router, embeddings, norms, the expert biases) is copied as stored (bf16), and
config.json gains quantization_config {quant_method: mxfp4, modules_to_not_convert: [...]} as
gpt-oss-120b's.

The quantizer here (scale 2^(floor(log2 amax) - 2), each value to the nearest E2M1 code, 6 at
most) is this script's; the judge is not: golden/tools/gen_models.py loads the result with
transformers, whose Mxfp4HfQuantizer dequantizes it on CPU with its own convert_moe_packed_tensors,
and records transformers' forward pass as the goldens the harness must match.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parents[2]
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                    dtype=torch.float64)
NOT_CONVERTED = ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]


def quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """w [E, in, out] (x · w) -> blocks [E, out, in/32, 16] u8, scales [E, out, in/32] u8."""
    m = w.to(torch.float64).transpose(1, 2).contiguous()           # [E, out, in]
    E, out, n = m.shape
    if n % 32:
        raise SystemExit(f"mxfp4: the input width {n} is not whole groups of 32")
    g = m.reshape(E, out, n // 32, 32)
    amax = g.abs().amax(dim=-1)
    exp = torch.where(amax > 0, torch.floor(torch.log2(amax.clamp_min(1e-300))) - 2, torch.full_like(amax, -127))
    exp = exp.clamp(-127, 127)
    scaled = g / torch.pow(2.0, exp)[..., None]
    codes = (scaled[..., None] - E2M1).abs().argmin(dim=-1).to(torch.uint8)  # nearest; ties -> lower code
    blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return blocks.contiguous(), (exp + 127).to(torch.uint8).contiguous()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=str(ROOT / "tests/data/models/tiny-gpt-oss"))
    ap.add_argument("--out", default=str(ROOT / "tests/data/models/tiny-gpt-oss-mxfp4"))
    args = ap.parse_args()
    src, out = Path(args.src), Path(args.out)
    tensors = load_file(src / "model.safetensors")
    result = {}
    for name, t in tensors.items():
        if name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj"):
            blocks, scales = quantize(t)
            result[name + "_blocks"] = blocks
            result[name + "_scales"] = scales
        else:
            result[name] = t
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    save_file(result, out / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": NOT_CONVERTED}
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    for f in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(src / f, out / f)
    print(f"{out}: {len(result)} tensors, {(out / 'model.safetensors').stat().st_size} bytes")


if __name__ == "__main__":
    main()
