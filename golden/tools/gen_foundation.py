#!/usr/bin/env python3
"""Generate the golden fixtures in golden/foundation/ and update golden/manifest.json.

Usage:  python3 golden/tools/gen_foundation.py

Outputs (all paths relative to golden/):

  foundation/conversions.safetensors   dtype conversion tables and torch's
                                       rounding of inputs chosen to hit every
                                       rounding edge of f16/bf16/f8
  foundation/philox.safetensors        Philox4x32-10 words, uniform and normal
                                       draws (reference: tools/philox.py)
  foundation/st/all_dtypes.safetensors one [2,3,4] tensor per harness dtype,
                                       plus a 0-d and an empty tensor
  foundation/st/sharded/...            a two-shard HF-style checkpoint + index
  foundation/compare_pairs.safetensors actual/expected tensor pairs and
  foundation/compare_metrics.json      the comparison metrics for each pair

Every value is derived from fixed seeds; running the script twice produces
byte-identical files.  All dtype conversions are PyTorch's own (CPU)
conversions; the script cross-checks them against numpy and against a small
independent round-to-nearest-even reference before writing anything.
"""

from __future__ import annotations

import os
import sys

# PyTorch's CPU kernels are dispatched by CPU capability (DEFAULT / AVX2 /
# AVX512).  For finite values all of them round identically, but the NaN bit
# patterns differ: e.g. the AVX2/AVX512 float32->bfloat16 kernels emit 0xffff
# for every NaN, the scalar c10 code 0x7fc0.  Pin the portable scalar kernels
# so the goldens do not depend on the machine that generated them.  This has
# to happen before torch is imported.
if "torch" in sys.modules:
    raise RuntimeError("gen_foundation.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"

import json  # noqa: E402
import math  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

TOOLS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS_DIR))
import philox  # noqa: E402
from manifest import update_manifest  # noqa: E402

GOLDEN_ROOT = TOOLS_DIR.parent
OUT_DIR = GOLDEN_ROOT / "foundation"
PRODUCER = "golden/tools/gen_foundation.py"
ST_METADATA = {"format": "pt"}

