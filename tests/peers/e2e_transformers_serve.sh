#!/usr/bin/env bash
# RUN BY HAND ONLY, NEVER BY CI: it needs `transformers serve` (pip install -r tests/peers/requirements.txt),
# starts a server process and takes minutes on a CPU.
#
# For each model directory (default: every tests/data/models/tiny-*) it
#   1. starts `transformers serve DIR --host 127.0.0.1 --port P --device cpu --dtype D` (loopback only,
#      bounded by `timeout`, stopped when the model is done and at exit, whatever happens);
#   2. (a) checks with curl that /health, /v1/models and /v1/chat/completions (plain and streamed) work;
#   3. runs tests/peers/probe_openai_server.py against golden/e2e/<name> (the golden requests, greedy,
#      texts compared; which extra fields it refuses) when that golden directory exists;
#   4. (b) if build/bin/harness exists: `harness day0 --model DIR --golden golden/e2e/<name> --platform P.yaml`
#      with a generated platform file (configs/platforms/cpu.yaml without its service:, plus a service:
#      whose url: is the running server, model: the served name, dialect: openai).
# Exit status: 0 when every step it ran passed, 1 otherwise, 77 when `transformers serve` is missing.
#
# Usage (from anywhere):
#   tests/peers/e2e_transformers_serve.sh [--dtype auto|float32|bfloat16] [--no-harness] [--no-probe]
#                                         [--out DIR] [--golden-root DIR] [MODEL_DIR ...]
#   --golden-root DIR: the goldens are DIR/<name> (default golden/e2e), e.g. gen_e2e.py --model's of a
#   checkpoint made by hand (tests/peers/tf5_new_families.py --tokenizer)
# Environment: PYTHON (default python3), TRANSFORMERS (the CLI, default: transformers next to PYTHON,
#   else on PATH), HARNESS (default build/bin/harness), STARTUP_TIMEOUT (s, default 180),
#   SERVE_TIMEOUT (s, the server's whole life per model, default 1800).
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
if [[ -z "${TRANSFORMERS:-}" ]]; then
  TRANSFORMERS="$(dirname "$(command -v "$PYTHON")")/transformers"
  [[ -x "$TRANSFORMERS" ]] || TRANSFORMERS="transformers"
fi
HARNESS="${HARNESS:-build/bin/harness}"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-180}"
SERVE_TIMEOUT="${SERVE_TIMEOUT:-1800}"
DTYPE="auto"
GOLDEN_ROOT="golden/e2e"
RUN_HARNESS=1
RUN_PROBE=1
OUT="${TMPDIR:-/tmp}/e2e_transformers_serve.$$"
MODELS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtype) DTYPE="$2"; shift 2 ;;
    --no-harness) RUN_HARNESS=0; shift ;;
    --no-probe) RUN_PROBE=0; shift ;;
    --out) OUT="$2"; shift 2 ;;
    --golden-root) GOLDEN_ROOT="$2"; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) MODELS+=("${1%/}"); shift ;;
  esac
