#!/usr/bin/env bash
# RUN BY HAND ONLY, NEVER BY CI: it builds llama.cpp from source (llama-cpp-python's sdist from PyPI,
# ~15 minutes on 2 cores, once per VENV) and serves a model with it.
#
# llama.cpp's server as a second real engine, the shape of vllm_day0.sh, for one model (default
# configs/models/tiny-llama):
#   1. installs llama-cpp-python[server] from its PyPI sdist into --venv (built from source), and the
#      gguf package of the same sdist (vendor/llama.cpp/gguf-py) into --converter-venv, the Python
#      of golden/tools/requirements.txt (torch, transformers: convert_hf_to_gguf.py imports them);
#   2. synthesizes the checkpoint when the directory holds only a config (harness model synth
#      --seed 0, the weights of the goldens) and converts it with llama.cpp's own
#      convert_hf_to_gguf.py (--outtype f32). Its BPE pre-tokenizer table knows tokenizers by a
#      hash of their ids, which a tiny vocabulary never matches: when tokenizer.json's split regex
#      is Llama 3's exactly, the conversion is told so ("llama-bpe"), else it stops with its words;
#   3. serves the GGUF (`python -m llama_cpp.server`, loopback, a free port, stopped at exit) and
#      runs against it `harness run suites/e2e.yaml` and `suites/eval.yaml` (the model's cases) and
#      `harness day0 --keep-going --golden golden/e2e/<name>`; prints each stage and each case.
# Usage: tests/peers/llamacpp_day0.sh [--venv DIR] [--converter-venv DIR] [--out DIR] [MODEL_DIR]
# Environment: HARNESS (default build/bin/harness), STARTUP_TIMEOUT (s, default 120).
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HARNESS="${HARNESS:-build/bin/harness}"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-120}"
VENV="$HOME/venvs/llamacpp"
CONVERTER="$HOME/venvs/gold"
OUT="${TMPDIR:-/tmp}/llamacpp_day0.$$"
MODEL=configs/models/tiny-llama
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) VENV="$2"; shift 2 ;;
    --converter-venv) CONVERTER="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) MODEL="${1%/}"; shift ;;
  esac
done
[[ -x "$HARNESS" ]] || { echo "$HARNESS is not built (harness/build)" >&2; exit 2; }
mkdir -p "$OUT"
NAME="$(basename "$MODEL")"

# 1. llama-cpp-python (server) and the converter's gguf package, from the same sdist.
SDIST_DIR="$OUT/sdist"
if ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" download -q --no-deps --no-binary :all: -d "$SDIST_DIR" llama-cpp-python
  "$VENV/bin/pip" install -q "$(ls "$SDIST_DIR"/llama_cpp_python-*.tar.gz)[server]"
fi
ls "$SDIST_DIR"/llama_cpp_python-*.tar.gz >/dev/null 2>&1 ||
  "$VENV/bin/pip" download -q --no-deps --no-binary :all: -d "$SDIST_DIR" \
    "llama-cpp-python==$("$VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)')"
SRC="$OUT/src"
mkdir -p "$SRC" && tar xzf "$(ls "$SDIST_DIR"/llama_cpp_python-*.tar.gz | head -n1)" -C "$SRC"
LLAMA_CPP="$(ls -d "$SRC"/llama_cpp_python-*/vendor/llama.cpp)"
# The converter tries a SentencePiece vocabulary first and needs the module to find there is none.
"$CONVERTER/bin/python" -c "import gguf, sentencepiece" 2>/dev/null ||
  "$CONVERTER/bin/pip" install -q "$LLAMA_CPP/gguf-py" sentencepiece
echo "llama-cpp-python $("$VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)'), llama.cpp $LLAMA_CPP"

# 2. The checkpoint, converted by llama.cpp.
DIR="$MODEL"
if ! ls "$MODEL"/*.safetensors >/dev/null 2>&1; then
  DIR="$OUT/ckpt/$NAME"
  "$HARNESS" model synth --model "$MODEL" --out "$DIR" --seed 0 --shards 1 >/dev/null || exit 1
fi
GGUF="$OUT/$NAME-f32.gguf"
"$CONVERTER/bin/python" - "$LLAMA_CPP" "$DIR" "$GGUF" <<'PY' || { echo "convert_hf_to_gguf.py failed"; exit 1; }
import json, sys
llama_cpp, model, out = sys.argv[1:4]
sys.path.insert(0, llama_cpp)
import convert_hf_to_gguf as c

LLAMA3_SPLIT = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
pre = json.load(open(f"{model}/tokenizer.json"))["pre_tokenizer"]
splits = [p["pattern"]["Regex"] for p in pre.get("pretokenizers", [pre]) if p.get("type") == "Split"]
if splits == [LLAMA3_SPLIT]:
    print("the tokenizer's split regex is Llama 3's: converting with pre-tokenizer llama-bpe")
    text_model = getattr(c, "TextModel", None)  # where the converter keeps it varies by version
    if text_model is None:
        from conversion.base import TextModel as text_model
    text_model.get_vocab_base_pre = lambda self, tokenizer: "llama-bpe"
sys.argv = ["convert_hf_to_gguf.py", model, "--outfile", out, "--outtype", "f32"]
c.main()
PY

# 3. Serve it and run the harness against it.
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT"
LOG="$OUT/$NAME.llamacpp.log"
setsid timeout -k 10 1800 "$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$NAME" \
  --host 127.0.0.1 --port "$PORT" --n_ctx 2048 --n_threads 2 --seed 0 >"$LOG" 2>&1 &
SERVER_PID=$!
trap 'kill -TERM -- "-$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null' EXIT
up=0
for _ in $(seq 1 "$STARTUP_TIMEOUT"); do
  kill -0 "$SERVER_PID" 2>/dev/null || break
  curl -sf -m 2 "$URL/v1/models" >/dev/null && { up=1; break; }
  sleep 1
done
[[ $up -eq 1 ]] || { echo "llama.cpp's server did not start:"; tail -n 5 "$LOG"; exit 1; }
echo "== $NAME: llama.cpp server on $URL, log $LOG"
PLATFORM="$OUT/$NAME.platform.yaml"
{
  echo "# Generated by tests/peers/llamacpp_day0.sh: configs/platforms/cpu.yaml, service: llama.cpp at $URL."
  sed '/^service:/,$d' configs/platforms/cpu.yaml | sed 's/^platform: .*/platform: cpu-llamacpp/'
  echo "service:"
  echo "  url: \"$URL\""
  echo "  health: /v1/models"
  echo "  model: \"$NAME\""
} >"$PLATFORM"
"$HARNESS" run suites/e2e.yaml --filter "$NAME/*" --platform "$PLATFORM" --no-db \
  --json "$OUT/$NAME.e2e.json" 2>&1 | sed 's/^/  e2e: /'
"$HARNESS" run suites/eval.yaml --filter "$NAME/*" --platform "$PLATFORM" --no-db \
  --json "$OUT/$NAME.eval.json" 2>&1 | sed 's/^/  eval: /'
GOLDEN=()
[[ -d "golden/e2e/$NAME" ]] && GOLDEN=(--golden "golden/e2e/$NAME")
"$HARNESS" day0 --model "$MODEL" "${GOLDEN[@]}" --platform "$PLATFORM" --keep-going \
  --out "$OUT/$NAME.day0" --db "$OUT/results.db" 2>&1 | sed 's/^/  day0: /'
echo "details under $OUT"