# --------------------------------------------------------------------------
# Floating-point formats
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format, described by its bit layout."""

    name: str              # harness dtype name
    torch_dtype: torch.dtype
    bits: int              # storage width
    exp_bits: int
    man_bits: int
    max_finite_bits: int   # bit pattern of the largest finite positive value
    eps: float             # machine epsilon, 2**-man_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def uint_dtype(self):
        return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[self.bits]

    def decode(self, pattern: np.ndarray) -> np.ndarray:
        """Exact float64 value of positive bit patterns, read with the finite
        formula even where the format has inf/NaN (so max_finite_bits + 1
        gives the overflow threshold max + ulp)."""
        pattern = np.asarray(pattern, dtype=np.int64)
        exp = pattern >> self.man_bits
        man = pattern & ((1 << self.man_bits) - 1)
        normal = exp > 0
        significand = np.where(normal, man + (1 << self.man_bits), man).astype(np.float64)
        scale = np.where(normal, exp, 1) - self.bias - self.man_bits
        return np.ldexp(significand, scale)


F64 = FloatFormat("f64", torch.float64, 64, 11, 52, 0x7FEFFFFFFFFFFFFF, 2.0**-52)
F32 = FloatFormat("f32", torch.float32, 32, 8, 23, 0x7F7FFFFF, 2.0**-23)
F16 = FloatFormat("f16", torch.float16, 16, 5, 10, 0x7BFF, 2.0**-10)
BF16 = FloatFormat("bf16", torch.bfloat16, 16, 8, 7, 0x7F7F, 2.0**-7)
F8_E4M3 = FloatFormat("f8_e4m3", torch.float8_e4m3fn, 8, 4, 3, 0x7E, 2.0**-3)
F8_E5M2 = FloatFormat("f8_e5m2", torch.float8_e5m2, 8, 5, 2, 0x7B, 2.0**-2)
FORMATS = {f.name: f for f in (F64, F32, F16, BF16, F8_E4M3, F8_E5M2)}
FORMAT_BY_TORCH = {f.torch_dtype: f for f in FORMATS.values()}

# Element-wise tolerance presets (rtol, atol) of the harness, keyed by dtype.
PRESETS = {
    "f64": (1e-7, 1e-7),
    "f32": (1.3e-6, 1e-5),
    "f16": (1e-3, 1e-5),
    "bf16": (1.6e-2, 1e-5),
    "f8_e4m3": (1.25e-1, 1.953125e-3),
    "f8_e5m2": (2.5e-1, 1.52587890625e-5),
}

SIGN32 = np.uint32(0x80000000)


def bits_tensor(bits: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """Reinterpret unsigned integer bit patterns as a torch tensor of dtype."""
    signed = {np.uint8: np.uint8, np.uint16: np.int16, np.uint32: np.int32,
              np.uint64: np.int64}[bits.dtype.type]
    return torch.from_numpy(np.ascontiguousarray(bits).view(signed).copy()).view(dtype)


def tensor_bits(t: torch.Tensor) -> np.ndarray:
    """Bit patterns of a tensor as an unsigned numpy array."""
    fmt = FORMAT_BY_TORCH[t.dtype]
    signed = {8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[fmt.bits]
    return t.contiguous().view(signed).numpy().view(fmt.uint_dtype).copy()


def f32_from_bits(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def f32_bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


# --------------------------------------------------------------------------
# Independent rounding reference (used only to cross-check torch)
# --------------------------------------------------------------------------


def reference_round(x: np.ndarray, fmt: FloatFormat, saturate: bool) -> np.ndarray:
    """Round finite-or-infinite float64 values to fmt, round-to-nearest-even.

    Pure float64 arithmetic: the quantum (ulp) is 2**(max(exponent, emin) -
    man_bits), x / quantum is exact, and np.rint rounds half to even.
    Overflow gives +-inf, or +-max_finite when saturate (float8_e4m3fn, which
    has no infinity).  Returns float64 values (zeros keep their sign).
    """
    x = np.asarray(x, dtype=np.float64)
    max_finite = float(fmt.decode(fmt.max_finite_bits))
    emin = 1 - fmt.bias
    _, e = np.frexp(np.where(np.isfinite(x) & (x != 0), x, 1.0))
    quantum_exp = np.maximum(e - 1, emin) - fmt.man_bits
    with np.errstate(over="ignore", invalid="ignore"):  # inf/NaN inputs
        rounded = np.ldexp(np.rint(np.ldexp(x, -quantum_exp)), quantum_exp)
    rounded = np.where(np.isfinite(x), rounded, x)
    over = np.abs(rounded) > max_finite
    rounded = np.where(over, np.copysign(max_finite if saturate else np.inf, x), rounded)
    return np.copysign(rounded, x)  # -tiny -> -0.0


def check_against_reference(x_f64: np.ndarray, y: torch.Tensor, fmt: FloatFormat,
                            saturate: bool) -> None:
    """Assert torch's conversion of x to fmt equals the reference (non-NaN)."""
    got = y.to(torch.float64).numpy()
    want = reference_round(x_f64, fmt, saturate)
    keep = ~np.isnan(x_f64)
    assert np.array_equal(np.isnan(got), ~keep), f"{fmt.name}: NaN-ness differs"
    ok = (got[keep] == want[keep]) & (np.signbit(got[keep]) == np.signbit(want[keep]))
    if not ok.all():
        bad = np.nonzero(~ok)[0][:5]
        raise AssertionError(f"{fmt.name}: torch differs from reference at "
                             f"{x_f64[keep][bad]} -> {got[keep][bad]} vs {want[keep][bad]}")


# --------------------------------------------------------------------------
# A. conversions.safetensors
# --------------------------------------------------------------------------

# f16 has 1024 values per binade, too many to enumerate every listed binade
# in full within the size budget (N <= ~60k).  The subnormal binade (where
# every f32 exponent needs a different shift) is enumerated in full; the
# other listed f16 binades take the first and last F16_EDGE_MANTISSAS
# mantissas (carry into the next binade, both lsb parities) plus
# F16_RANDOM_MANTISSAS random ones.  bf16 binades (128 values) are complete.
F16_EDGE_MANTISSAS = 16
F16_RANDOM_MANTISSAS = 32
F16_REST_SAMPLE = 250
BF16_REST_SAMPLE = 1500
N_RANDOM_BITS = 20_000
N_NORMAL_DRAWS = 5_000            # in total, split evenly over NORMAL_SCALES
NORMAL_SCALES = (1e-6, 1.0, 1e3, 1e5)


def listed_binades(fmt: FloatFormat) -> list[int]:
    """Biased exponents to cover: subnormal (0), first 3 normal, last 3,
    and the binades either side of 1.0 ([0.5, 1) and [1, 2))."""
    emax = fmt.max_finite_bits >> fmt.man_bits
    return sorted({0, 1, 2, 3, emax - 2, emax - 1, emax, fmt.bias - 1, fmt.bias})


