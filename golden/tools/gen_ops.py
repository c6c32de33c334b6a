#!/usr/bin/env python3
"""Generate the operator goldens (golden/ops/...) from a harness case dump.

Usage:
  python3 golden/tools/gen_ops.py --dump DIR [--root REPO_ROOT]
  python3 golden/tools/gen_ops.py --harness build/bin/harness [--suite suites/ops.yaml] [--root REPO_ROOT]

Input: a case dump written by `harness run SUITE --dump-cases DIR` (the
`--harness` form runs `harness run SUITE --dump-cases <tmp> --no-run` itself):

  DIR/cases.json        {"suite": ..., "cases": [{"id", "op", "attrs", "dtype",
                         "inputs_file", "inputs": [operand names in operand
                         order], "outputs": [{"name", "dtype", "shape"}],
                         "golden": "golden/ops/x.safetensors" | "reference"}]}
  DIR/inputs/*.safetensors   one file per case, tensors named by operand

Output: for every distinct `golden` path (cases whose golden is "reference"
are skipped) one safetensors file under REPO_ROOT holding `<case id>/<output
name>` for each of its cases.  Float outputs are computed in float64 from the
(already rounded) inputs and stored as float32; integer outputs keep their
integer dtype (i64 argmax/sample ids, i32 moe_gate ids); quantize's q keeps its
quantized dtype.  `__metadata__` holds format, producer and, per case,
`inputs:<case id>` = sha256 of the raw bytes of the case's input tensors
concatenated in the order of "inputs".  golden/manifest.json is updated.

Every op is written here from the operator spec with PyTorch (and, for RoPE,
HuggingFace transformers' own inv_freq / apply_rotary_pos_emb functions); none
of it is derived from the harness's C++ code.  The same dump always gives
byte-identical files.
"""

from __future__ import annotations

import os
import sys

# Pin PyTorch's portable scalar CPU kernels (see gen_foundation.py / README) and
# MKL's conditional-numerical-reproducibility mode, so that the float64
# reductions and GEMMs -- and hence the goldens -- do not depend on the host's
# instruction set.  This has to happen before torch is imported.
if "torch" in sys.modules and os.environ.get("ATEN_CPU_CAPABILITY") != "default":
    raise RuntimeError("gen_ops.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"
os.environ.setdefault("MKL_CBWR", "COMPATIBLE")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import load_file, save as st_save  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import transformers  # noqa: E402
from transformers.modeling_rope_utils import (  # noqa: E402
    ROPE_INIT_FUNCTIONS,
    RotaryEmbeddingConfigMixin,
)
from transformers.integrations import mxfp4 as hf_mxfp4  # noqa: E402
from transformers.models.deepseek_v32 import modeling_deepseek_v32 as hf_deepseek_v32  # noqa: E402
from transformers.models.gpt_oss import modeling_gpt_oss as hf_gpt_oss  # noqa: E402
from transformers.models.gptj import modeling_gptj as hf_gptj  # noqa: E402
from transformers.models.llama import modeling_llama as hf_llama  # noqa: E402
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as hf_qwen2_5_vl  # noqa: E402
from transformers.models.qwen3_next import modeling_qwen3_next as hf_qwen3_next  # noqa: E402
from transformers.models.qwen3_vl import modeling_qwen3_vl as hf_qwen3_vl  # noqa: E402

TOOLS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS_DIR))
import philox  # noqa: E402
from manifest import update_manifest  # noqa: E402

PRODUCER = "golden/tools/gen_ops.py"
DEFAULT_ROOT = TOOLS_DIR.parent.parent
F64 = torch.float64

torch.set_num_threads(1)

# Harness dtype names -> torch dtypes.
DTYPES: dict[str, torch.dtype] = {
    "f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "f8_e4m3": torch.float8_e4m3fn, "f8_e5m2": torch.float8_e5m2,
    "i64": torch.int64, "i32": torch.int32, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool,
}
# Outputs stored in their own dtype (everything else is a float output: f32).
EXACT_OUTPUT_DTYPES = {"i64", "i32", "i8", "u8", "bool", "f8_e4m3", "f8_e5m2"}
QMAX = {"i8": 127.0, "f8_e4m3": 448.0, "f8_e5m2": 57344.0}


class GenError(Exception):
    """A case the generator cannot compute (bad dump, unsupported attrs)."""


def attr(attrs: dict, name: str, default: Any) -> Any:
    """attrs[name], with a missing key or null meaning the default."""
    value = attrs.get(name)
    return default if value is None else value


def f64(t: torch.Tensor) -> torch.Tensor:
    return t.to(F64)


# --------------------------------------------------------------------------
# Ops: each takes (inputs in operand order, attrs) and returns the outputs in
# output order; float results in float64, integer results in their dtype.
# --------------------------------------------------------------------------

OPS: dict[str, Callable[[list[torch.Tensor], dict], list[torch.Tensor]]] = {}


def op(name: str):
    def register(fn):
        OPS[name] = fn
        return fn
    return register


@op("matmul")
def op_matmul(inp, attrs):
    a, b = inp
    return [torch.matmul(f64(a), f64(b))]


@op("linear")
def op_linear(inp, attrs):
    x, w = inp[0], inp[1]
    bias = f64(inp[2]) if len(inp) > 2 else None
    return [F.linear(f64(x), f64(w), bias)]


@op("embedding")
def op_embedding(inp, attrs):
    ids, table = inp
    # Gemma3TextScaledWordEmbedding: rows times the scale (the op's: its f32 value).
    scale = float(torch.tensor(float(attr(attrs, "scale", 1.0)), dtype=torch.float32))
    return [F.embedding(ids.to(torch.int64), f64(table)) * scale]


@op("add")
def op_add(inp, attrs):
    return [f64(inp[0]) + f64(inp[1])]


@op("mul")
def op_mul(inp, attrs):
    return [f64(inp[0]) * f64(inp[1])]


@op("silu")
def op_silu(inp, attrs):
    return [F.silu(f64(inp[0]))]


@op("sigmoid")
def op_sigmoid(inp, attrs):
    return [torch.sigmoid(f64(inp[0]))]


@op("gelu")
def op_gelu(inp, attrs):
    approximate = attr(attrs, "approximate", "none")
    if approximate not in ("none", "tanh"):
        raise GenError(f"gelu: approximate must be none or tanh, got {approximate!r}")
    return [F.gelu(f64(inp[0]), approximate=approximate)]


@op("swiglu")
def op_swiglu(inp, attrs):
    gate, up = inp
    return [F.silu(f64(gate)) * f64(up)]


@op("rmsnorm")
def op_rmsnorm(inp, attrs):
    # HF LlamaRMSNorm.forward, in float64; offset 1 is Gemma3RMSNorm's (1.0 + weight) (its
    # forward casts to float32, so its formula is written out here in float64).
    x, w = f64(inp[0]), f64(inp[1])
    eps = float(attr(attrs, "eps", 1e-6))
    offset = float(attr(attrs, "offset", 0.0))
    variance = x.pow(2).mean(-1, keepdim=True)
    return [(offset + w) * (x * torch.rsqrt(variance + eps))]


@op("layernorm")
def op_layernorm(inp, attrs):
    x, w, b = (f64(t) for t in inp)
    eps = float(attr(attrs, "eps", 1e-5))
    return [F.layer_norm(x, (x.shape[-1],), w, b, eps)]


