#!/usr/bin/env bash
# The opencl plugin's kernels on PoCL: per op, the steady-state time and the first call's extra
# time (the JIT: the program build and PoCL's per-kernel compile at first launch), from the
# ops suite's op checks. Runs with an empty PoCL kernel cache (so the JIT is cold), in one
# process (isolation: none, so each dtype's program is built once, by its first case), then
# summarizes with op_timings.py.
#   tests/bench/opencl_bench.sh [FILTER]     (default: the f32 and bf16 cases, no *large*)
# Env: HARNESS_BUILD_DIR (default build/), OUT (default a temporary directory).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${HARNESS_BUILD_DIR:-$root/build}"
out="${OUT:-$(mktemp -d)}"
filter="${1:-*f32*:*bf16*:-*large*}"
mkdir -p "$out/pocl-cache"
sed -e "s|../../build/lib/libh0_opencl.so|$build/lib/libh0_opencl.so|" -e "s|isolation: process|isolation: none|" \
  "$root/configs/platforms/opencl-pocl.yaml" >"$out/opencl-pocl.yaml"
cd "$root"
POCL_CACHE_DIR="$out/pocl-cache" HARNESS_LOG_LEVEL=1 "$build/bin/harness" run suites/ops.yaml -q \
  --platform "$out/opencl-pocl.yaml" --filter "$filter" --db "$out/bench.db" --json "$out/bench.json" \
  2>"$out/log.txt" || true
grep "built the kernels" "$out/log.txt" || true
python3 "$root/tests/bench/op_timings.py" "$out/bench.json"