def edge_value_patterns(fmt: FloatFormat, rng: np.random.Generator) -> np.ndarray:
    """Positive finite bit patterns of fmt whose rounding edges are tested."""
    if fmt.bits == 8:
        return np.arange(fmt.max_finite_bits + 1, dtype=np.int64)  # all of them
    m = fmt.man_bits
    per_binade = 1 << m
    emax = fmt.max_finite_bits >> m
    binades = listed_binades(fmt)
    chosen = []
    for e in binades:
        base = e << m
        if fmt is F16 and e != 0:
            edges = np.r_[0:F16_EDGE_MANTISSAS, per_binade - F16_EDGE_MANTISSAS:per_binade]
            middle = np.setdiff1d(np.arange(per_binade), edges)
            extra = rng.choice(middle, size=F16_RANDOM_MANTISSAS, replace=False)
            chosen.append(base + np.union1d(edges, extra))
        else:
            chosen.append(base + np.arange(per_binade))
    rest = np.array([p for e in range(1, emax + 1) if e not in binades
                     for p in range(e << m, (e + 1) << m)], dtype=np.int64)
    sample = F16_REST_SAMPLE if fmt is F16 else BF16_REST_SAMPLE
    chosen.append(rng.choice(rest, size=sample, replace=False))
    patterns = np.unique(np.concatenate(chosen))
    return patterns[patterns <= fmt.max_finite_bits]


def rounding_edge_inputs(fmt: FloatFormat, rng: np.random.Generator) -> np.ndarray:
    """Positive f32 bit patterns probing fmt's rounding: each value v, the
    exact midpoint to the next larger value and the f32 values one ulp either
    side of the midpoint; around the overflow threshold also the threshold
    itself and its f32 neighbours."""
    p = edge_value_patterns(fmt, rng)
    v = fmt.decode(p)
    nxt = fmt.decode(p + 1)  # for max_finite: the overflow threshold max + ulp
    mid = (v + nxt) * 0.5    # exact in float64
    mid32 = mid.astype(np.float32)
    assert np.array_equal(mid32.astype(np.float64), mid), f"{fmt.name}: midpoint not in f32"
    v32 = v.astype(np.float32)
    assert np.array_equal(v32.astype(np.float64), v)
    out = [v32, mid32,
           np.nextafter(mid32, np.float32(0)), np.nextafter(mid32, np.float32(np.inf))]
    threshold = fmt.decode(fmt.max_finite_bits + 1)
    if threshold <= np.finfo(np.float32).max:  # bf16's 2**128 is not an f32
        t32 = np.float32(threshold)
        out.append(np.array([t32, np.nextafter(t32, np.float32(0)),
                             np.nextafter(t32, np.float32(np.inf))], dtype=np.float32))
    return np.unique(f32_bits(np.concatenate(out)))


def build_f32_inputs() -> np.ndarray:
    """All f32 conversion inputs as sorted, de-duplicated uint32 bit patterns."""
    edge = [rounding_edge_inputs(fmt, np.random.default_rng(seed))
            for fmt, seed in ((F16, 16), (BF16, 17), (F8_E4M3, 18), (F8_E5M2, 19))]
    specials = np.array([
        0x00000000,                                       # +0
        0x7F800000,                                       # +inf
        0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7F812345,   # NaNs (quiet/signalling,
        0xFFC00000, 0xFF812345,                           #  payloads, both signs)
        0x00000001, 0x00000002, 0x00000003, 0x00012345,   # f32 subnormals
        0x003FFFFF, 0x00400000, 0x007FFFFF,
        0x00800000,                                       # FLT_MIN
        0x7F7FFFFF,                                       # FLT_MAX
    ], dtype=np.uint32)
    constructed = np.concatenate(edge + [specials])
    # Mirror everything constructed: rounding must be sign-symmetric.
    constructed = np.concatenate([constructed, constructed ^ SIGN32])

    rng = np.random.default_rng(1234)
    random_bits = rng.integers(0, 2**32, size=N_RANDOM_BITS, dtype=np.uint32)
    per_scale = N_NORMAL_DRAWS // len(NORMAL_SCALES)
    normals = np.concatenate([(rng.standard_normal(per_scale) * s).astype(np.float32)
                              for s in NORMAL_SCALES])
    # Random bit patterns and normal draws already carry both signs.
    all_bits = np.concatenate([constructed, random_bits, f32_bits(normals)])
    return np.unique(all_bits)  # sorted by uint32 bits


