#!/usr/bin/env python3
"""Reference values for the timing statistics of harness diff / ab / history (src/diff/statistics.h).

Usage:  python3 golden/tools/gen_timing_stats.py [--root REPO_ROOT]

Writes golden/diff/timing_statistics.json from scipy (version pinned in requirements.txt,
recorded in golden/manifest.json):
  welch     scipy.stats.ttest_ind(x, y, equal_var=False): t, df, p (two-sided)
  paired    scipy.stats.ttest_rel(a, b): t, df, p (the one-sample test of a - b)
  t_sf      2 * scipy.stats.t.sf(|t|, df): the two-sided tail
  mwu_exact scipy.stats.mannwhitneyu(x, y, method="exact").pvalue (two-sided), unbalanced sizes
The samples are per-run medians in the shapes the harness tests them in: 3 or 4 runs a side,
log-scaled times, one side shifted.  The unit test tests/diff/timing_statistics_test.cc reads it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.stats

from manifest import write_rows_json

PRODUCER = "golden/tools/gen_timing_stats.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    golden = Path(args.root) / "golden"
    rs = np.random.RandomState(7)
    out: dict = {"welch": [], "paired": [], "t_sf": [], "mwu_exact": []}
    for n1, n2, shift, sd in [(3, 3, 0.0, 0.02), (3, 3, 0.1, 0.02), (4, 4, 0.3, 0.05),
                              (2, 5, 0.05, 0.01), (10, 3, -0.2, 0.1), (6, 6, 0.0, 1.0)]:
        x = np.log(1e6) + rs.normal(0, sd, n1)
        y = np.log(1e6) + shift + rs.normal(0, sd, n2)
        r = scipy.stats.ttest_ind(x, y, equal_var=False)
        out["welch"].append({"x": x.tolist(), "y": y.tolist(), "t": float(r.statistic),
                             "df": float(r.df), "p": float(r.pvalue)})
    for n, shift, sd in [(4, 0.0, 0.02), (4, 0.1, 0.02), (2, 0.3, 0.1), (8, -0.05, 0.05)]:
        a = rs.normal(0, sd, n) + shift
        b = rs.normal(0, sd, n)
        r = scipy.stats.ttest_rel(a, b)
        out["paired"].append({"a": a.tolist(), "b": b.tolist(), "t": float(r.statistic),
                              "df": float(r.df), "p": float(r.pvalue)})
    for t, df in [(0.0, 3.0), (1.0, 1.0), (2.5, 3.0), (-4.2, 2.7), (10.0, 6.0), (0.3, 100.0),
                  (30.0, 4.0)]:
        out["t_sf"].append({"t": t, "df": df, "p": float(2 * scipy.stats.t.sf(abs(t), df))})
    for x, y in [([1, 2, 3], [4, 5, 6, 7]), (list(range(36)), [100, 101, 102, 103]),
                 ([0.5, 3.5, 9.0], [1, 2, 4, 5, 6, 7, 8]),
                 ([float(v) for v in range(20)], [7.5, 30.0, 31.0, 32.0, 33.0])]:
        p = scipy.stats.mannwhitneyu(x, y, method="exact").pvalue
        out["mwu_exact"].append({"x": [float(v) for v in x], "y": [float(v) for v in y],
                                 "p": float(p)})
    path = write_rows_json(golden, "diff/timing_statistics.json", out, PRODUCER)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