@op("softmax")
def op_softmax(inp, attrs):
    return [torch.softmax(f64(inp[0]), dim=-1)]


# ---- RoPE ----------------------------------------------------------------


class _RopeConfig(RotaryEmbeddingConfigMixin):
    """The minimal config object HF's RoPE init functions read: rope_parameters
    (rope_type, rope_theta and the scaling keys) and head_dim.  head_dim is set
    to rotary_dim, so partial rotation needs no partial_rotary_factor."""

    def __init__(self, rope_parameters: dict, rotary_dim: int):
        self.rope_parameters = rope_parameters
        self.head_dim = rotary_dim
        self.hidden_size = rotary_dim
        self.num_attention_heads = 1
        # Only read by HF when original_max_position_embeddings / factor are
        # missing, which rope_parameters() below rejects.
        self.max_position_embeddings = rope_parameters.get("original_max_position_embeddings", 0)


def rope_parameters(theta: float, scaling: dict | None) -> dict:
    """The HF rope_parameters dict for the op's theta and scaling attrs."""
    if scaling is None:
        return {"rope_type": "default", "rope_theta": float(theta)}
    if not isinstance(scaling, dict):
        raise GenError(f"rope: scaling must be an object or null, got {scaling!r}")
    params = dict(scaling)
    rope_type = params.pop("rope_type", None) or params.pop("type", None) or "default"
    params.pop("type", None)
    # rotary_dim says how many dims rotate; a partial_rotary_factor here would
    # shrink them a second time inside HF.
    params.pop("partial_rotary_factor", None)
    if "rope_theta" in params and float(params["rope_theta"]) != float(theta):
        raise GenError(f"rope: scaling.rope_theta {params['rope_theta']} != theta {theta}")
    params["rope_type"] = rope_type
    params["rope_theta"] = float(theta)
    if rope_type not in ("default", "linear", "llama3", "yarn"):
        raise GenError(f"rope: unsupported rope_type {rope_type!r} (linear, llama3, yarn)")
    if rope_type != "default" and params.get("factor") is None:
        raise GenError(f"rope: {rope_type} scaling needs 'factor'")
    if rope_type in ("llama3", "yarn") and params.get("original_max_position_embeddings") is None:
        raise GenError(f"rope: {rope_type} scaling needs 'original_max_position_embeddings'")
    if rope_type == "llama3" and (params.get("low_freq_factor") is None
                                  or params.get("high_freq_factor") is None):
        raise GenError("rope: llama3 scaling needs low_freq_factor and high_freq_factor")
    return params


def _hf_rope_init(params: dict, rotary_dim: int) -> tuple[torch.Tensor, float]:
    config = _RopeConfig(dict(params), rotary_dim)
    if params["rope_type"] == "default":
        # transformers 5 has no "default" entry in ROPE_INIT_FUNCTIONS: every
        # model carries compute_default_rope_parameters; Llama's is the canonical one.
        fn = hf_llama.LlamaRotaryEmbedding.compute_default_rope_parameters
    else:
        fn = ROPE_INIT_FUNCTIONS[params["rope_type"]]
    inv_freq, attention_factor = fn(config)
    return inv_freq, float(attention_factor)