def build_f64_inputs() -> np.ndarray:
    """f64 inputs probing f32 rounding, as sorted uint64 bit patterns."""
    rng = np.random.default_rng(64)
    f32_max = float(np.finfo(np.float32).max)
    # f32 values whose rounding neighbourhood is probed: the subnormal range,
    # the subnormal/normal boundary, binade boundaries, around 1.0, near the
    # overflow threshold, and random values.
    anchors = [
        f32_from_bits(np.r_[0:8, 0x3FFFF8:0x400008, 0x7FFFF8:0x800008]),
        f32_from_bits(np.r_[0x3F7FFFF8:0x3F800008, 0x3FFFFFFC:0x40000004]),
        f32_from_bits(np.r_[0x7F7FFFF0:0x7F800000]),
        f32_from_bits(np.r_[0x00FFFFFE:0x01000002, 0x4B7FFFFE:0x4B800002]),
        f32_from_bits(rng.integers(0, 0x7F800000, size=140, dtype=np.uint32)),
        rng.standard_normal(20).astype(np.float32),
    ]
    x = np.abs(np.concatenate(anchors)).astype(np.float64)
    with np.errstate(over="ignore"):  # FLT_MAX -> inf
        nxt = np.nextafter(x.astype(np.float32), np.float32(np.inf)).astype(np.float64)
    nxt = np.where(np.isinf(nxt), 2.0**128, nxt)  # FLT_MAX's "next" = overflow threshold
    mid = (x + nxt) * 0.5  # exact in f64
    values = [x, mid, np.nextafter(mid, 0.0), np.nextafter(mid, np.inf)]
    values.append(np.array([
        0.0, np.inf,
        2.0**128, np.nextafter(2.0**128, 0.0), np.nextafter(2.0**128, np.inf),
        2.0**-149, 2.0**-150, np.nextafter(2.0**-150, 0.0), np.nextafter(2.0**-150, 1.0),
        2.0**-151, 2.0**-126, 2.0**-126 - 2.0**-150, 1e-50, 5e-324, 2.2250738585072014e-308,
        1e39, 1.7976931348623157e308, f32_max * 2.0, 1.0 / 3.0, math.pi, 0.1,
    ]))
    bits = np.concatenate(values).view(np.uint64)
    nans = np.array([0x7FF8000000000000, 0x7FF0000000000001, 0x7FF8000012345678,
                     0x7FFFFFFFFFFFFFFF, 0x7FF4000000000000], dtype=np.uint64)
    bits = np.concatenate([bits, nans])
    bits = np.concatenate([bits, bits ^ np.uint64(1 << 63)])  # mirror
    return np.unique(bits)


def gen_conversions() -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = {}

    # Exhaustive up-conversion tables: element i = the value with bit pattern i.
    for fmt in (F16, BF16, F8_E4M3, F8_E5M2):
        src = bits_tensor(np.arange(1 << fmt.bits, dtype=np.int64).astype(fmt.uint_dtype),
                          fmt.torch_dtype)
        out = src.to(torch.float32)
        tensors[f"{fmt.name}_to_f32"] = out
        # Cross-check: the finite values against the bit-layout decoder.
        pats = np.arange(1 << fmt.bits, dtype=np.int64)
        mag = pats & ((1 << (fmt.bits - 1)) - 1)
        finite = mag <= fmt.max_finite_bits
        want = fmt.decode(mag) * np.where(pats >> (fmt.bits - 1), -1.0, 1.0)
        got = out.to(torch.float64).numpy()
        assert np.array_equal(got[finite], want[finite]), fmt.name
        assert np.array_equal(np.signbit(got[finite]), pats[finite] >> (fmt.bits - 1) == 1)
        if fmt is F16:  # numpy's own f16 decoder agrees on every non-NaN value
            ref = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
            keep = ~np.isnan(ref)
            assert np.array_equal(f32_bits(ref)[keep], tensor_bits(out)[keep])

    # f32 -> f16 / bf16 / f8 on inputs that hit every rounding edge.
    in_bits = build_f32_inputs()
    x32 = bits_tensor(in_bits, torch.float32)
    tensors["f32_inputs"] = x32
    with np.errstate(invalid="ignore"):  # signalling NaNs
        x_f64 = f32_from_bits(in_bits).astype(np.float64)
    for fmt in (F16, BF16, F8_E4M3, F8_E5M2):
        y = x32.to(fmt.torch_dtype)
        # The contiguous (vectorised) and strided (scalar) code paths agree on
        # every non-NaN input.  (For f16 they do not agree on NaN payloads:
        # the contiguous path keeps the top payload bits, the strided one
        # returns 0x7e00; the goldens record the contiguous path.)
        strided = torch.stack([x32, x32], dim=1)[:, 0].to(fmt.torch_dtype)
        keep = ~np.isnan(x_f64)
        assert np.array_equal(tensor_bits(y)[keep], tensor_bits(strided)[keep]), fmt.name
        check_against_reference(x_f64, y, fmt, saturate=fmt is F8_E4M3)
        tensors[f"f32_to_{fmt.name}"] = y
    # numpy's independent f32 -> f16 agrees, NaN payloads included.
    with np.errstate(over="ignore", invalid="ignore"):
        np16 = f32_from_bits(in_bits).astype(np.float16).view(np.uint16)
    keep = ~np.isnan(f32_from_bits(in_bits))
    assert np.array_equal(np16[keep], tensor_bits(tensors["f32_to_f16"])[keep])

    # f64 -> f32.
    in64 = build_f64_inputs()
    x64 = bits_tensor(in64, torch.float64)
    y32 = x64.to(torch.float32)
    check_against_reference(in64.view(np.float64), y32, F32, saturate=False)
    with np.errstate(over="ignore", invalid="ignore"):
        npy = in64.view(np.float64).astype(np.float32)
    keep = ~np.isnan(npy)
    assert np.array_equal(f32_bits(npy)[keep], tensor_bits(y32)[keep])
    tensors["f64_inputs"] = x64
    tensors["f64_to_f32"] = y32
    return tensors


