#!/usr/bin/env bash
# `harness profile import` of a large engine trace against Python's json.load of the same file:
# wall time and peak memory (max RSS from /usr/bin/time). The trace is the committed PyTorch
# profiler trace (tests/data/traces/torch_cpu_tiny_mistral_run1.json.gz) with its events repeated,
# shifted in time, until the JSON holds SIZE_MB megabytes (plain, not gzipped: json.load reads
# text; a .gz copy is timed by the harness too). The harness parses the file twice (steps, then
# kernels) as a SAX stream; json.load builds the whole document.
# Usage: tests/bench/trace_import.sh [SIZE_MB (200)] [REPEATS (3)] [HARNESS_BIN]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
size_mb="${1:-200}"
repeats="${2:-3}"
harness="${3:-$root/build/bin/harness}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$root/tests/data/traces/torch_cpu_tiny_mistral_run1.json.gz" "$work/big.json" "$size_mb" <<'EOF'
import gzip, json, sys
src, out, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = json.load(gzip.open(src))
events = [e for e in t["traceEvents"] if e.get("ph") == "X"]
meta = [e for e in t["traceEvents"] if e.get("ph") != "X"]
span = max(e["ts"] + e.get("dur", 0) for e in events) - min(e["ts"] for e in events) + 1000
with open(out, "w") as f:
    f.write('{"schemaVersion":1,"traceEvents":[')
    f.write(",".join(json.dumps(e, separators=(",", ":")) for e in meta))
    copy = 0
    while f.tell() < size_mb * 1_000_000:
        shift = copy * span
        f.write("," + ",".join(json.dumps({**e, "ts": e["ts"] + shift}, separators=(",", ":"))
                              for e in events))
        copy += 1
    f.write("]}")
print(f"{out}: {copy} copies of {len(events)} events")
EOF
gzip -k -1 "$work/big.json"
ls -l "$work"/big.json "$work"/big.json.gz | awk '{print $5, $9}'
measure() {  # label, command...: "label wall_s max_rss_kb"
  local label="$1"; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null
  echo "$label $(cat "$work/time")"
}
for ((i = 1; i <= repeats; ++i)); do
  measure harness "$harness" profile import "$work/big.json" --db "$work/r$i.db"
  measure harness_gz "$harness" profile import "$work/big.json.gz" --db "$work/g$i.db"
  measure python_json_load python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$work/big.json"
done | awk '{ t[$1] = t[$1] " " $2; m[$1] = m[$1] " " int($3 / 1024) }
            END { for (k in t) printf "%-17s wall s:%s   max RSS MiB:%s\n", k, t[k], m[k] }' | sort
