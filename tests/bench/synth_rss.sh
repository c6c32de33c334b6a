#!/usr/bin/env bash
# RUN BY HAND (minutes, GBs of disk): `harness model synth` at real widths, wall time and peak
# RSS against the checkpoint's bytes (issue "models at the width they ship"; the target is peak
# RSS <= 1 GB beyond the largest tensor: synthesis streams each tensor to disk in pieces).
#
# Each real config of tests/data/configs/ named below is cut to LAYERS decoder layers (default 2;
# DeepSeek-V3 and Kimi-K2 then hold one dense and one MoE layer, and no MTP layer) and synthesized, seed 0, one
# shard, under /usr/bin/time -v. Prints: config, layers, checkpoint bytes, largest tensor bytes,
# wall s, peak RSS, RSS / checkpoint.
#
# Usage: tests/bench/synth_rss.sh [--layers N] [--out DIR] [--keep] [CONFIG...]
#   CONFIG: a file stem of tests/data/configs/ (default qwen3-8b deepseek-v3).
# Environment: HARNESS (default build/bin/harness).
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HARNESS="${HARNESS:-$ROOT/build/bin/harness}"
LAYERS=2
OUT="${TMPDIR:-/tmp}/synth_rss.$$"
KEEP=0
NAMES=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --layers) LAYERS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
[[ ${#NAMES[@]} -eq 0 ]] && NAMES=(qwen3-8b deepseek-v3)
[[ -x "$HARNESS" ]] || { echo "$HARNESS is not built (harness/build)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
mkdir -p "$OUT"
printf '%-14s %6s %12s %12s %8s %12s %8s\n' config layers checkpoint largest wall_s peak_rss rss/ckpt
for NAME in "${NAMES[@]}"; do
  CONFIG="$ROOT/tests/data/configs/$NAME.json"
  [[ -f "$CONFIG" ]] || { echo "no $CONFIG" >&2; exit 2; }
  MODEL="$OUT/$NAME-config"
  mkdir -p "$MODEL"
  python3 - "$CONFIG" "$MODEL/config.json" "$LAYERS" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
text = c.get("text_config", c)
text["num_hidden_layers"] = int(sys.argv[3])
for key in ("layer_types", "mlp_layer_types"):  # per-layer lists follow the cut
    if isinstance(text.get(key), list):
        text[key] = text[key][: int(sys.argv[3])]
# DeepSeek-V3's first 3 layers are dense: keep the last one of the cut a MoE layer.
if text.get("first_k_dense_replace", 0) > int(sys.argv[3]) - 1:
    text["first_k_dense_replace"] = max(int(sys.argv[3]) - 1, 0)
# The multi-token-prediction layer (a whole MoE layer more in DeepSeek-V3 and Kimi-K2; loaded
# only for speculative decoding) is left out of a cut.
if text.get("num_nextn_predict_layers"):
    text["num_nextn_predict_layers"] = 0
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
  CKPT="$OUT/$NAME"
  rm -rf "$CKPT"
  /usr/bin/time -v "$HARNESS" model synth --model "$MODEL" --out "$CKPT" --seed 0 --shards 1 \
    >"$OUT/$NAME.log" 2>"$OUT/$NAME.time" || { tail -n 5 "$OUT/$NAME.log" "$OUT/$NAME.time"; continue; }
  python3 - "$CKPT/model.safetensors" "$OUT/$NAME.time" "$NAME" "$LAYERS" <<'PY'
import json, re, struct, sys
path, timing, name, layers = sys.argv[1:5]
with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
sizes = [v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__"]
total, largest = sum(sizes), max(sizes)
text = open(timing).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) * 1024
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
gib = lambda b: f"{b / 2**30:.2f} GiB"
print(f"{name:<14} {layers:>6} {gib(total):>12} {gib(largest):>12} {secs:8.1f} {gib(rss):>12} {rss / total:8.3f}")
PY
  [[ $KEEP == 1 ]] || rm -rf "$CKPT"
done