def describe_conversion_behaviour() -> None:
    """Print the (sometimes surprising) special-value behaviour of torch."""
    def show(label, src_bits, src_dtype, dst, tail=False):
        # Tile to 64 elements so the values go through the vectorised main
        # loop (as in the goldens); tail=True converts a 1-element tensor per
        # value instead, which takes the scalar tail code.
        uint = {torch.float32: np.uint32, torch.float16: np.uint16,
                torch.bfloat16: np.uint16}.get(src_dtype, np.uint8)
        if tail:
            out = [tensor_bits(bits_tensor(np.array([b], dtype=uint), src_dtype).to(dst))[0]
                   for b in src_bits]
        else:
            src = bits_tensor(np.resize(np.array(src_bits, dtype=uint), 64), src_dtype)
            out = tensor_bits(src.to(dst))
        width = FORMAT_BY_TORCH[dst].bits // 4
        print(f"  {label}: " + ", ".join(f"{s:#x}->{int(o):#0{width + 2}x}"
                                          for s, o in zip(src_bits, out)))
    nan32 = [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345]
    print("torch conversion behaviour (ATEN_CPU_CAPABILITY=default):")
    show("f32 NaN -> f16 ", nan32, torch.float32, torch.float16)
    show("f32 NaN -> bf16", nan32, torch.float32, torch.bfloat16)
    show("f32 NaN -> e4m3", nan32, torch.float32, torch.float8_e4m3fn)
    show("f32 NaN -> e5m2", nan32, torch.float32, torch.float8_e5m2)
    big = [0x7F800000, 0xFF800000, 0x43E80000, 0x43F00000, 0x7F7FFFFF]  # inf,-inf,464,480,max
    show("f32 inf/464/480/max -> e4m3", big, torch.float32, torch.float8_e4m3fn)
    show("f32 inf/464/480/max -> e5m2", big, torch.float32, torch.float8_e5m2)
    show("f16 NaN -> f32 ", [0x7C01, 0x7E00, 0xFE00, 0x7D55], torch.float16, torch.float32)
    show("f16 NaN -> f32 (scalar tail)", [0x7C01, 0x7E00, 0xFE00, 0x7D55], torch.float16,
         torch.float32, tail=True)
    show("bf16 NaN -> f32", [0x7F81, 0xFFC0], torch.bfloat16, torch.float32)
    show("e4m3 NaN -> f32", [0x7F, 0xFF], torch.float8_e4m3fn, torch.float32)
    show("e5m2 NaN -> f32", [0x7D, 0x7E, 0x7F, 0xFF], torch.float8_e5m2, torch.float32)


# --------------------------------------------------------------------------
# B. philox.safetensors
# --------------------------------------------------------------------------

PHILOX_CASES = [(0, 0), (7, 1), (78187493520, 41490932481),
                (18446744073709551615, 18446744073709551615)]


def gen_philox() -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = {}
    for seed, stream in PHILOX_CASES:
        key = f"philox.{seed}.{stream}"
        tensors[f"{key}.words"] = torch.from_numpy(
            philox.words(seed, stream, 0, 64).astype(np.int64))
        tensors[f"{key}.uniform"] = torch.from_numpy(philox.uniform_f32(seed, stream, 0, 1024))
        n64 = philox.normal_f64(seed, stream, 0, 1024)
        tensors[f"{key}.normal_f64"] = torch.from_numpy(n64)
        tensors[f"{key}.normal_f32"] = torch.from_numpy(n64.astype(np.float32))
    # Draws starting at an index that is not a multiple of 4 must equal the
    # corresponding slice of a draw from 0.
    uo = philox.uniform_f32(7, 1, 1001, 37)
    no = philox.normal_f64(7, 1, 1001, 37)
    assert np.array_equal(uo, philox.uniform_f32(7, 1, 0, 1038)[1001:])
    assert np.array_equal(no, philox.normal_f64(7, 1, 0, 1038)[1001:])
    tensors["philox.7.1.uniform_offset"] = torch.from_numpy(uo)
    tensors["philox.7.1.normal_offset"] = torch.from_numpy(no)

    # Statistical sanity check and libm cross-check (never used for output).
    big = philox.normal_f64(7, 1, 0, 100_000)
    print(f"philox normal_f64(7,1)[0:100000]: mean {big.mean():+.5f}, std {big.std():.5f}")
    assert abs(big.mean()) < 0.02 and abs(big.std() - 1.0) < 0.02
    uni = philox.uniform_f32(7, 1, 0, 100_000)
    print(f"philox uniform_f32(7,1)[0:100000]: mean {uni.mean():.5f} (expect 0.5)")
    assert abs(uni.mean() - 0.5) < 0.01 and uni.min() >= 0.0 and uni.max() < 1.0
    w = philox.words(7, 1, 0, 100_000)
    c, s = philox.det_cos_sin_turns(w)
    ang = w.astype(np.float64) * (2.0 * np.pi / 2.0**32)
    err = max(np.max(np.abs(c - np.cos(ang))), np.max(np.abs(s - np.sin(ang))))
    u = (w.astype(np.float64) + 0.5) * 2.0**-32
    lerr = np.max(np.abs(philox.det_log(u) - np.log(u)))
    print(f"det_cos_sin_turns vs np.cos/np.sin: max abs diff {err:.3g}; "
          f"det_log vs np.log: {lerr:.3g}")
    assert err < 1e-14 and lerr < 1e-14
    return tensors


