#!/usr/bin/env python3
"""Summarizes a `harness run --json` file of op checks: counts by status and route, then per op
and route the steady-state median over its cases, and the largest first-call excess over steady
(for a JIT backend, the compile paid by the op's first case), and every case that did not pass.

usage: op_timings.py results.json [--cases]   (--cases: one line per case too)
"""
import json
import statistics
import sys
from collections import Counter, defaultdict


def phase(case, name):
    """The case's profile row `name` (first_call, steady), median in ms; None if absent."""
    for row in case.get("profile", []):
        if row["phase"] == name and isinstance(row["median_ns"], (int, float)):
            return row["median_ns"] / 1e6
    return None


def op_of(case):
    """The op a case ran: its profile rows are named "<op>[<dims>]"."""
    for row in case.get("profile", []):
        if row["phase"] == "steady":
            return row["name"].split("[")[0]
    return case["check"]


def main(path, per_case):
    run = json.load(open(path))
    cases = run["cases"]
    print(f"platform {run['run']['platform']}: {len(cases)} cases, "
          + ", ".join(f"{k} {v}" for k, v in sorted(run["counts"].items())))
    print("stack:", json.dumps(run.get("stack", {}).get("versions", {}).get("backend", {})))
    routes = Counter(c.get("details", {}).get("route", "?") for c in cases)
    print("routes:", ", ".join(f"{k} {v}" for k, v in sorted(routes.items())))
    by_op = defaultdict(list)
    for c in cases:
        first, steady = phase(c, "first_call"), phase(c, "steady")
        if first is None or steady is None:
            continue
        op = op_of(c)
        route = c.get("details", {}).get("route", "?")
        by_op[(op, route)].append((first, steady, c["id"]))
        if per_case:
            print(f"  {c['id']:<60} {route:<7} first {first:9.2f} ms  steady {steady:9.3f} ms")
    # The op's first case in a process pays the JIT (program build, per-kernel compile); its
    # other cases find the kernels compiled. So: the largest first-call excess over steady.
    print(f"\n{'op':<16} {'route':<7} {'cases':>5} {'steady ms (median)':>19} "
          f"{'first call ms (max)':>20} {'JIT ms (max first - its steady)':>32}")
    for (op, route), rows in sorted(by_op.items()):
        steady = statistics.median(r[1] for r in rows)
        worst = max(rows, key=lambda r: r[0] - r[1])
        print(f"{op:<16} {route:<7} {len(rows):>5} {steady:>19.3f} {worst[0]:>20.2f} {worst[0] - worst[1]:>32.2f}")
    bad = [c for c in cases if c["status"] not in ("pass", "skip", "xfail")]
    if bad:
        print(f"\n{len(bad)} cases did not pass:")
        for c in bad:
            print(f"  {c['id']}: {c['status']}: {c['message'][:300]}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], "--cases" in sys.argv[2:])
