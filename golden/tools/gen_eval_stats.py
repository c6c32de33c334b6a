#!/usr/bin/env python3
"""Reference values for the task-accuracy gate's statistics (src/diff/statistics.h).

Usage:  python3 golden/tools/gen_eval_stats.py [--root REPO_ROOT]

Writes golden/eval/statistics.json from independent implementations (versions pinned in
requirements.txt, recorded in golden/manifest.json):
  wilson     statsmodels.stats.proportion.proportion_confint(k, n, alpha, method="wilson")
  mcnemar    statsmodels.stats.contingency_tables.mcnemar([[a, b], [c, d]], exact=True).pvalue
  ztest      statsmodels.stats.proportion.proportions_ztest([x1, x2], [n1, n2]) p-value
  quantile   scipy.stats.norm.ppf(p)
  bootstrap  the paired bootstrap of mean(head - ref): numpy's legacy RandomState(seed)
             .randint(0, n, size=(B, n)) index draws and numpy.percentile (linear), which the
             harness reproduces draw for draw; and scipy.stats.bootstrap's percentile interval
             of the same data (its own Generator stream), which the harness must agree with to
             within the Monte-Carlo error only.
The unit test tests/diff/statistics_test.cc reads this file.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint, proportions_ztest

from manifest import write_rows_json

PRODUCER = "golden/tools/gen_eval_stats.py"


def paired_items(n: int, p_ref: float, flips_down: int, flips_up: int, seed: int):
    """0/1 outcomes of a reference and a head that differs on flips_down + flips_up items."""
    rs = np.random.RandomState(seed)
    ref = (rs.random_sample(n) < p_ref).astype(int)
    head = ref.copy()
    right = np.flatnonzero(ref == 1)
    wrong = np.flatnonzero(ref == 0)
    head[right[:flips_down]] = 0
    head[wrong[:flips_up]] = 1
    return head, ref


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    golden = Path(args.root) / "golden"

    out: dict = {"wilson": [], "mcnemar": [], "ztest": [], "quantile": [], "bootstrap": []}
    for k, n, alpha in [(0, 20, 0.05), (7, 20, 0.05), (20, 20, 0.05), (150, 200, 0.05),
                        (1, 1000, 0.05), (93, 200, 0.1), (0, 200, 0.1), (5, 7, 0.01)]:
        lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
        out["wilson"].append({"k": k, "n": n, "alpha": alpha, "lo": float(lo), "hi": float(hi)})
    for b, c in [(0, 0), (0, 1), (0, 8), (3, 10), (12, 12), (40, 25), (1, 30), (100, 130)]:
        p = mcnemar([[50, b], [c, 50]], exact=True).pvalue
        out["mcnemar"].append({"b": b, "c": c, "p": float(p)})
    for x1, n1, x2, n2 in [(100, 200, 92, 200), (10, 20, 15, 20), (0, 50, 3, 50),
                           (180, 200, 150, 200)]:
        _, p = proportions_ztest([x1, x2], [n1, n2])
        out["ztest"].append({"x1": x1, "n1": n1, "x2": x2, "n2": n2, "p": float(p)})
    for p in [1e-10, 0.001, 0.025, 0.05, 0.3, 0.5, 0.9, 0.975, 0.999999]:
        out["quantile"].append({"p": p, "x": float(scipy.stats.norm.ppf(p))})
    for n, p_ref, down, up, seed, resamples, alpha in [(200, 0.5, 8, 0, 1234, 2000, 0.05),
                                                      (200, 0.3, 6, 6, 7, 2000, 0.05),
                                                      (37, 0.6, 2, 1, 99, 5000, 0.1)]:
        head, ref = paired_items(n, p_ref, down, up, seed)
        diff = head - ref
        idx = np.random.RandomState(seed).randint(0, n, size=(resamples, n))
        deltas = diff[idx].mean(axis=1)
        lo, hi = np.percentile(deltas, [100 * alpha / 2, 100 * (1 - alpha / 2)])
        sp = scipy.stats.bootstrap((diff,), np.mean, n_resamples=20000, confidence_level=1 - alpha,
                                   method="percentile", rng=np.random.default_rng(seed))
        out["bootstrap"].append({
            "head": head.tolist(), "ref": ref.tolist(), "seed": seed, "resamples": resamples,
            "alpha": alpha, "lo": float(lo), "hi": float(hi),
            "scipy_lo": float(sp.confidence_interval.low),
            "scipy_hi": float(sp.confidence_interval.high)})

    path = write_rows_json(golden, "eval/statistics.json", out, PRODUCER)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