# --------------------------------------------------------------------------
# C. st/all_dtypes.safetensors
# --------------------------------------------------------------------------


def gen_all_dtypes() -> dict[str, torch.Tensor]:
    k = torch.arange(24, dtype=torch.int64).reshape(2, 3, 4)  # row-major k
    base = torch.tensor([(i - 12) * 0.375 for i in range(24)], dtype=torch.float32).reshape(2, 3, 4)
    tensors = {fmt.name: base.to(fmt.torch_dtype)
               for fmt in (F64, F32, F16, BF16, F8_E4M3, F8_E5M2)}
    tensors["i64"] = (k * 3 - 30).to(torch.int64)
    tensors["i32"] = (k * 3 - 30).to(torch.int32)
    tensors["i8"] = (k * 3 - 30).to(torch.int8)
    tensors["u8"] = (k * 10).to(torch.uint8)
    tensors["bool"] = (k % 3 == 0)
    tensors["scalar"] = torch.tensor(3.25, dtype=torch.float32)
    tensors["empty"] = torch.zeros((0, 3), dtype=torch.float32)
    return tensors


# --------------------------------------------------------------------------
# D. st/sharded/
# --------------------------------------------------------------------------

SHARDS = [
    ("model-00001-of-00002.safetensors", [
        ("model.embed_tokens.weight", torch.float32, (16, 8)),
        ("model.layers.0.mlp.up_proj.weight", torch.bfloat16, (12, 8)),
    ]),
    ("model-00002-of-00002.safetensors", [
        ("model.layers.1.mlp.up_proj.weight", torch.bfloat16, (12, 8)),
        ("lm_head.weight", torch.float32, (16, 8)),
    ]),
]


