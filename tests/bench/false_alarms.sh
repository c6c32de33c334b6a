#!/usr/bin/env bash
# How often `harness diff` calls a regression between two runs of the same stack: runs the timed
# suite of tests/harness/cli_store_test.cc in PAIRS pairs (default 10) on the faulty plugin with
# no fault, diffs each pair with the default rule (change > 5% and Mann-Whitney p < 0.05), and
# prints the number of pairs with a false alarm and the rows that caused them.
# Usage: tests/bench/false_alarms.sh [PAIRS] [HARNESS_BIN] [PLUGIN]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
pairs="${1:-10}"
harness="${2:-$root/build/bin/harness}"
plugin="${3:-$root/build/lib/libh0_faulty.so}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/timed.yaml" <<'YAML'
suite: timed
defaults: {golden: reference, warmup: 2, repeats: 12, inputs: {seed: 5}}
checks:
  - {id: linear, kind: op, op: linear, shape: [16, 512, 256]}
  - {id: matmul, kind: op, op: matmul, shape: [16, 512, 256]}
  - {id: patch_embed, kind: op, op: patch_embed, shape: [3, 56, 56, 64], attrs: {patch: 14}}
YAML
printf 'platform: faulty\nbackend: {lib: %s, options: {fault: none}}\n' "$plugin" > "$work/good.yaml"
alarms=0
for ((i = 1; i <= pairs; i++)); do
  for _ in 1 2; do "$harness" run "$work/timed.yaml" -q --platform "$work/good.yaml" --db "$work/r.db" > /dev/null; done
  if ! out=$("$harness" diff --db "$work/r.db" --base latest~1 --head latest); then
    alarms=$((alarms + 1))
    echo "$out" | grep -E "^  (slower|faster)" | sed "s/^/pair $i: /"
  fi
done
echo "false alarms: $alarms of $pairs pairs"
