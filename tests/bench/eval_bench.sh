#!/usr/bin/env bash
# Items/s of a 200-item generate task (kind: eval) on harness serve (cpu, tiny-llama) at
# num_concurrent 1 and 8, and their ratio, measured in the same run; repeated (default 3).
#   tests/bench/eval_bench.sh [REPEATS]
# The task: suites/tasks/arithmetic.jsonl's items taken twice over (new ids) up to 200, with its
# header (3-shot prompts, max_tokens 12, stop at a newline). Needs a build (harness/build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
repeats="${1:-3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/task.jsonl" <<'PY'
import json, sys
lines = open("suites/tasks/arithmetic.jsonl").read().splitlines()
header = [l for l in lines if l.startswith("#")]
items = [json.loads(l) for l in lines if l and not l.startswith("#")]
out, k = [], 0
while len(out) < 203:  # 3 few-shot items + 200 scored
    it = dict(items[k % len(items)]); it["id"] = f"{it['id']}-{k // len(items)}"; out.append(it); k += 1
open(sys.argv[1], "w").write("\n".join(header + [json.dumps(i) for i in out]) + "\n")
PY
for nc in 1 8; do
  cat > "$tmp/nc$nc.yaml" <<YAML
suite: eval-bench
checks:
  - id: generate-200-nc$nc
    kind: eval
    model: configs/models/tiny-llama
    task: $tmp/task.jsonl
    num_concurrent: $nc
    gate: {min_score: 0.0}
YAML
done
rate() {  # items/s of one run
  build/bin/harness run "$1" --db "$tmp/store.db" -q --json "$tmp/out.json" >/dev/null
  python3 -c "import json; c = json.load(open('$tmp/out.json'))['cases'][0]; assert c['status'] == 'pass', c['message']; print(c['metrics']['items_per_s'])"
}
echo "run  items/s nc=1  items/s nc=8  ratio"
for i in $(seq 1 "$repeats"); do
  one="$(rate "$tmp/nc1.yaml")"
  eight="$(rate "$tmp/nc8.yaml")"
  python3 -c "print(f'$i    {$one:12.1f}  {$eight:12.1f}  {$eight / $one:5.2f}')"
done