def gen_sharded(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written, weight_map, total_size, stream = [], {}, 0, 0
    for filename, specs in SHARDS:
        shard = {}
        for name, dtype, shape in specs:
            n = math.prod(shape)
            values = philox.uniform_f32(11, stream, 0, n) - np.float32(0.5)  # exact in f32
            shard[name] = torch.from_numpy(values).reshape(shape).to(dtype)
            weight_map[name] = filename
            total_size += shard[name].numel() * shard[name].element_size()
            stream += 1
        save_file(shard, out_dir / filename, metadata=ST_METADATA)
        written.append(out_dir / filename)
    index = {"metadata": {"total_size": total_size}, "weight_map": weight_map}
    index_path = out_dir / "model.safetensors.index.json"
    with open(index_path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    written.append(index_path)
    return written


# --------------------------------------------------------------------------
# E. compare_pairs.safetensors + compare_metrics.json
# --------------------------------------------------------------------------


def _ulp_ord(t: torch.Tensor) -> np.ndarray:
    """Monotone integer ordering of a float tensor's bit patterns (as Python
    ints, so that f64 distances cannot overflow): bits if the sign bit is
    clear, else -(bits without the sign); +0 and -0 both map to 0."""
    fmt = FORMAT_BY_TORCH[t.dtype]
    bits = tensor_bits(t.reshape(-1)).astype(np.uint64).astype(object)
    sign = 1 << (fmt.bits - 1)
    return np.array([-(b - sign) if b >= sign else b for b in bits], dtype=object)


def compare_metrics(actual: torch.Tensor, expected: torch.Tensor) -> dict:
    """The harness comparison metrics, computed in float64.

    Sums use math.fsum (correctly rounded), so the value does not depend on
    a summation order; the harness compares these with a tolerance anyway.
    """
    fa, fe = FORMAT_BY_TORCH[actual.dtype], FORMAT_BY_TORCH[expected.dtype]
    a = actual.to(torch.float64).reshape(-1).numpy()  # exact upcasts
    e = expected.to(torch.float64).reshape(-1).numpy()
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    inf_a, inf_e = np.isinf(a), np.isinf(e)
    finite = np.isfinite(a) & np.isfinite(e)
    n_fin = int(finite.sum())
    nan_mismatch = int((nan_a != nan_e).sum())
    with np.errstate(invalid="ignore"):
        inf_mismatch = int((~nan_a & ~nan_e & (inf_a | inf_e) & (a != e)).sum())

    af, ef = a[finite], e[finite]
    d = np.abs(af - ef)
    eps_expected = fe.eps
    ae = np.abs(ef)
    rel = np.where(ef != 0, d / np.where(ef != 0, ae, 1.0), d / eps_expected)

    m = {
        "count": int(a.size),
        "nan_actual": int(nan_a.sum()), "nan_expected": int(nan_e.sum()),
        "inf_actual": int(inf_a.sum()), "inf_expected": int(inf_e.sum()),
        "nan_mismatch": nan_mismatch, "inf_mismatch": inf_mismatch,
    }
    if n_fin:
        m["max_abs_err"] = float(d.max())
        m["mean_abs_err"] = math.fsum(d.tolist()) / n_fin
        m["rmse"] = math.sqrt(math.fsum((d * d).tolist()) / n_fin)
        m["max_rel_err"] = float(rel.max())
        m["ratio_rel_lt_1e-3"] = int((rel < 1e-3).sum()) / n_fin
        m["ratio_rel_lt_5e-3"] = int((rel < 5e-3).sum()) / n_fin
        m["worst_index"] = int(np.flatnonzero(finite)[int(np.argmax(d))])
    else:
        m.update({"max_abs_err": 0.0, "mean_abs_err": 0.0, "rmse": 0.0, "max_rel_err": 0.0,
                  "ratio_rel_lt_1e-3": 1.0, "ratio_rel_lt_5e-3": 1.0, "worst_index": -1})

    sa = math.fsum((af * af).tolist())
    se = math.fsum((ef * ef).tolist())
    dot = math.fsum((af * ef).tolist())
    if sa == 0.0 and se == 0.0:
        cosine = 1.0
    elif sa == 0.0 or se == 0.0:
        cosine = 0.0
    else:
        cosine = min(1.0, max(-1.0, dot / (math.sqrt(sa) * math.sqrt(se))))
        ref = torch.nn.functional.cosine_similarity(
            torch.from_numpy(af), torch.from_numpy(ef), dim=0).item()
        assert abs(ref - cosine) < 1e-12, (cosine, ref)
    m["cosine"] = cosine

    if fa is fe:
        not_nan = ~nan_a & ~nan_e
        dist = np.abs(_ulp_ord(actual)[not_nan] - _ulp_ord(expected)[not_nan])
        m["max_ulp"] = int(dist.max()) if dist.size else 0
    else:
        m["max_ulp"] = None

    preset = fa if fa.eps > fe.eps else fe  # the lower-precision dtype
    rtol, atol = PRESETS[preset.name]
    m["preset"] = preset.name
    m["mismatch_count"] = int((d > atol + rtol * ae).sum()) + nan_mismatch + inf_mismatch
    return m


def gen_compare_pairs() -> tuple[dict[str, torch.Tensor], dict[str, dict]]:
    pairs: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    f32, f64 = torch.float32, torch.float64

    rng = np.random.default_rng(101)
    e = rng.standard_normal(10_000)
    pairs["f64_small"] = (torch.from_numpy(e * (1.0 + 1e-9 * rng.standard_normal(10_000))),
                          torch.from_numpy(e))

    rng = np.random.default_rng(102)
    e = rng.standard_normal(4096).astype(np.float32)
    a = (e + np.float32(2e-6) * rng.standard_normal(4096).astype(np.float32)).astype(np.float32)
    pairs["f32_basic"] = (torch.from_numpy(a), torch.from_numpy(e))

    rng = np.random.default_rng(103)
    e = torch.from_numpy(rng.standard_normal(1024).astype(np.float32))
    pairs["bf16_vs_f32"] = (e.to(torch.bfloat16), e)

    rng = np.random.default_rng(104)
    e = torch.from_numpy(rng.standard_normal(1024) * 4.0).to(torch.float16)
    a = (e.to(f64) + torch.from_numpy(2e-3 * rng.standard_normal(1024))).to(torch.float16)
    pairs["f16_vs_f16"] = (a, e)

    rng = np.random.default_rng(105)
    e = rng.standard_normal(512).astype(np.float32)
    zero = rng.random(512) < 0.4
    e[zero] = 0.0
    a = (e * (1.0 + 1e-6 * rng.standard_normal(512))).astype(np.float32)
    nonzero_at_zero = zero & (rng.random(512) < 0.5)  # half of the zeros differ
    a[nonzero_at_zero] = (1e-7 * rng.standard_normal(int(nonzero_at_zero.sum()))).astype(np.float32)
    a[zero & ~nonzero_at_zero & (rng.random(512) < 0.5)] = -0.0  # -0 vs +0
    pairs["f32_zeros"] = (torch.from_numpy(a), torch.from_numpy(e))

    rng = np.random.default_rng(106)
    e = rng.standard_normal(256).astype(np.float32)
    a = (e + np.float32(1e-6) * rng.standard_normal(256).astype(np.float32)).astype(np.float32)
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    specials = [  # (index, actual, expected)
        (3, nan, nan), (17, nan, nan),            # NaN in both: matching
        (30, nan, None), (41, None, nan),         # NaN on one side only
        (50, inf, inf), (51, -inf, -inf),         # matching infinities
        (60, inf, -inf), (61, -inf, inf),         # +inf vs -inf
        (70, inf, None), (80, None, -inf),        # inf vs finite
        (90, nan, inf), (91, -inf, nan),          # NaN vs inf
    ]
    for idx, av, ev in specials:
        if av is not None:
            a[idx] = av
        if ev is not None:
            e[idx] = ev
    pairs["f32_nan_inf"] = (torch.from_numpy(a), torch.from_numpy(e))

    z = np.zeros(256, dtype=np.float32)
    az = z.copy()
    az[::7] = -0.0
    pairs["f32_all_zero"] = (torch.from_numpy(az), torch.from_numpy(z))

    rng = np.random.default_rng(108)
    pairs["f32_one_zero"] = (torch.from_numpy(rng.standard_normal(256).astype(np.float32)),
                             torch.zeros(256, dtype=f32))

    rng = np.random.default_rng(109)
    e = (rng.standard_normal(512) * 1e30).astype(np.float32)
    a = (e.astype(np.float64) * (1.0 + 1e-6 * rng.standard_normal(512))).astype(np.float32)
    pairs["f32_large"] = (torch.from_numpy(a), torch.from_numpy(e))

    rng = np.random.default_rng(110)
    e = torch.from_numpy(rng.standard_normal(1024).astype(np.float32))
    pairs["f8_e4m3_vs_f32"] = (e.to(torch.float8_e4m3fn), e)

    rng = np.random.default_rng(111)
    e = rng.standard_normal((64, 48)).astype(np.float32)
    a = (e + np.float32(1e-5) * rng.standard_normal((64, 48)).astype(np.float32)).astype(np.float32)
    a[5, 7] += np.float32(0.25)  # one clear outlier
    pairs["f32_2d"] = (torch.from_numpy(a), torch.from_numpy(e))

    tensors, metrics = {}, {}
    for name, (actual, expected) in pairs.items():
        assert actual.shape == expected.shape
        tensors[f"{name}.actual"] = actual.contiguous()
        tensors[f"{name}.expected"] = expected.contiguous()
        metrics[name] = compare_metrics(actual, expected)
    return tensors, metrics


# --------------------------------------------------------------------------


def write_safetensors(tensors: dict[str, torch.Tensor], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, metadata=ST_METADATA)
    return path


def main() -> None:
    assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"
    philox.self_test()
    written: list[Path] = []

    conv = gen_conversions()
    describe_conversion_behaviour()
    written.append(write_safetensors(conv, OUT_DIR / "conversions.safetensors"))
    print(f"conversions: N = {conv['f32_inputs'].numel()} f32 inputs, "
          f"M = {conv['f64_inputs'].numel()} f64 inputs")

    written.append(write_safetensors(gen_philox(), OUT_DIR / "philox.safetensors"))
    written.append(write_safetensors(gen_all_dtypes(), OUT_DIR / "st" / "all_dtypes.safetensors"))
    written.extend(gen_sharded(OUT_DIR / "st" / "sharded"))

    pair_tensors, metrics = gen_compare_pairs()
    written.append(write_safetensors(pair_tensors, OUT_DIR / "compare_pairs.safetensors"))
    metrics_path = OUT_DIR / "compare_metrics.json"
    with open(metrics_path, "w", encoding="utf-8", newline="\n") as handle:
        # json writes floats with repr(), i.e. shortest round-trip digits.
        handle.write(json.dumps(metrics, indent=2, sort_keys=True, allow_nan=False) + "\n")
    written.append(metrics_path)

    rel = [p.relative_to(GOLDEN_ROOT).as_posix() for p in written]
    update_manifest(GOLDEN_ROOT, rel, PRODUCER)
    total = 0
    for p in written:
        size = p.stat().st_size
        total += size
        print(f"  {p.relative_to(GOLDEN_ROOT).as_posix():55s} {size:9d} bytes")
    print(f"  total {total} bytes; manifest updated")


if __name__ == "__main__":
    main()
