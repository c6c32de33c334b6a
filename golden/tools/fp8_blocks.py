"""FP8 block quantization as DeepSeek-V3, Kimi-K2, GLM-4.5-FP8 and the Qwen3 FP8 releases store it,
in torch, independent of the harness's C++ (the documented rule):

  A 2-D linear weight w[N, K] is cut into br x bc blocks (quantization_config.weight_block_size,
  [128, 128] in the released checkpoints; the last blocks ragged).  Per block:
      scale = f32(amax(|w|) / 448)            (1 where amax = 0)
      q     = f8_e4m3(clamp(w / scale, ±448))  (the quotient in f64, then f32, then RNE to e4m3)
  and the checkpoint stores `<name>.weight` (F8_E4M3) and `<name>.weight_scale_inv` (F32,
  [ceil(N/br), ceil(K/bc)]).  Dequantized: w' = f32(q) * scale, the product in f32.

Which tensors are quantized follows DeepSeek-V3's released checkpoint: every 2-D
`*_proj.weight` and `kv_a_proj_with_mqa.weight` of the decoder layers (attention projections,
dense MLP, shared and routed experts); not the embedding, the LM head, norms, the router
(`mlp.gate.weight`) or the MTP layer's `eh_proj`.

Used by gen_fp8_models.py (the goldens of configs/models/tiny-deepseek-v3-fp8), dump_hf.py and
gen_e2e.py (an fp8 checkpoint is loaded with its weights dequantized by this rule, so the golden
does not depend on a GPU-only fp8 kernel), and quantize_fp8.py (a checkpoint quantizer).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from safetensors import safe_open

QMAX = 448.0
SCALE_SUFFIX = "_scale_inv"
# DeepSeek-V3's quantized tensors: the decoder layers' projections.
QUANTIZED = re.compile(r"^model\.layers\.\d+\.(?!eh_proj\.).*_proj(_with_mqa)?\.weight$")


def block_size(config: dict) -> tuple[int, int] | None:
    """(br, bc) of an fp8 quantization_config, None when the config is not fp8 block-quantized."""
    q = config.get("quantization_config") or config.get("text_config", {}).get("quantization_config")
    if not isinstance(q, dict) or q.get("quant_method") != "fp8":
        return None
    br, bc = q.get("weight_block_size", [128, 128])
    return int(br), int(bc)


def quantize(w: torch.Tensor, br: int, bc: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(q f8_e4m3 [N, K], scale f32 [ceil(N/br), ceil(K/bc)]) of a 2-D weight."""
    n, k = w.shape
    nb, kb = -(-n // br), -(-k // bc)
    x = w.to(torch.float64)
    padded = torch.zeros(nb * br, kb * bc, dtype=torch.float64)
    padded[:n, :k] = x.abs()
    amax = padded.view(nb, br, kb, bc).amax(dim=(1, 3))
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / QMAX).to(torch.float32)
    full = expand(scale, br, bc, n, k).to(torch.float64)
    q = (x / full).clamp(-QMAX, QMAX).to(torch.float32).to(torch.float8_e4m3fn)
    return q, scale


def expand(scale: torch.Tensor, br: int, bc: int, n: int, k: int) -> torch.Tensor:
    """scale [nb, kb] repeated over its blocks and cut to [n, k]."""
    return scale.repeat_interleave(br, dim=0)[:n].repeat_interleave(bc, dim=1)[:, :k]


def dequantize(q: torch.Tensor, scale: torch.Tensor, br: int, bc: int) -> torch.Tensor:
    """w' = f32(q) * scale (f32 product), [N, K]; ValueError when scale does not cover q."""
    n, k = q.shape
    want = (-(-n // br), -(-k // bc))
    if tuple(scale.shape) != want:
        raise ValueError(f"scale {list(scale.shape)} does not cover {list(q.shape)} in {br}x{bc} blocks "
                         f"(needs {list(want)})")
    return q.to(torch.float32) * expand(scale.to(torch.float32), br, bc, n, k)


def read_checkpoint(model_dir: Path) -> dict[str, torch.Tensor]:
    tensors = {}
    for f in sorted(Path(model_dir).glob("*.safetensors")):
        with safe_open(str(f), "pt") as s:
            for key in s.keys():
                tensors[key] = s.get_tensor(key)
    return tensors


def dequantized_state_dict(model_dir: Path, br: int, bc: int) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors with every fp8 weight dequantized (f32) and the scales dropped."""
    tensors = read_checkpoint(model_dir)
    out = {}
    for key, t in tensors.items():
        if key.endswith(SCALE_SUFFIX):
            continue
        if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            scale_key = key + SCALE_SUFFIX
            if scale_key not in tensors:
                raise ValueError(f"{model_dir}: {key} is fp8 with no {scale_key}")
            t = dequantize(t, tensors[scale_key], br, bc)
        out[key] = t
    return out


def load_dequantized(model_dir: Path, cls, dtype: torch.dtype, **kwargs):
    """An fp8 block-quantized checkpoint as a transformers model in `dtype`: the weights
    dequantized by this module's rule (f32) and written, with the config minus its
    quantization_config, to a temporary checkpoint that `cls.from_pretrained` loads, so that
    transformers' own renaming (fused experts, MTP layers dropped) applies as for any checkpoint."""
    import tempfile

    from safetensors.torch import save_file

    raw = json.loads((Path(model_dir) / "config.json").read_text())
    br, bc = block_size(raw)
    state = dequantized_state_dict(model_dir, br, bc)
    with tempfile.TemporaryDirectory() as tmp:
        config = {k: v for k, v in raw.items() if k != "quantization_config"}
        (Path(tmp) / "config.json").write_text(json.dumps(config))
        save_file({k: v.contiguous() for k, v in state.items()}, str(Path(tmp) / "model.safetensors"),
                  metadata={"format": "pt"})
        model, info = cls.from_pretrained(tmp, dtype=dtype, output_loading_info=True, **kwargs)
    if info["missing_keys"] or info["mismatched_keys"]:
        raise SystemExit(f"{model_dir}: transformers could not load the dequantized checkpoint: {info}")
    return model
