#!/usr/bin/env python3
"""Reference values for the rounding-bias statistics of the one-pass metrics (src/compare/metrics.h).

Usage:  python3 golden/tools/gen_bias_stats.py [--root REPO_ROOT]

Writes golden/compare/bias_statistics.json from numpy alone (version pinned in requirements.txt,
recorded in golden/manifest.json).  Each row holds an output dtype, `actual` values exactly
representable in it, `expected` values (float64), and the statistics the harness must compute:

  u = clip((a - e) / ulp(e), -2, 2) over the positions where both are finite and e != 0, with
  ulp(e) = 2^(max(floor(log2|e|), emin) - mantissa) of the output dtype (np.frexp gives the
  exponent), and
  bias_ulp = mean(u), magnitude_bias_ulp = mean(sign(e) u), bias_rel = mean((a - e) / |e|),
  and the sample standard deviations of u and sign(e) u (ddof 1).

The outputs are made by rounding float64 values the way a kernel would: bf16 and f16 round to
nearest even (bf16 by its bit pattern, f16 by numpy's float16), truncation toward zero, rounding
half away from zero at exact ties, and rounding upward.  The unit test
tests/compare/bias_statistics_test.cc reads the file.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from manifest import write_rows_json

PRODUCER = "golden/tools/gen_bias_stats.py"
FORMATS = {"bf16": (7, -126), "f16": (10, -14), "f8_e4m3": (3, -6)}  # outputs of 16 bits or fewer


def bf16_round(x: np.ndarray, mode: str) -> np.ndarray:
    """float64 -> bfloat16 values (returned as float64) via float32's bit pattern."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if mode == "nearest_even":
        bits = bits + 0x7FFF + ((bits >> 16) & 1)
    elif mode == "half_away":
        bits = bits + 0x8000
    bits = (bits >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def f16_round(x: np.ndarray, mode: str) -> np.ndarray:
    """float64 -> float16 values (as float64): numpy's round to nearest even, else toward zero
    or upward by stepping the nearest value one float16 ULP where it went the wrong way."""
    near = x.astype(np.float16)
    if mode == "nearest_even":
        return near.astype(np.float64)
    if mode == "toward_zero":
        over = np.abs(near.astype(np.float64)) > np.abs(x)
        return np.where(over, np.nextafter(near, np.float16(0)), near).astype(np.float64)
    if mode == "upward":
        under = near.astype(np.float64) < x
        return np.where(under, np.nextafter(near, np.float16(np.inf)), near).astype(np.float64)
    raise ValueError(mode)


def stats(dtype: str, a: np.ndarray, e: np.ndarray) -> dict:
    mantissa, emin = FORMATS[dtype]
    keep = np.isfinite(a) & np.isfinite(e) & (e != 0)
    a, e = a[keep], e[keep]
    _, exp = np.frexp(e)  # e = m 2^exp, 0.5 <= |m| < 1: floor(log2|e|) = exp - 1
    ulp = np.ldexp(1.0, np.maximum(exp - 1, emin) - mantissa)
    u = np.clip((a - e) / ulp, -2.0, 2.0)
    m = np.sign(e) * u
    n = int(u.size)
    return {"bias_count": n,
            "bias_ulp": float(u.mean()) if n else 0.0,
            "magnitude_bias_ulp": float(m.mean()) if n else 0.0,
            "bias_rel": float(((a - e) / np.abs(e)).mean()) if n else 0.0,
            "bias_sd_ulp": float(u.std(ddof=1)) if n > 1 else 0.0,
            "magnitude_bias_sd_ulp": float(m.std(ddof=1)) if n > 1 else 0.0}


def json_values(v: np.ndarray) -> list:
    """JSON has no NaN or infinity: those are the strings "nan", "inf", "-inf"."""
    return [float(x) if np.isfinite(x) else ("nan" if np.isnan(x) else ("inf" if x > 0 else "-inf"))
            for x in v]


def row(name: str, dtype: str, a: np.ndarray, e: np.ndarray) -> dict:
    r = {"name": name, "dtype": dtype, "actual": json_values(a), "expected": json_values(e)}
    r.update(stats(dtype, a, e))
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    golden = Path(args.root) / "golden"
    rs = np.random.RandomState(11)
    rows = []
    x = rs.normal(0, 3, 256)
    for mode in ("nearest_even", "toward_zero"):
        rounded = bf16_round(x, mode) if mode == "nearest_even" else bf16_round(x, "toward_zero")
        rows.append(row(f"bf16 {mode} vs exact", "bf16", rounded, x))
    # Against a golden already rounded to nearest even (as a bf16 golden file is).
    rows.append(row("bf16 toward_zero vs bf16 golden", "bf16", bf16_round(x, "toward_zero"),
                    bf16_round(x, "nearest_even")))
    ties = bf16_round(rs.uniform(1, 2, 64), "toward_zero") + 2.0 ** -8  # exactly half an ULP up
    ties = np.concatenate([ties, -ties])
    rows.append(row("bf16 half_away at ties", "bf16", bf16_round(ties, "half_away"), ties))
    rows.append(row("bf16 nearest_even at ties", "bf16", bf16_round(ties, "nearest_even"), ties))
    y = rs.uniform(-4, 4, 200)
    for mode in ("nearest_even", "toward_zero", "upward"):
        rows.append(row(f"f16 {mode} vs exact", "f16", f16_round(y, mode), y))
    # Outliers clip to 2 ULP; zeros in the golden and NaN/Inf positions do not count.
    z = rs.normal(0, 1, 40)
    za = bf16_round(z, "nearest_even")
    za[3] = bf16_round(np.array([za[3] + 1000.0]), "nearest_even")[0]
    za[5] = np.nan
    z[7] = 0.0
    za[7] = 0.0
    za[9] = np.inf
    rows.append(row("bf16 with an outlier, a zero, NaN and Inf", "bf16", za, z))
    # Subnormal range of f8_e4m3 (below 2^-6 the ULP stays 2^-9): one ULP high everywhere.
    small = np.array([3, 5, 7, 9, 11, 13, 2, 6], dtype=np.float64) * 2.0 ** -9
    rows.append(row("f8_e4m3 subnormals one ULP up", "f8_e4m3", small + 2.0 ** -9, small))
    path = write_rows_json(golden, "compare/bias_statistics.json", {"cases": rows}, PRODUCER)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
