#!/usr/bin/env bash
# False alarms of the rounding-bias rule (compare/tolerance.h) on clean platforms, and what it
# catches on the faulty plugin's `truncate` fault. The op suite runs once per seed of the
# synthesized inputs (suites/ops.yaml's default `inputs: {seed: 7}` replaced). For each platform
# and seed: the cases the bias
# rule judged (a float output of 16 bits or fewer), and those it flagged. Cases against golden
# files compare with the reference kernels instead (the goldens were made from seed 7's inputs;
# the reference kernels are checked against them by the shipped suite).
# Usage: tests/bench/bias_false_alarms.sh [SEEDS] [PLATFORMS] [HARNESS_BIN] [PLUGIN]
#   PLATFORMS: a comma list of platform files (default cpu and reference); the word `truncate`
#   stands for the faulty plugin with {op: "*", fault: truncate}.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seeds="${1:-10}"
platforms="${2:-configs/platforms/cpu.yaml,configs/platforms/reference.yaml}"
harness="${3:-$root/build/bin/harness}"
plugin="${4:-$root/build/lib/libh0_faulty.so}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf 'platform: faulty-truncate\nbackend: {lib: %s, options: {op: "*", fault: truncate}}\n' \
  "$plugin" > "$work/truncate.yaml"
cd "$root"
IFS=',' read -r -a list <<< "$platforms"
for platform in "${list[@]}"; do
  [[ "$platform" == truncate ]] && platform="$work/truncate.yaml"
  flagged_total=0 judged_total=0
  for ((seed = 1; seed <= seeds; ++seed)); do
    sed -E "s/^  inputs: \{seed: 7\}$/  inputs: {seed: $((seed * 1000 + 7))}/;
            s#golden: golden/ops/[^ ]+#golden: reference#" suites/ops.yaml > "$work/ops.yaml"
    "$harness" run "$work/ops.yaml" -q --no-db --platform "$platform" --json "$work/run.json" \
      > /dev/null || true
    read -r judged flagged < <(python3 - "$work/run.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
judged = flagged = 0
for c in run["cases"]:
    outputs = c["details"].get("outputs", []) if isinstance(c["details"], dict) else []
    narrow = any(o.get("dtype") in ("bf16", "f16", "f8_e4m3", "f8_e5m2") for o in outputs
                 if isinstance(o, dict))
    judged += narrow
    flagged += "rounding bias" in c["message"]
    if c["status"] not in ("pass", "xfail", "skip"):
        print(c["id"], c["status"], c["message"][:200], file=sys.stderr)
print(judged, flagged)
PY
)
    judged_total=$((judged_total + judged)) flagged_total=$((flagged_total + flagged))
    printf '%s seed %d: %d cases with a 16-bit-or-narrower output, %d flagged as biased\n' \
      "$(basename "$platform")" "$seed" "$judged" "$flagged"
  done
  printf '%s: %d of %d judged cases flagged over %d seeds\n' "$(basename "$platform")" \
    "$flagged_total" "$judged_total" "$seeds"
done
