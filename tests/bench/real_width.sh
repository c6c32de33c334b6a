#!/usr/bin/env bash
# RUN BY HAND (minutes, GBs of disk and memory): the harness at a real model's width, stage by
# stage, with wall time and peak RSS against the checkpoint's bytes (issue "models at the width
# they ship"; target: peak RSS <= 1.3x the checkpoint, plus the KV cache the plan names).
#
# CHECKPOINT is a directory `harness model synth` wrote (tests/bench/synth_rss.sh --keep cuts a
# real config of tests/data/configs/ to 2 layers and keeps it). Each stage runs alone under
# /usr/bin/time -v:
#   plan      harness plan (the memory plan, no weights)
#   load      harness load (one rank's tensors, pread into owned memory)
#   run       harness model run --greedy 16 (the executor: prefill 32 tokens, decode, tokens/s)
#   serve     harness serve --kv-tokens 4096, one 16-token completion, then SIGINT
#   day0      harness day0 --keep-going --long 0 (op cases at the model's shapes, the service,
#             the performance stage; layer and model stages need goldens from a reference machine)
# Prints: stage, wall s, peak RSS GiB, RSS / checkpoint, and the stage's own figures.
#
# Usage: tests/bench/real_width.sh CHECKPOINT [STAGE...]
# Environment: HARNESS (default build/bin/harness), PORT (default 18765).
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HARNESS="${HARNESS:-$ROOT/build/bin/harness}"
PORT="${PORT:-18765}"
[[ $# -ge 1 ]] || { sed -n '2,20p' "$0"; exit 2; }
[[ "$1" == -h || "$1" == --help ]] && { sed -n '2,20p' "$0"; exit 0; }
CKPT="$1"; shift
STAGES=("$@")
[[ ${#STAGES[@]} -eq 0 ]] && STAGES=(plan load run serve day0)
[[ -d "$CKPT" ]] || { echo "no checkpoint directory $CKPT" >&2; exit 2; }
[[ -x "$HARNESS" ]] || { echo "$HARNESS is not built (harness/build)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
LOGS="$(mktemp -d)"
trap 'rm -rf "$LOGS"' EXIT
BYTES=$(du -cb "$CKPT"/*.safetensors | tail -n 1 | cut -f1)
printf 'checkpoint %s: %.2f GiB\n' "$CKPT" "$(echo "$BYTES / 2^30" | bc -l)"
printf '%-6s %8s %10s %9s  %s\n' stage wall_s peak_GiB rss/ckpt notes
report() {  # stage, time -v file, notes
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$2" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$2")
  printf '%-6s %8.1f %10.2f %9.2f  %s\n' "$1" "$wall" "$(echo "$rss / 2^20" | bc -l)" \
    "$(echo "$rss * 1024 / $BYTES" | bc -l)" "$3"
}
for STAGE in "${STAGES[@]}"; do
  OUT="$LOGS/$STAGE.out" TIME="$LOGS/$STAGE.time"
  case "$STAGE" in
    plan)
      /usr/bin/time -v "$HARNESS" plan --model "$CKPT" >"$OUT" 2>"$TIME"
      report plan "$TIME" "$(grep -m1 -i 'fits\|per rank' "$OUT" | cut -c1-80)" ;;
    load)
      /usr/bin/time -v "$HARNESS" load --model "$CKPT" --json >"$OUT" 2>"$TIME"
      report load "$TIME" "$(python3 - "$OUT" <<'PY' 2>/dev/null
import json, sys
j = json.load(open(sys.argv[1]))
print("%.2f GB/s" % j["ranks"][0]["gb_per_s"])
PY
)" ;;
    run)
      /usr/bin/time -v "$HARNESS" model run --model "$CKPT" --json --greedy 16 \
        --prompt-ids "$(seq -s, 3 7 220)" >"$OUT" 2>"$TIME"
      report run "$TIME" "$(python3 - "$OUT" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("prefill %.1f tok/s, decode %.2f tok/s" % (j["prefill_tokens_per_s"], j["decode_tokens_per_s"]))
PY
)" ;;
    serve)
      if [[ ! -f "$CKPT/tokenizer.json" ]]; then  # model synth writes weights and config only
        printf '%-6s %8s %10s %9s  %s\n' serve - - - "not run: no tokenizer.json in $CKPT (copy the model's own, or any tokenizer, beside the weights)"
        continue
      fi
      /usr/bin/time -v "$HARNESS" serve --model "$CKPT" --port "$PORT" --kv-tokens 4096 >"$OUT" 2>"$TIME" &
      PID=$!
      for _ in $(seq 600); do
        curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
        kill -0 "$PID" 2>/dev/null || break  # the server exited: its log says why
        sleep 1
      done
      START=$(date +%s.%N)
      curl -sf "http://127.0.0.1:$PORT/v1/completions" -H 'content-type: application/json' \
        -d '{"model": "'"$(basename "$CKPT")"'", "prompt": [1, 2, 3, 4, 5, 6, 7, 8], "max_tokens": 16, "temperature": 0}' \
        >"$LOGS/completion.json" || echo "the completion failed" >&2
      END=$(date +%s.%N)
      pkill -INT -P "$PID" 2>/dev/null; kill -INT "$PID" 2>/dev/null; wait "$PID" 2>/dev/null
      report serve "$TIME" "$(printf '16 tokens in %.1f s' "$(echo "$END - $START" | bc -l)")" ;;
    day0)
      /usr/bin/time -v "$HARNESS" day0 --model "$CKPT" --keep-going --long 0 --no-db --no-report \
        --json >"$OUT" 2>"$TIME"
      report day0 "$TIME" "$(python3 - "$OUT" <<'PY' 2>/dev/null
import json, sys
j = json.load(open(sys.argv[1]))
print("; ".join("%s %s" % (s["id"], s["status"]) for s in j["stages"]
                if s["id"] in ("load", "op_accuracy", "service", "performance")))
PY
)" ;;
    *) echo "unknown stage $STAGE (plan, load, run, serve, day0)" >&2; exit 2 ;;
  esac
done
