#!/usr/bin/env bash
# False alarms and detection delay of the nightly timing verdict (`harness history --exit-code`:
# E-Divisive change points over each timed case's history, reported the night the newest run
# makes them detectable), on this machine. The timed suite of tests/bench/false_alarms.sh runs
# once a "night" into a fresh store:
#   same stack: NIGHTS nights of the faulty plugin with no fault; from night 8 on, every night's
#     verdict is checked; a night that fails is a false alarm;
#   injected: for each FACTOR (1.1, 1.3), 12 clean nights, then 8 nights of `linear` slowed by the
#     plugin's slow fault; reports the first night after the change whose verdict failed on
#     `linear` (detection delay), and any other failing night (false alarms).
# Usage: tests/bench/change_points.sh [NIGHTS] [HARNESS_BIN] [PLUGIN]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
nights="${1:-30}"
harness="${2:-$root/build/bin/harness}"
plugin="${3:-$root/build/lib/libh0_faulty.so}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$root/tests/bench/timed_suite.sh"
write_timed_suite "$work" "$plugin"

night() {  # night DB PLATFORM LABEL -> the verdict's exit code; the history text in $work/h.txt
  "$harness" run "$work/timed.yaml" -q --platform "$2" --db "$1" --label "stack=$3" > /dev/null
  local rc=0
  "$harness" history --db "$1" --exit-code > "$work/h.txt" || rc=$?
  return "$rc"
}

alarms=0 checked=0
for ((n = 1; n <= nights; n++)); do
  rc=0; night "$work/same.db" "$work/good.yaml" "v1" || rc=$?
  [ "$n" -lt 8 ] && continue
  checked=$((checked + 1))
  if [ "$rc" -ne 0 ]; then
    alarms=$((alarms + 1))
    grep "NEW" "$work/h.txt" | sed "s/^/night $n: /"
  fi
done
echo "same stack: $alarms false alarms in $checked nights"

for factor in 1.1 1.3; do
  printf 'platform: box\nbackend: {lib: %s, options: {op: linear, fault: slow, factor: %s}}\n' \
    "$plugin" "$factor" > "$work/slow.yaml"
  db="$work/slow-$factor.db" detected="" false=0
  for ((n = 1; n <= 20; n++)); do
    platform="$work/good.yaml" label=v1
    [ "$n" -gt 12 ] && platform="$work/slow.yaml" label=v2
    rc=0; night "$db" "$platform" "$label" || rc=$?
    [ "$n" -lt 8 ] || [ "$rc" -eq 0 ] && continue
    if [ "$n" -gt 12 ] && grep -q "slower  box  linear .*NEW" "$work/h.txt"; then
      [ -z "$detected" ] && detected=$((n - 12))
    else
      false=$((false + 1))
      grep "NEW" "$work/h.txt" | sed "s/^/factor $factor night $n: /"
    fi
  done
  echo "slow x$factor from night 13: detected on night ${detected:-never} after the change" \
       "(of 8), $false other failing nights"
done