done
if [[ ${#MODELS[@]} -eq 0 ]]; then
  for d in tests/data/models/tiny-*; do [[ -f "$d/config.json" ]] && MODELS+=("$d"); done
fi
mkdir -p "$OUT"

if ! "$TRANSFORMERS" serve --help >/dev/null 2>&1; then
  echo "SKIP: '$TRANSFORMERS serve' is not available (pip install -r tests/peers/requirements.txt)" >&2
  exit 77
fi

SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 20); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  SERVER_PID=""
}
trap stop_server EXIT
trap 'exit 130' INT TERM

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

FAILED=0
fail() { echo "  FAIL: $*"; FAILED=1; }

# curl a JSON POST; prints the HTTP status on the first line, then the body.
post() {  # url json
  curl -sS -m 300 -o "$OUT/body" -w '%{http_code}\n' -H 'Content-Type: application/json' -d "$2" "$1"
  cat "$OUT/body"
}

for MODEL in "${MODELS[@]}"; do
  NAME="$(basename "$MODEL")"
  PORT="$(free_port)"
  URL="http://127.0.0.1:$PORT"
  LOG="$OUT/$NAME.serve.log"
  echo "== $NAME: transformers serve $MODEL on $URL (dtype $DTYPE), log $LOG"
  # The server process itself is the timeout's child: `timeout` forwards our TERM to it.
  timeout -k 10 "$SERVE_TIMEOUT" "$TRANSFORMERS" serve "$MODEL" --host 127.0.0.1 --port "$PORT" \
    --device cpu --dtype "$DTYPE" --log-level info >"$LOG" 2>&1 &
  SERVER_PID=$!
  up=0
  for _ in $(seq 1 "$STARTUP_TIMEOUT"); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    if [[ "$(curl -s -m 2 "$URL/health")" == *'"ok"'* ]]; then up=1; break; fi
    sleep 1
  done
  if [[ $up -ne 1 ]]; then
    fail "$NAME: not healthy within ${STARTUP_TIMEOUT}s"; tail -20 "$LOG"; stop_server; continue
  fi
  echo "  /health: $(curl -s -m 5 "$URL/health")"
  echo "  /v1/models: $(curl -s -m 5 "$URL/v1/models")"

  # (a) chat completions, plain and streamed.  The served name is the directory exactly as passed.
  REQ="{\"model\": \"$MODEL\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello! Who are you?\"}], \"max_tokens\": 8, \"temperature\": 0, \"seed\": 0}"
  RESP="$(post "$URL/v1/chat/completions" "$REQ")"
  CODE="$(head -n1 <<<"$RESP")"; BODY="$(tail -n +2 <<<"$RESP")"
  if [[ "$CODE" == 200 ]] && "$PYTHON" -c 'import json,sys; j=json.loads(sys.argv[1]); c=j["choices"][0]; assert isinstance(c["message"]["content"], str) and c["finish_reason"] in ("stop","length"); print("  chat: 200, content", repr(c["message"]["content"]), "usage", j["usage"])' "$BODY"; then :
  else fail "$NAME: chat completion: HTTP $CODE $BODY"; fi
  SREQ="${REQ%\}}, \"stream\": true}"
  RESP="$(post "$URL/v1/chat/completions" "$SREQ")"
  CODE="$(head -n1 <<<"$RESP")"; BODY="$(tail -n +2 <<<"$RESP")"
  if [[ "$CODE" == 200 ]] && "$PYTHON" -c '
import json, sys
ev = [json.loads(l[6:]) for l in sys.argv[1].splitlines() if l.startswith("data: ") and l[6:] != "[DONE]"]
text = "".join(c["delta"].get("content") or "" for e in ev for c in e["choices"])
fin = [c["finish_reason"] for e in ev for c in e["choices"] if c.get("finish_reason")]
assert fin, "no finish_reason"
done = "data: [DONE]" in sys.argv[1]
print(f"  chat stream: 200, {len(ev)} events, text {text!r}, finish {fin[-1]}, [DONE] sent: {done}")
' "$BODY"; then :
  else fail "$NAME: streamed chat completion: HTTP $CODE ${BODY:0:300}"; fi

  # The golden requests, and what the server accepts.
  if [[ $RUN_PROBE -eq 1 && -d "$GOLDEN_ROOT/$NAME" ]]; then
    "$PYTHON" tests/peers/probe_openai_server.py --url "$URL" --model "$MODEL" --golden "$GOLDEN_ROOT/$NAME" \
      --json "$OUT/$NAME.probe.json" | sed 's/^/  /' || echo "  (probe: some golden texts differ; see $OUT/$NAME.probe.json)"
  fi

  # (b) the harness's day-0 run against this server.
  if [[ $RUN_HARNESS -eq 1 && -x "$HARNESS" ]]; then
    PLATFORM="$OUT/$NAME.platform.yaml"
    {
      echo "# Generated by tests/peers/e2e_transformers_serve.sh: configs/platforms/cpu.yaml with its"
      echo "# service: replaced by the transformers serve instance on $URL."
      sed '/^service:/,$d' configs/platforms/cpu.yaml | sed 's/^platform: .*/platform: cpu-transformers-serve/'
      echo "service:"
      echo "  url: \"$URL\""
      echo "  health: /health"
      echo "  model: \"$MODEL\""
      echo "  dialect: openai"
    } >"$PLATFORM"
    GOLDEN=()
    [[ -d "$GOLDEN_ROOT/$NAME" ]] && GOLDEN=(--golden "$GOLDEN_ROOT/$NAME")
    echo "  $HARNESS day0 --model $MODEL ${GOLDEN[*]} --platform $PLATFORM --out $OUT/$NAME.day0 --db $OUT/results.db"
    if "$HARNESS" day0 --model "$MODEL" "${GOLDEN[@]}" --platform "$PLATFORM" --out "$OUT/$NAME.day0" \
        --db "$OUT/results.db" \
        2>&1 | sed 's/^/    /'; then :
    else fail "$NAME: harness day0 failed (report: $OUT/$NAME.day0)"; fi
  elif [[ $RUN_HARNESS -eq 1 ]]; then
    echo "  ($HARNESS not built: the harness day0 step is skipped)"
  fi
  stop_server
done

[[ $FAILED -eq 0 ]] && echo "OK" || echo "FAILED"
exit $FAILED
