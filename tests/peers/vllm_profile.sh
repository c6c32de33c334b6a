#!/usr/bin/env bash
# The engine's own kernel profile against vLLM 0.32's CPU build (issue 48), run by hand: how many
# kernels a same-stack diff names when nothing changed. Starts `vllm serve` on tiny-llama (seed 0)
# with its torch profiler (--profiler-config), then RUNS times `harness run` of one served load
# (kind e2e_load: 16 requests, then the profiled fixed workload of 4) into one store, all labelled
# as one stack; then diffs every pair of runs one run a side, and the last two against the two
# before them with --runs 2. Prints, per diff, the engine kernels it named (regression or
# improvement) and the engine phases' calibration.
#
#   tests/peers/vllm_profile.sh [--venv DIR] [--runs N] [--engine-cpus LIST] [--harness-cpus LIST]
#                               [--stack NAME]
#
# --engine-cpus: the cores vLLM's OpenMP threads are bound to (VLLM_CPU_OMP_THREADS_BIND, default
# 0-1: both of this VM's cores, shared with the harness and vLLM's API server); --harness-cpus:
# taskset for the harness (default: any). E.g. --engine-cpus 0 --harness-cpus 1 gives the engine
# one thread on a core of its own. --stack: the runs' stack label (default "same"): two stores made
# with different settings and names, joined by `harness db merge`, diff as two stack versions.
# About 2 minutes to start, 1 minute a run, on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
harness="$root/build/bin/harness"
venv="$HOME/venvs/vllm"
runs=4
engine_cpus=0-1
harness_cpus=""
stack=same
while [ $# -gt 0 ]; do
  case "$1" in
    --venv) venv=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --engine-cpus) engine_cpus=$2; shift 2 ;;
    --harness-cpus) harness_cpus=$2; shift 2 ;;
    --stack) stack=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp -d /tmp/vllm-profile.XXXXXX)
model="$out/tiny-llama"
"$harness" model synth --model "$root/configs/models/tiny-llama" --out "$model" --seed 0 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
prof="$out/traces"
VLLM_CPU_OMP_THREADS_BIND=$engine_cpus "$root/../shared/peers/vllm_cpu.sh" "$venv" "$model" "$port" \
  --profiler-config "{\"profiler\": \"torch\", \"torch_profiler_dir\": \"$prof\"}" \
  >"$out/vllm.log" 2>&1 &
engine=$!
trap 'kill $engine 2>/dev/null; wait $engine 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
  kill -0 $engine 2>/dev/null || { echo "vLLM exited:"; grep -m1 ERROR "$out/vllm.log" || tail -5 "$out/vllm.log"; exit 1; }
  sleep 1
done
cat >"$out/platform.yaml" <<EOF
platform: vllm-cpu
backend: cpu
service:
  url: "http://127.0.0.1:$port"
  model: tiny-llama
  profiler: {dir: $prof}
EOF
cat >"$out/suite.yaml" <<EOF
suite: engine-profile
checks:
  - id: tiny-llama/load
    kind: e2e_load
    model: $model
    prompt: "The quick brown fox jumps over the lazy dog."
    max_tokens: 32
    requests: 16
    concurrency: 4
EOF
run_harness() { if [ -n "$harness_cpus" ]; then taskset -c "$harness_cpus" "$harness" "$@"; else "$harness" "$@"; fi; }
for i in $(seq "$runs"); do
  run_harness run "$out/suite.yaml" --platform "$out/platform.yaml" --db "$out/r.db" \
    --label "stack=$stack" -q >"$out/run$i.txt" 2>&1 || { echo "run $i failed:"; cat "$out/run$i.txt"; exit 1; }
  echo "run $i: $(tail -1 "$out/run$i.txt")"
done
cat >"$out/named.py" <<'EOF'
import json, sys
d = json.load(sys.stdin)
moved = ["%s %s %+.0f%%" % (p["phase"], p["name"], 100 * p["change"]) for p in d.get("performance", [])
         if "engine" in p.get("phase", "") and p["verdict"] in ("regression", "improvement", "appeared", "vanished")]
shifts = ["%s %+.0f%%" % (e["phase"], 100 * (e["calibration_change"] or 0)) for e in d.get("engine", [])]
print("%d named%s  (calibration %s)" % (len(moved), ": " + "; ".join(moved) if moved else "", ", ".join(shifts)))
EOF
named() { python3 "$out/named.py"; }  # the engine kernels a diff's JSON names, and its calibration
ids=$(sqlite3 "$out/r.db" "select id from runs order by id")
set -- $ids
for ((i = 1; i <= $#; ++i)); do
  for ((j = i + 1; j <= $#; ++j)); do
    echo "diff run ${!i} -> run ${!j}: $("$harness" diff --db "$out/r.db" --base "${!i}" --head "${!j}" --json | named)"
  done
done
if [ $# -ge 4 ]; then
  last=${!#}
  echo "diff --runs 2, head run $last: $("$harness" diff --db "$out/r.db" --base "$2" --head "$last" --runs 2 --json | named)"
fi
echo "store and traces: $out"