class _Float32AsFloat64(TorchFunctionMode):
    """Runs torch code with every float32 request turned into float64.

    HF's RoPE init functions hard-code torch.float (float32).  Evaluating the
    very same code with float32 promoted gives HF's formulas in float64, which
    is what the goldens need (they are exact references: an f32 inv_freq
    times a position of a few thousand already errs by ~1e-4 rad)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if kwargs.get("dtype") is torch.float32:
            kwargs["dtype"] = torch.float64
        args = tuple(torch.float64 if a is torch.float32 else a for a in args)
        if func is torch.Tensor.float:
            func = torch.Tensor.double
        return func(*args, **kwargs)


def hf_inv_freq_f64(params: dict, rotary_dim: int) -> tuple[torch.Tensor, float]:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with _Float32AsFloat64():
            inv_freq, attention_factor = _hf_rope_init(params, rotary_dim)
    finally:
        torch.set_default_dtype(previous)
    if inv_freq.dtype != torch.float64:
        raise GenError(f"rope: HF inv_freq came out {inv_freq.dtype} under float64 promotion")
    return inv_freq, attention_factor


def hand_inv_freq(params: dict, rotary_dim: int) -> tuple[list[float], float]:
    """inv_freq and attention factor written independently from the spec and
    the original papers / reference code (Meta's llama3 apply_scaling, YaRN's
    find_correction_range / linear ramp / get_mscale), in plain Python floats."""
    theta = float(params["rope_theta"])
    rd = rotary_dim
    base = [1.0 / theta ** ((2 * i) / rd) for i in range(rd // 2)]
    kind = params["rope_type"]
    if kind == "default":
        return base, 1.0
    factor = float(params["factor"])
    if kind == "linear":
        return [f / factor for f in base], 1.0
    if kind == "llama3":
        old = float(params["original_max_position_embeddings"])
        low, high = float(params["low_freq_factor"]), float(params["high_freq_factor"])
        out = []
        for f in base:
            wavelen = 2 * math.pi / f
            if wavelen < old / high:
                out.append(f)
            elif wavelen > old / low:
                out.append(f / factor)
            else:
                smooth = (old / wavelen - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        return out, 1.0
    if kind == "yarn":
        old = float(params["original_max_position_embeddings"])
        beta_fast = params.get("beta_fast") or 32
        beta_slow = params.get("beta_slow") or 1

        def corr_dim(rot):
            return rd * math.log(old / (rot * 2 * math.pi)) / (2 * math.log(theta))

        lo, hi = corr_dim(beta_fast), corr_dim(beta_slow)
        if params.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, rd - 1)
        if lo == hi:
            hi += 0.001
        out = []
        for i, f in enumerate(base):
            ramp = min(max((i - lo) / (hi - lo), 0.0), 1.0)
            extrap = 1.0 - ramp  # share of the unscaled (extrapolated) frequency
            out.append((f / factor) * (1.0 - extrap) + f * extrap)

        def mscale(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        att = params.get("attention_factor")
        if att is None:
            m, m_all = params.get("mscale"), params.get("mscale_all_dim")
            att = mscale(factor, m) / mscale(factor, m_all) if (m and m_all) else mscale(factor)
        return out, float(att)
    raise GenError(f"rope: no hand computation for {kind!r}")


def rope_frequencies(params: dict, rotary_dim: int) -> tuple[torch.Tensor, float]:
    """inv_freq (float64) and attention factor from HF, cross-checked against
    HF's own float32 evaluation and against hand_inv_freq."""
    inv64, att = hf_inv_freq_f64(params, rotary_dim)
    inv32, att32 = _hf_rope_init(params, rotary_dim)
    hand, att_hand = hand_inv_freq(params, rotary_dim)
    hand = torch.tensor(hand, dtype=F64)
    if inv64.shape != (rotary_dim // 2,):
        raise GenError(f"rope: HF inv_freq has shape {tuple(inv64.shape)}, want [{rotary_dim // 2}]")
    rel_hand = ((inv64 - hand).abs() / hand.abs()).max().item()
    rel_f32 = ((inv32.to(F64) - inv64).abs() / inv64.abs()).max().item()
    if rel_hand > 1e-12 or abs(att - att_hand) > 1e-12 * abs(att_hand):
        raise GenError(f"rope {params}: HF inv_freq/attention factor disagree with the hand "
                       f"computation (rel {rel_hand:.3g}, factor {att} vs {att_hand})")
    if rel_f32 > 4e-6 or att != att32:
        raise GenError(f"rope {params}: float64-promoted HF inv_freq strays from HF's float32 "
                       f"one (rel {rel_f32:.3g})")
    return inv64, att


def self_check_rope() -> None:
    """The llama3 and yarn inv_freq of real model configs against the hand computation."""
    configs = [
        # Llama 3.1 8B
        (500000.0, 128, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
        # DeepSeek-V3 (rope head dim 64, mscale == mscale_all_dim)
        (10000.0, 64, {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                       "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}),
        # Qwen2.5 long-context yarn
        (1000000.0, 128, {"rope_type": "yarn", "factor": 4.0,
                          "original_max_position_embeddings": 32768}),
        # mscale != mscale_all_dim, explicit attention_factor, truncate off
        (10000.0, 32, {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 2048,
                       "mscale": 0.707, "mscale_all_dim": 1.0, "truncate": False}),
        (10000.0, 32, {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 2048,
                       "attention_factor": 1.25}),
        (10000.0, 64, {"type": "linear", "factor": 2.0}),
        (10000.0, 64, None),
    ]
    for theta, rd, scaling in configs:
        rope_frequencies(rope_parameters(theta, scaling), rd)
    # Spot values: Llama 3.1's highest frequency is untouched, its lowest is /8.
    inv, _ = rope_frequencies(rope_parameters(500000.0, configs[0][2]), 128)
    assert inv[0].item() == 1.0
    assert abs(inv[-1].item() - 500000.0 ** (-126 / 128) / 8) < 1e-18


def mrope_f64(x, positions, rd: int, style: str, inv_freq, scaling: float, params: dict, mrope: dict):
    """Qwen's multimodal RoPE through transformers' own recomposition code, in float64:
    chunked = Qwen2_5_VLRotaryEmbedding (Qwen2-VL / Qwen2.5-VL text), interleaved =
    Qwen3VLTextRotaryEmbedding, per_axis = Qwen2_5_VLVisionRotaryEmbedding (the vision
    tower's axial 2D RoPE over h and w, sections [rd/4, rd/4], frequencies over rd/2)."""
    section, layout = [int(v) for v in mrope["section"]], mrope["layout"]
    if style != "neox":
        raise GenError("rope: mrope rotates halves (style neox)")
    if sum(section) != rd // 2:
        raise GenError(f"rope: mrope sections {section} do not sum to rd/2 = {rd // 2}")
    pos = positions.to(torch.int64)
    if pos.dim() != 2 or pos.shape[0] != len(section):
        raise GenError(f"rope: mrope positions must be [{len(section)}, T], got {list(pos.shape)}")
    x64 = f64(x)
    x_rot, x_pass = x64[..., :rd], x64[..., rd:]
    with _Float32AsFloat64():
        if layout == "per_axis":
            if section != [rd // 4, rd // 4] or params["rope_type"] != "default":
                raise GenError("rope: per_axis is the vision tower's axial rope: sections [rd/4, rd/4], no scaling")
            theta = params["rope_theta"]
            cfg = SimpleNamespace(rope_parameters={"rope_theta": theta}, head_dim=rd)
            axial, _ = hf_qwen2_5_vl.Qwen2_5_VLVisionRotaryEmbedding.compute_axial_rope_parameters(cfg)
            freqs = f64(pos.T)[..., None] * f64(axial)  # [T, 2, rd/4]
            recompose = hf_qwen2_5_vl.Qwen2_5_VLVisionRotaryEmbedding.recomposition_frequencies
            cos, sin = recompose(None, freqs.cos()), recompose(None, freqs.sin())  # [T, rd]
            y_rot, _ = hf_qwen2_5_vl.apply_rotary_pos_emb_vision(x_rot, x_rot, cos, sin)
        elif layout in ("chunked", "interleaved"):
            freqs = f64(pos)[:, None, :, None] * inv_freq  # [3, 1, T, rd/2]
            cls = hf_qwen2_5_vl.Qwen2_5_VLRotaryEmbedding if layout == "chunked" else hf_qwen3_vl.Qwen3VLTextRotaryEmbedding
            this = SimpleNamespace(mrope_section=section)
            cos = cls.recomposition_frequencies(this, freqs.cos() * scaling)  # [1, T, rd]
            sin = cls.recomposition_frequencies(this, freqs.sin() * scaling)
            q = x_rot.permute(1, 0, 2)[None]  # [1, H, T, rd]
            y_rot, _ = hf_qwen2_5_vl.apply_rotary_pos_emb(q, q, cos, sin, unsqueeze_dim=1)
            y_rot = y_rot[0].permute(1, 0, 2)
        else:
            raise GenError(f"rope: unknown mrope layout {layout!r}")
    if y_rot.dtype != torch.float64:
        raise GenError(f"rope: mrope came out {y_rot.dtype}")
    return torch.cat((y_rot, x_pass), dim=-1)


@op("rope")
def op_rope(inp, attrs):
    x, positions = inp
    if x.dim() != 3:
        raise GenError(f"rope: x must be [T,H,Dh], got {list(x.shape)}")
    head_dim = x.shape[-1]
    rd = int(attr(attrs, "rotary_dim", head_dim))
    if rd <= 0 or rd > head_dim or rd % 2:
        raise GenError(f"rope: rotary_dim {rd} must be even and in (0, {head_dim}]")
    style = attr(attrs, "style", "neox")
    params = rope_parameters(float(attr(attrs, "theta", 10000.0)), attrs.get("scaling"))
    inv_freq, scaling = rope_frequencies(params, rd)
    if attrs.get("mrope") is not None:
        return [mrope_f64(x, positions, rd, style, inv_freq, scaling, params, attrs["mrope"])]

    freqs = f64(positions.to(torch.int64))[:, None] * inv_freq[None, :]  # [T, rd/2]
    x64 = f64(x)
    x_rot, x_pass = x64[..., :rd], x64[..., rd:]
    if style == "neox":
        emb = torch.cat((freqs, freqs), dim=-1)  # as LlamaRotaryEmbedding.forward
        cos, sin = emb.cos() * scaling, emb.sin() * scaling
        y_rot, _ = hf_llama.apply_rotary_pos_emb(x_rot, x_rot, cos, sin, unsqueeze_dim=1)
    elif style == "gptj":
        sin, cos = (freqs.sin() * scaling)[None], (freqs.cos() * scaling)[None]  # [1, T, rd/2]
        y_rot = hf_gptj.apply_rotary_pos_emb(x_rot[None], sin, cos)[0]
    else:
        raise GenError(f"rope: style must be neox or gptj, got {style!r}")
    return [torch.cat((y_rot, x_pass), dim=-1)]


# ---- attention -----------------------------------------------------------


def visible(T: int, S: int, *, causal: bool, q_offset: int, window: int) -> torch.Tensor:
    """[T, S] bool: query t (at position q_offset + t) sees key j."""
    pos = q_offset + torch.arange(T, dtype=torch.int64)[:, None]
    key = torch.arange(S, dtype=torch.int64)[None, :]
    mask = torch.ones(T, S, dtype=torch.bool)
    if causal:
        mask &= key <= pos
    if window > 0:
        mask &= key > pos - window
    return mask


def attention_f64(q, k, v, *, causal: bool, scale: float | None, q_offset: int | None,
                  window: int) -> torch.Tensor:
    """q[T,Hq,Dh], k[S,Hkv,Dh], v[S,Hkv,Dv] (float64) -> o[T,Hq,Dv]."""
    T, Hq, Dh = q.shape
    S, Hkv, _ = k.shape
    if Hkv == 0 or Hq % Hkv:
        raise GenError(f"attention: Hq={Hq} is not a multiple of Hkv={Hkv}")
    if scale is None:
        scale = 1.0 / math.sqrt(Dh)
    if q_offset is None:
        q_offset = S - T
    mask = visible(T, S, causal=causal, q_offset=q_offset, window=window)
    empty = ~mask.any(dim=-1)  # queries that see no key: zeros
    mask[empty] = True         # (keep SDPA away from all-masked rows)
    n_rep = Hq // Hkv
    qh = q.permute(1, 0, 2)[None]                               # [1, Hq, T, Dh]
    kh = hf_llama.repeat_kv(k.permute(1, 0, 2)[None], n_rep)    # [1, Hq, S, Dh]
    vh = hf_llama.repeat_kv(v.permute(1, 0, 2)[None], n_rep)    # [1, Hq, S, Dv]
    out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, scale=float(scale))
    out = out[0].permute(1, 0, 2).contiguous()                  # [T, Hq, Dv]
    out[empty] = 0.0
    return out


@op("attention")
def op_attention(inp, attrs):
    q, k, v = (f64(t) for t in inp)
    q_offset = attrs.get("q_offset")
    return [attention_f64(q, k, v, causal=bool(attr(attrs, "causal", True)),
                          scale=attrs.get("scale"),
                          q_offset=None if q_offset is None else int(q_offset),
                          window=int(attr(attrs, "sliding_window", 0)))]


def sink_attention_f64(q, k, v, sinks, *, causal: bool, scale: float | None, q_offset: int,
                       window: int) -> torch.Tensor:
    """transformers' gpt_oss eager_attention_forward (the sink logit joins each softmax, its share
    dropped) on q[T,Hq,Dh], k[S,Hkv,Dh], v[S,Hkv,Dv], sinks[Hq] (float64) -> o[T,Hq,Dv]."""
    T, Hq, Dh = q.shape
    S, Hkv, _ = k.shape
    if scale is None:
        scale = 1.0 / math.sqrt(Dh)
    mask = visible(T, S, causal=causal, q_offset=q_offset, window=window)
    additive = torch.zeros(T, S, dtype=F64).masked_fill(~mask, float("-inf"))[None, None]
    module = torch.nn.Module()
    module.sinks = torch.nn.Parameter(sinks, requires_grad=False)
    module.num_key_value_groups = Hq // Hkv
    module.eval()
    out, _ = hf_gpt_oss.eager_attention_forward(module, q.permute(1, 0, 2)[None], k.permute(1, 0, 2)[None],
                                                v.permute(1, 0, 2)[None], additive, float(scale))
    return out[0].contiguous()  # [T, Hq, Dv]


def gather_paged(k_cache, v_cache, block_table, context_len: int):
    """Keys/values 0..context_len-1: key j lives at block_table[j / B], slot j % B."""
    B = k_cache.shape[1]
    j = torch.arange(context_len, dtype=torch.int64)
    blocks = block_table.to(torch.int64)[j // B]
    return k_cache[blocks, j % B], v_cache[blocks, j % B]


@op("paged_attention")
def op_paged_attention(inp, attrs):
    q, k_cache, v_cache = (f64(t) for t in inp[:3])
    block_table = inp[3]
    B = k_cache.shape[1]
    n = block_table.shape[0]
    context_len = int(attr(attrs, "context_len", n * B))
    if context_len > n * B:
        raise GenError(f"paged_attention: context_len {context_len} > {n} blocks of {B}")
    k, v = gather_paged(k_cache, v_cache, block_table, context_len)
    q_offset = attrs.get("q_offset")
    if len(inp) > 4:  # attention sinks: GPT-OSS's own eager attention
        return [sink_attention_f64(q, k, v, f64(inp[4]), causal=bool(attr(attrs, "causal", True)),
                                   scale=attrs.get("scale"),
                                   q_offset=context_len - q.shape[0] if q_offset is None else int(q_offset),
                                   window=int(attr(attrs, "sliding_window", 0)))]
    return [attention_f64(q, k, v, causal=bool(attr(attrs, "causal", True)),
                          scale=attrs.get("scale"),
                          q_offset=context_len - q.shape[0] if q_offset is None else int(q_offset),
                          window=int(attr(attrs, "sliding_window", 0)))]


# ---- DeepSeek sparse attention (V3.2) -----------------------------------


class _CaptureTopk(_Float32AsFloat64):
    """_Float32AsFloat64, and the tensor every Tensor.topk is called on is kept in .scores."""

    def __init__(self):
        super().__init__()
        self.scores: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.topk:
            self.scores.append(args[0].detach().clone())
        return super().__torch_function__(func, types, args, kwargs)


class _Returns(torch.nn.Module):
    """A stand-in projection: returns `value` whatever it is given (weight: its dtype only)."""

    def __init__(self, value: torch.Tensor):
        super().__init__()
        self.value = value
        self.weight = torch.nn.Parameter(torch.zeros(1, dtype=value.dtype), requires_grad=False)

    def forward(self, x):
        return self.value


def paged_visible(T: int, S: int, attrs: dict) -> torch.Tensor:
    """[T, S] bool: query t (position q_offset + t) may see key j."""
    q_offset = attrs.get("q_offset")
    return visible(T, S, causal=bool(attr(attrs, "causal", True)),
                   q_offset=S - T if q_offset is None else int(q_offset), window=0)


def context_of(block_table: torch.Tensor, B: int, attrs: dict, op_name: str) -> int:
    n = block_table.shape[0]
    context_len = int(attr(attrs, "context_len", n * B))
    if context_len > n * B:
        raise GenError(f"{op_name}: context_len {context_len} > {n} blocks of {B}")
    return context_len


@op("lightning_indexer")
def op_lightning_indexer(inp, attrs):
    """transformers' DeepseekV32Indexer.forward in float64 on the op's q, keys and weights: its
    projections replaced by the operands (wq_b, wk and k_norm pass them through, weights_proj
    returns weights · sqrt(H), which the module scales by H^-0.5), its RoPE by the identity (the
    rope op's business). The scores its topk call sees are captured; the selection is then the
    op's: score descending, ties to the lower key id, -1 past the visible keys. Every row is
    cross-checked against the module's own top-k (the same scores), and a case whose k-th and
    (k+1)-th best scores are closer than 1e-9 without being equal is refused (no fair exact
    check of a selection is possible there)."""
    q, k_cache, w = (f64(t) for t in inp[:3])
    block_table = inp[3]
    T, H, D = q.shape
    B = k_cache.shape[1]
    S = context_of(block_table, B, attrs, "lightning_indexer")
    topk = int(attrs["topk"])
    j = torch.arange(S, dtype=torch.int64)
    keys = k_cache[block_table.to(torch.int64)[j // B], j % B]  # [S, D]
    scale = attrs.get("scale")
    config = transformers.DeepseekV32Config(hidden_size=D, q_lora_rank=H * D, index_n_heads=H, index_head_dim=D,
                                            qk_rope_head_dim=0, index_topk=topk)
    indexer = hf_deepseek_v32.DeepseekV32Indexer(config, layer_idx=0).double()
    if scale is not None:
        indexer.softmax_scale = float(scale)
    indexer.wq_b = torch.nn.Identity()
    indexer.wk = _Returns(keys.unsqueeze(0))
    indexer.k_norm = torch.nn.Identity()
    indexer.weights_proj = _Returns(w.unsqueeze(0) * math.sqrt(H))
    seen = paged_visible(T, S, attrs)
    mask = torch.zeros(1, T, S, dtype=F64).masked_fill(~seen, float("-inf"))
    rope = hf_deepseek_v32.apply_rotary_pos_emb
    capture = _CaptureTopk()
    try:
        hf_deepseek_v32.apply_rotary_pos_emb = lambda q_, k_, cos, sin, unsqueeze_dim=1: (q_, k_)
        with capture:
            hf_top = indexer(torch.zeros(1, T, D, dtype=F64), q.reshape(1, T, H * D), (None, None), mask, None)
    finally:
        hf_deepseek_v32.apply_rotary_pos_emb = rope
    if len(capture.scores) != 1 or capture.scores[0].dtype != F64:
        raise GenError("lightning_indexer: transformers' indexer did not score once in float64")
    scores = capture.scores[0][0]  # [T, S]
    out = torch.full((T, topk), -1, dtype=torch.int32)
    for t in range(T):
        row = scores[t]
        n = int(seen[t].sum())
        order = _order_desc(row.numpy())[:min(topk, n)]
        out[t, :len(order)] = torch.from_numpy(order.astype(np.int32))
        theirs = hf_top[0, t].to(torch.int64)[:len(order)]
        if not torch.equal(row[theirs].sort().values, row[torch.from_numpy(order)].sort().values):
            raise GenError(f"lightning_indexer: row {t}: transformers' top-k scores differ from the selection's")
        if n > topk:
            kth, next_ = float(row[order[-1]]), float(row[_order_desc(row.numpy())[topk]])
            if kth != next_ and abs(kth - next_) <= 1e-9 * max(1.0, abs(kth)):
                raise GenError(f"lightning_indexer: row {t}: the {topk}th and next scores are a near-tie")
    return [out]


@op("sparse_attention")
def op_sparse_attention(inp, attrs):
    """transformers' deepseek_v32 eager_attention_forward in float64, with the mask the V3.2
    attention builds: the causal mask with every key the indexer did not select masked. -1
    entries select nothing; a query left with no key gets zeros (the op's contract; softmax over
    nothing is NaN in torch)."""
    q, k_cache, v_cache = (f64(t) for t in inp[:3])
    block_table, indices = inp[3], inp[4].to(torch.int64)
    T, Hq, _ = q.shape
    B, Hkv = k_cache.shape[1], k_cache.shape[2]
    S = context_of(block_table, B, attrs, "sparse_attention")
    if int(indices.min()) < -1 or int(indices.max()) >= S:
        raise GenError(f"sparse_attention: indices outside [-1, {S})")
    k, v = gather_paged(k_cache, v_cache, block_table, S)
    selected = torch.zeros(T, S + 1, dtype=torch.bool).scatter(-1, torch.where(indices < 0, S, indices), True)[:, :S]
    allowed = selected & paged_visible(T, S, attrs)
    mask = torch.zeros(T, S, dtype=F64).masked_fill(~allowed, float("-inf"))
    scale = attrs.get("scale")
    module = SimpleNamespace(num_key_value_groups=Hq // Hkv, training=False)
    o, _ = in_float64(hf_deepseek_v32.eager_attention_forward, module, q.transpose(0, 1).unsqueeze(0),
                      k.transpose(0, 1).unsqueeze(0), v.transpose(0, 1).unsqueeze(0), mask.view(1, 1, T, S),
                      scaling=1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale))
    o = o[0]  # [T, Hq, Dv]
    empty = ~allowed.any(dim=-1)
    o[empty] = 0.0
    return [o]


# ---- MoE -----------------------------------------------------------------


def in_float64(fn, *args, **kwargs):
    """fn(*args, **kwargs) with every float32 request promoted to float64 (_Float32AsFloat64):
    transformers' linear-attention functions cast to float32 inside; the goldens need them exact."""
    with _Float32AsFloat64():
        return fn(*args, **kwargs)


@op("causal_conv1d")
def op_causal_conv1d(inp, attrs):
    """transformers' causal_conv1d_update (Qwen3-Next's decode path, which any T takes) on
    x[T, C] as [1, C, T]. Its conv state holds K columns, the first of which no output reads:
    the op's K - 1 are passed after a zero column and come back as the last K - 1."""
    x, w, state = f64(inp[0]), f64(inp[1]), f64(inp[2])
    bias = f64(inp[3]) if len(inp) > 3 else None
    activation = {"silu": "silu", "none": None}[attr(attrs, "activation", "silu")]
    conv_state = torch.cat([torch.zeros(state.shape[0], 1, dtype=F64), state], dim=1).unsqueeze(0)
    y = in_float64(hf_qwen3_next.causal_conv1d_update, x.T.unsqueeze(0).contiguous(), conv_state, w, bias, activation)
    return [y[0].T, conv_state[0, :, 1:]]


@op("gated_delta_rule")
def op_gated_delta_rule(inp, attrs):
    """transformers' torch_recurrent_gated_delta_rule in float64, cross-checked against its
    torch_chunk_gated_delta_rule (the chunked form a prefill kernel runs) on every case."""
    q, k, v, g, beta, state = (f64(t).unsqueeze(0) for t in inp)
    l2 = bool(attr(attrs, "l2norm_qk", True))
    if l2 and float(attr(attrs, "l2norm_eps", 1e-6)) != 1e-6:
        raise GenError("gated_delta_rule: transformers' l2norm has eps 1e-6 only")
    Dk = q.shape[-1]
    args = dict(initial_state=state[0].unsqueeze(0), output_final_state=True, use_qk_l2norm_in_kernel=l2)
    o, s = in_float64(hf_qwen3_next.torch_recurrent_gated_delta_rule, q, k, v, g, beta, **args)
    oc, sc = in_float64(hf_qwen3_next.torch_chunk_gated_delta_rule, q, k, v, g, beta, **args)
    if o.dtype != F64 or s.dtype != F64:
        raise GenError(f"gated_delta_rule: transformers' recurrence came out {o.dtype}/{s.dtype}")
    for name, a, b in (("o", o, oc), ("state", s, sc)):
        err = float((a - b).abs().max() / max(1.0, float(a.abs().max())))
        if err > 1e-9:
            raise GenError(f"gated_delta_rule: transformers' chunked and recurrent forms differ in {name} by {err:.3g}")
    # transformers scales q by Dk^-0.5; o is linear in q, so another scale scales o.
    scale = attr(attrs, "scale", None)
    factor = 1.0 if scale is None else float(scale) * math.sqrt(Dk)
    return [o[0] * factor, s[0]]


@op("gdn_gating")
def op_gdn_gating(inp, attrs):
    """The g and beta transformers' Qwen3NextGatedDeltaNet.forward hands its delta rule (captured),
    in float64: one key head, so in_proj_ba writes [b | a], and in_proj_ba is the identity on a
    hidden state of [b | a]; A_log and dt_bias are the module's parameters. Cross-checked against
    its two lines written out: beta = b.sigmoid(), g = -A_log.exp() * softplus(a + dt_bias)."""
    a, b, a_log, dt_bias = (f64(t) for t in inp)
    T, Hv = a.shape
    config = transformers.Qwen3NextConfig(hidden_size=2 * Hv, linear_num_key_heads=1, linear_num_value_heads=Hv,
                                          linear_key_head_dim=2, linear_value_head_dim=2, linear_conv_kernel_dim=2,
                                          num_hidden_layers=1, layer_types=["linear_attention"])
    layer = hf_qwen3_next.Qwen3NextGatedDeltaNet(config, layer_idx=0).double()
    captured = {}

    def delta_rule(query, key, value, g, beta, **kwargs):
        captured["g"], captured["beta"] = g, beta
        return torch.zeros_like(value), None

    with torch.no_grad():
        layer.in_proj_ba.weight.copy_(torch.eye(2 * Hv, dtype=F64))
        layer.in_proj_qkvz.weight.zero_()
        layer.A_log.copy_(a_log)
        layer.dt_bias.copy_(dt_bias)
        chunk = hf_qwen3_next.torch_chunk_gated_delta_rule
        try:
            hf_qwen3_next.torch_chunk_gated_delta_rule = delta_rule
            in_float64(layer, torch.cat([b, a], dim=-1).unsqueeze(0))
        finally:
            hf_qwen3_next.torch_chunk_gated_delta_rule = chunk
    g, beta = captured["g"][0], captured["beta"][0]
    if g.dtype != F64 or beta.dtype != F64:
        raise GenError(f"gdn_gating: transformers' gating came out {g.dtype}/{beta.dtype}")
    for name, theirs, ours in (("g", g, -a_log.exp() * F.softplus(a + dt_bias)), ("beta", beta, b.sigmoid())):
        if not torch.allclose(theirs, ours, rtol=1e-12, atol=0):
            raise GenError(f"gdn_gating: transformers' {name} differs from its formula")
    return [g, beta]


@op("rmsnorm_gated")
def op_rmsnorm_gated(inp, attrs):
    """transformers' Qwen3NextRMSNormGated (norm before the silu gate), in float64."""
    x, w, z = (f64(t) for t in inp)
    norm = hf_qwen3_next.Qwen3NextRMSNormGated(x.shape[-1], eps=float(attr(attrs, "eps", 1e-6))).double()
    with torch.no_grad():
        norm.weight.copy_(w)
        return [in_float64(norm, x, z)]


def _order_desc(values: np.ndarray) -> np.ndarray:
    """Indices by value descending, ties -> lower index (stable sort on (-v, i))."""
    return np.lexsort((np.arange(values.shape[0]), -values))


@op("moe_gate")
def op_moe_gate(inp, attrs):
    # DeepSeek-V3 MoEGate (grouped, biased selection) / Mixtral router
    # (softmax, top-k, renormalise), with the spec's deterministic tie rule.
    logits = f64(inp[0])
    bias = f64(inp[1]) if len(inp) > 1 else None
    T, E = logits.shape
    top_k = int(attr(attrs, "top_k", 2))
    scoring = attr(attrs, "scoring", "softmax")
    normalize = bool(attr(attrs, "normalize", False))
    n_group = int(attr(attrs, "n_group", 1))
    topk_group = int(attr(attrs, "topk_group", 1))
    factor = float(attr(attrs, "routed_scaling_factor", 1.0))
    if scoring == "softmax":
        scores = torch.softmax(logits, dim=-1)
    elif scoring == "sigmoid":
        scores = torch.sigmoid(logits)
    else:
        raise GenError(f"moe_gate: scoring must be softmax or sigmoid, got {scoring!r}")
    sel = scores + bias if bias is not None else scores.clone()
    if n_group > 1:
        if E % n_group:
            raise GenError(f"moe_gate: E={E} not divisible by n_group={n_group}")
        if not 1 <= topk_group <= n_group:
            raise GenError(f"moe_gate: topk_group={topk_group} not in [1, {n_group}]")
        gsize = E // n_group
        if top_k > topk_group * gsize:
            raise GenError(f"moe_gate: top_k={top_k} > experts in {topk_group} groups of {gsize}")
    elif not 1 <= top_k <= E:
        raise GenError(f"moe_gate: top_k={top_k} not in [1, {E}]")
    scores_np, sel_np = scores.numpy(), sel.numpy()
    weights = np.zeros((T, top_k), dtype=np.float64)
    ids = np.zeros((T, top_k), dtype=np.int32)
    for t in range(T):
        row = sel_np[t].copy()
        if n_group > 1:
            groups = row.reshape(n_group, gsize)
            top2 = min(2, gsize)
            gscore = np.array([np.sort(g)[::-1][:top2].sum() for g in groups])
            kept = _order_desc(gscore)[:topk_group]
            allowed = np.zeros(n_group, dtype=bool)
            allowed[kept] = True
            row = np.where(np.repeat(allowed, gsize), row, -np.inf)
        pick = _order_desc(row)[:top_k]
        w = scores_np[t, pick]
        if normalize:
            w = w / w.sum()
        weights[t] = w * factor
        ids[t] = pick
    return [torch.from_numpy(weights), torch.from_numpy(ids)]


@op("moe_experts")
def op_moe_experts(inp, attrs):
    x, weights = f64(inp[0]), f64(inp[1])
    ids = inp[2].to(torch.int64)
    w_gate, w_up, w_down = (f64(t) for t in inp[3:6])
    T, k = ids.shape
    E, Fi, D = w_gate.shape
    if len(inp) > 6:  # GPT-OSS's expert biases
        b_gate, b_up, b_down = (f64(t) for t in inp[6:9])
    else:
        b_gate, b_up, b_down = torch.zeros(E, Fi, dtype=F64), torch.zeros(E, Fi, dtype=F64), torch.zeros(E, D, dtype=F64)
    activation = attr(attrs, "activation", "silu")
    if activation == "clamped_swiglu":
        # GptOssExperts._apply_gate itself, on gate/up interleaved as the checkpoint stores them.
        experts = SimpleNamespace(alpha=float(attr(attrs, "alpha", 1.702)), limit=float(attr(attrs, "limit", 7.0)))

        def act(g, u):
            gate_up = torch.stack([g, u], dim=-1).flatten(-2)
            return hf_gpt_oss.GptOssExperts._apply_gate(experts, gate_up)
    elif activation == "silu":
        def act(g, u):
            return F.silu(g) * u
    else:
        raise GenError(f"moe_experts: activation must be silu or clamped_swiglu, got {activation!r}")
    y = torch.zeros(T, w_down.shape[1], dtype=F64)
    for t in range(T):
        for j in range(k):
            e = int(ids[t, j])
            if not 0 <= e < E:
                raise GenError(f"moe_experts: expert id {e} out of range [0, {E})")
            h = act(w_gate[e] @ x[t] + b_gate[e], w_up[e] @ x[t] + b_up[e])
            y[t] += weights[t, j] * (w_down[e] @ h + b_down[e])
    return [y]


# ---- vision --------------------------------------------------------------


@op("patch_embed")
def op_patch_embed(inp, attrs):
    # CLIPVisionEmbeddings: Conv2d(kernel=stride=P) then flatten(2).transpose(1, 2).
    pixels, w = f64(inp[0]), f64(inp[1])
    b = f64(inp[2]) if len(inp) > 2 else None
    P = int(attrs["patch"])
    out = F.conv2d(pixels[None], w, b, stride=P)  # [1, D, Hi/P, Wi/P]
    return [out.flatten(2).transpose(1, 2)[0]]


# ---- quantization --------------------------------------------------------


def _groups(x: torch.Tensor, granularity: str, block: int, block_rows: int = 128) -> tuple[torch.Tensor, list[int]]:
    """x -> (x viewed as [..., G, g] groups along the last axis padded with 0, scale shape)."""
    N = x.shape[-1]
    if granularity == "block2d":  # block_rows x block tiles of a 2-D x: [MB, NB, block_rows * block]
        if block <= 0 or block_rows <= 0 or x.dim() != 2:
            raise GenError(f"quantize: block2d needs a 2-D x and positive blocks, got {list(x.shape)}")
        mb, nb = -(-x.shape[0] // block_rows), -(-N // block)
        padded = F.pad(x, (0, nb * block - N, 0, mb * block_rows - x.shape[0]))
        tiles = padded.reshape(mb, block_rows, nb, block).permute(0, 2, 1, 3).reshape(mb, nb, -1)
        return tiles, [mb, nb]
    if granularity == "tensor":
        return x.reshape(1, 1, -1), [1]
    if granularity == "channel":
        return x.reshape(*x.shape[:-1], 1, N), list(x.shape[:-1])
    if granularity == "block":
        if block <= 0:
            raise GenError(f"quantize: block must be positive, got {block}")
        nb = -(-N // block)
        padded = F.pad(x, (0, nb * block - N))
        return padded.reshape(*x.shape[:-1], nb, block), list(x.shape[:-1]) + [nb]
    raise GenError(f"quantize: granularity must be tensor, channel, block or block2d, got {granularity!r}")


def _expand_scale(scale: torch.Tensor, x_shape, granularity: str, block: int, block_rows: int = 128) -> torch.Tensor:
    """Scale (f64) broadcast to x's shape."""
    N = x_shape[-1]
    if granularity == "block2d":
        return scale.repeat_interleave(block_rows, dim=0)[: x_shape[0]].repeat_interleave(block, dim=1)[:, :N]
    if granularity == "tensor":
        return scale.reshape([1] * len(x_shape)).expand(x_shape)
    if granularity == "channel":
        return scale.reshape(*x_shape[:-1], 1).expand(x_shape)
    return scale.repeat_interleave(block, dim=-1)[..., :N]


@op("quantize")
def op_quantize(inp, attrs):
    x = f64(inp[0])
    qdtype = attr(attrs, "dtype", "i8")
    granularity = attr(attrs, "granularity", "tensor")
    block = int(attr(attrs, "block", 128))
    block_rows = int(attr(attrs, "block_rows", 128))
    if qdtype not in QMAX:
        raise GenError(f"quantize: dtype must be i8, f8_e4m3 or f8_e5m2, got {qdtype!r}")
    qmax = QMAX[qdtype]
    groups, scale_shape = _groups(x, granularity, block, block_rows)
    amax = torch.amax(groups.abs(), dim=-1)                       # f64, exact
    scale32 = (amax / qmax).to(torch.float32)                     # f32(amax/qmax)
    scale32 = torch.where(amax == 0, torch.ones_like(scale32), scale32)
    scale32 = scale32.reshape(scale_shape)
    v = x / _expand_scale(f64(scale32), x.shape, granularity, block, block_rows)  # f64 from the f32 scale
    if qdtype == "i8":
        q = torch.clamp(torch.round(v), -qmax, qmax).to(torch.int8)  # round half to even
    else:
        # The quotient rounded to f32, then round-to-nearest-even to f8 by torch's own
        # conversion: what an f32 kernel (and the harness's reference) computes.
        q = torch.clamp(v, -qmax, qmax).to(torch.float32).to(DTYPES[qdtype])
    return [q, scale32]


@op("dequantize")
def op_dequantize(inp, attrs):
    q, scale = inp
    granularity = attr(attrs, "granularity", "tensor")
    block = int(attr(attrs, "block", 128))
    qdtype = attr(attrs, "dtype", "i8")
    if q.dtype != DTYPES.get(qdtype):
        raise GenError(f"dequantize: q is {q.dtype}, attr dtype says {qdtype}")
    q64 = f64(q)
    return [q64 * _expand_scale(f64(scale), q64.shape, granularity, block, int(attr(attrs, "block_rows", 128)))]


@op("dequantize_mxfp4")
def op_dequantize_mxfp4(inp, attrs):
    """transformers' own MXFP4 dequantization (integrations/mxfp4.py convert_moe_packed_tensors,
    what it runs to load GPT-OSS's experts), on blocks [..., G, 16] and scales [..., G]."""
    blocks, scales = inp
    if blocks.dtype != torch.uint8 or scales.dtype != torch.uint8:
        raise GenError(f"dequantize_mxfp4: blocks and scales must be uint8, got {blocks.dtype}, {scales.dtype}")
    *prefix, G, B = blocks.shape
    rows = int(np.prod(prefix)) if prefix else 1
    # It takes [E, N, G, B] and returns [E, G·2B, N] (transposed for GPT-OSS's x · w): one "expert"
    # of all rows here, transposed back.
    out = hf_mxfp4.convert_moe_packed_tensors(blocks.reshape(1, rows, G, B), scales.reshape(1, rows, G), dtype=F64)
    return [out.transpose(1, 2).reshape(*prefix, G * B * 2)]


@op("scaled_linear")
def op_scaled_linear(inp, attrs):
    """x'·(w ⊙ w_scale)ᵀ + bias in f64; w_scale per block_n x block_k block of w; act_quant
    dynamic: x quantized per token in groups of block_k to f8_e4m3 (op_quantize, block) and back."""
    x, w, w_scale = inp[0], inp[1], inp[2]
    bias = f64(inp[3]) if len(inp) > 3 else None
    qdtype = attr(attrs, "dtype", "f8_e4m3")
    if w.dtype != DTYPES.get(qdtype):
        raise GenError(f"scaled_linear: w is {w.dtype}, attr dtype says {qdtype}")
    bn, bk = int(attr(attrs, "block_n", 128)), int(attr(attrs, "block_k", 128))
    want = [-(-w.shape[0] // bn), -(-w.shape[1] // bk)]
    if list(w_scale.shape) != want:
        raise GenError(f"scaled_linear: w_scale is {list(w_scale.shape)}, w {list(w.shape)} needs {want}")
    weight = f64(w) * _expand_scale(f64(w_scale), w.shape, "block2d", bk, bn)
    xs = f64(x)
    if attr(attrs, "act_quant", "none") == "dynamic":
        q, s = op_quantize([x], {"dtype": "f8_e4m3", "granularity": "block", "block": bk})
        xs = f64(q) * _expand_scale(f64(s), x.shape, "block", bk)
    return [F.linear(xs, weight, bias)]


# ---- token selection -----------------------------------------------------


@op("argmax")
def op_argmax(inp, attrs):
    return [torch.argmax(f64(inp[0]), dim=-1).to(torch.int64)]  # first maximum


def sample_rows(logits: np.ndarray, temperature: float, top_k: int, top_p: float,
                seed: int, step: int) -> np.ndarray:
    """The spec's sampler, row by row, in float64."""
    T, V = logits.shape
    out = np.zeros(T, dtype=np.int64)
    if T == 0:
        return out
    u_all = philox.uniform_f32(seed, step, 0, T).astype(np.float64)
    for r in range(T):
        if temperature <= 0:
            out[r] = int(np.argmax(logits[r]))
            continue
        z = logits[r] / temperature
        order = _order_desc(z)
        if top_k > 0:
            order = order[:top_k]
        zk = z[order]
        p = np.exp(zk - zk.max())
        p = p / p.sum()
        if top_p < 1.0:
            cum = np.cumsum(p)
            n = int(np.argmax(cum >= top_p)) + 1 if np.any(cum >= top_p) else p.size
            order, p = order[:n], p[:n] / p[:n].sum()
        cum = np.cumsum(p)
        hit = np.nonzero(cum > u_all[r])[0]
        out[r] = int(order[hit[0]] if hit.size else order[-1])
    return out


@op("sample")
def op_sample(inp, attrs):
    logits = f64(inp[0]).numpy()
    ids = sample_rows(logits,
                      temperature=float(attr(attrs, "temperature", 1.0)),
                      top_k=int(attr(attrs, "top_k", 0)),
                      top_p=float(attr(attrs, "top_p", 1.0)),
                      seed=int(attr(attrs, "seed", 0)),
                      step=int(attr(attrs, "step", 0)))
    return [torch.from_numpy(ids)]


# --------------------------------------------------------------------------
# Dump reading, golden writing
# --------------------------------------------------------------------------


def raw_tensor_bytes(path: Path) -> dict[str, bytes]:
    """name -> the raw little-endian data bytes of each tensor in a safetensors file."""
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    base = 8 + n
    return {name: data[base + e["data_offsets"][0]: base + e["data_offsets"][1]]
            for name, e in header.items() if name != "__metadata__"}


def inputs_digest(path: Path, names: list[str]) -> str:
    raw = raw_tensor_bytes(path)
    digest = hashlib.sha256()
    for name in names:
        if name not in raw:
            raise GenError(f"{path}: no tensor '{name}'")
        digest.update(raw[name])
    return digest.hexdigest()


def compute_case(case: dict, dump: Path) -> tuple[dict[str, torch.Tensor], str]:
    """The golden tensors of one case and its inputs digest."""
    op_name = case["op"]
    if op_name not in OPS:
        raise GenError(f"unknown op {op_name!r}")
    path = dump / case["inputs_file"]
    tensors = load_file(str(path))
    names = list(case["inputs"])
    missing = [n for n in names if n not in tensors]
    if missing:
        raise GenError(f"{path}: missing inputs {missing}")
    attrs = case.get("attrs") or {}
    results = OPS[op_name]([tensors[n] for n in names], attrs)
    outputs = case["outputs"]
    if len(results) != len(outputs):
        raise GenError(f"{op_name} gives {len(results)} outputs, the case lists {len(outputs)}")
    golden: dict[str, torch.Tensor] = {}
    for result, spec in zip(results, outputs):
        if list(result.shape) != list(spec["shape"]):
            raise GenError(f"output '{spec['name']}': computed shape {list(result.shape)}, "
                           f"case says {spec['shape']}")
        dtype = spec["dtype"]
        if dtype in EXACT_OUTPUT_DTYPES:
            if result.dtype != DTYPES[dtype]:
                raise GenError(f"output '{spec['name']}': computed {result.dtype}, case says {dtype}")
            stored = result
        else:
            if not result.dtype.is_floating_point:
                raise GenError(f"output '{spec['name']}': computed {result.dtype}, case says {dtype}")
            stored = result.to(torch.float32)
        golden[f"{case['id']}/{spec['name']}"] = stored.contiguous()
    return golden, inputs_digest(path, names)


def save_canonical(tensors: dict[str, torch.Tensor], metadata: dict[str, str], path: Path) -> None:
    """safetensors.torch.save with a canonical header.

    safetensors serialises __metadata__ from a hash map, so its key order (and
    with it the file's bytes) changes from run to run.  The header is rewritten
    with sorted metadata keys and the tensors in data order; the data section
    is kept as safetensors wrote it."""
    blob = st_save(tensors, metadata=metadata)
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    canon: dict[str, Any] = {"__metadata__": dict(sorted(meta.items()))}
    for name, entry in sorted(header.items(), key=lambda kv: (kv[1]["data_offsets"], kv[0])):
        canon[name] = entry
    text = json.dumps(canon, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    data = len(text).to_bytes(8, "little") + text + blob[8 + n:]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    check = load_file(str(tmp))
    same = set(check) == set(tensors) and all(
        check[k].dtype == t.dtype and check[k].shape == t.shape
        and check[k].contiguous().view(torch.uint8).equal(t.contiguous().view(torch.uint8))
        for k, t in tensors.items())
    if not same:
        raise GenError(f"{path}: canonical rewrite does not read back")
    os.replace(tmp, path)


def generate(dump: Path, root: Path, log=print) -> list[Path]:
    """Write every golden file of the dump under root; returns their paths."""
    with open(dump / "cases.json", "r", encoding="utf-8") as handle:
        cases = json.load(handle)["cases"]
    self_check_rope()
    golden_root = (root / "golden").resolve()
    per_file: dict[str, tuple[dict, dict]] = {}
    for case in cases:
        gpath = case.get("golden")
        if gpath is None or gpath == "reference":
            continue
        try:
            tensors, digest = compute_case(case, dump)
        except GenError as exc:
            raise GenError(f"case {case.get('id')!r}: {exc}") from None
        file_tensors, file_meta = per_file.setdefault(gpath, ({}, {}))
        dup = set(tensors) & set(file_tensors)
        if dup:
            raise GenError(f"{gpath}: duplicate tensors {sorted(dup)}")
        file_tensors.update(tensors)
        file_meta[f"inputs:{case['id']}"] = digest
    written = []
    for gpath, (tensors, meta) in per_file.items():
        out = (root / gpath).resolve()
        try:
            out.relative_to(golden_root)
        except ValueError:
            raise GenError(f"golden path {gpath} is not under {golden_root}") from None
        out.parent.mkdir(parents=True, exist_ok=True)
        metadata = {"format": "pt", "producer": PRODUCER, **meta}
        save_canonical(tensors, metadata, out)
        written.append(out)
        log(f"wrote {out.relative_to(root.resolve())}: {len(meta)} cases, {len(tensors)} tensors")
    if written:
        update_manifest(golden_root, [p.relative_to(golden_root) for p in written], PRODUCER)
        log(f"updated {golden_root / 'manifest.json'} (transformers {transformers.__version__})")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--dump", type=Path, help="a directory written by harness run --dump-cases")
    source.add_argument("--harness", type=Path, help="harness binary: dump SUITE's cases first")
    parser.add_argument("--suite", default="suites/ops.yaml", help="with --harness (default suites/ops.yaml)")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="repository root")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        if args.dump is not None:
            generate(args.dump, root)
        else:
            tmp = Path(tempfile.mkdtemp(prefix="gen_ops_dump_"))
            try:
                cmd = [str(args.harness.resolve()), "run", args.suite, "--dump-cases", str(tmp), "--no-run"]
                print("+", " ".join(cmd))
                subprocess.run(cmd, cwd=root, check=True)
                generate(tmp, root)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except (GenError, subprocess.CalledProcessError, OSError, KeyError) as exc:
        print(f"gen_ops.py: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
