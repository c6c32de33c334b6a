#!/usr/bin/env bash
# False alarms and detection of each timing method on this machine. A timed suite (3 ops, 12
# repeats) runs on the faulty plugin; each comparison uses a fresh store:
#   pairwise  one run a side, `harness diff` (Mann-Whitney over the samples, > 5%)
#   runs3     three runs a side, base then head (a nightly's last 3 nights), `harness diff --runs 3`
#             (Welch's t test of the calibrated run medians, beyond the base side's run spread)
#   ab4       `harness ab --rounds 4` (ABBA interleaved, paired t test of the rounds)
# For each method: N same-stack comparisons (any timing regression is a false alarm), and N with
# `linear` slowed by the plugin's slow fault at 1.1x and 1.3x (flagged: `linear` is a timing
# regression). Prints one line per method and condition.
# Usage: tests/bench/false_alarms.sh [N] [METHODS] [HARNESS_BIN] [PLUGIN]
#   METHODS: a comma list of pairwise, runs3, ab4 (default all three)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
n="${1:-20}"
methods="${2:-pairwise,runs3,ab4}"
harness="${3:-$root/build/bin/harness}"
plugin="${4:-$root/build/lib/libh0_faulty.so}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$root/tests/bench/timed_suite.sh"
write_timed_suite "$work" "$plugin"
for f in 1.1 1.3; do
  printf 'platform: box\nbackend: {lib: %s, options: {op: linear, fault: slow, factor: %s}}\n' \
    "$plugin" "$f" > "$work/slow$f.yaml"
done

run() {  # run DB PLATFORM -> prints the stored run id
  "$harness" run "$work/timed.yaml" -q --platform "$2" --db "$1" | sed -n 's/^stored as run \([0-9]*\) in .*/\1/p'
}

# compare METHOD HEAD_PLATFORM -> the diff's text in $work/out.txt; returns diff's exit code
compare() {
  local db="$work/c.db" rc=0 b h
  rm -f "$db" "$db-wal" "$db-shm"
  case "$1" in
    pairwise)
      b=$(run "$db" "$work/good.yaml"); h=$(run "$db" "$2")
      "$harness" diff --db "$db" --base "$b" --head "$h" > "$work/out.txt" || rc=$? ;;
    runs3)
      for _ in 1 2 3; do b=$(run "$db" "$work/good.yaml"); done
      for _ in 1 2 3; do h=$(run "$db" "$2"); done
      "$harness" diff --db "$db" --base "$b" --head "$h" --runs 3 > "$work/out.txt" || rc=$? ;;
    ab4)
      "$harness" ab --db "$db" --base "$work/good.yaml" --head "$2" --suite "$work/timed.yaml" \
        --rounds 4 > "$work/out.txt" 2> /dev/null || rc=$? ;;
  esac
  return "$rc"
}

IFS=, read -ra list <<< "$methods"
for m in "${list[@]}"; do
  alarms=0
  for ((i = 1; i <= n; i++)); do
    if ! compare "$m" "$work/good.yaml"; then
      alarms=$((alarms + 1))
      grep -E "^  (slower|faster)" "$work/out.txt" | sed "s/^/$m same-stack $i: /" || true
    fi
  done
  echo "$m: $alarms false alarms in $n same-stack comparisons"
  for f in 1.1 1.3; do
    flagged=0
    for ((i = 1; i <= n; i++)); do
      compare "$m" "$work/slow$f.yaml" || true
      grep -qE "^  slower  linear " "$work/out.txt" && flagged=$((flagged + 1))
    done
    echo "$m: linear slowed ${f}x flagged in $flagged of $n"
  done
done
