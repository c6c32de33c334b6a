#!/usr/bin/env bash
# Device check with a prebuilt bundle (tests/device/bundle.sh makes it and copies this script
# into it; nothing is built on the device): the cuda plugin on suites ops/layers/model/image,
# then suites/mesh.yaml's collectives with `engine: nccl`, then suites/e2e.yaml (the embedded
# `harness serve` started per model by the platform's `service:` section).
# Writes into $OUT (at most 8 files come back): summary.txt, run.log, ops.json, suites.json
# (layers, model, image and e2e), mesh.json, results.db.
# Usage on the device: bash .devbundle/device_run.sh (from the repository root's copy).
# DEVRUN_CPU=1: test mode on a machine without GPU (configs/platforms/cpu.yaml, mesh engine default,
# CUDA libs taken from the system rather than searched for).
set -u
bundle="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$bundle/.." && pwd)"
out="${OUT:-$bundle/out}"
mkdir -p "$out"
log="$out/run.log"; sum="$out/summary.txt"
: >"$log"; : >"$sum"
say() { echo "$*" | tee -a "$sum" >>"$log"; }
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }

# The bundle's libs, openblas unpacked, in a scratch dir (the tree stays as it came).
lib=/tmp/devbundle-lib
rm -rf "$lib"; mkdir -p "$lib"
cp -a "$bundle"/lib/*.so* "$lib"/
rm -f "$lib"/*.gz
for g in "$bundle"/lib/*.gz; do
  [ -e "$g" ] || continue
  n=$(basename "$g" .gz)
  gzip -dc "$g" >"$lib/$n" || say "could not unpack $n"
done
bin="$bundle/bin/harness"
chmod +x "$bin" 2>/dev/null

# CUDA's libraries from the machine itself.
cudadirs=""
if [ "${DEVRUN_CPU:-0}" = 1 ]; then
  cudadirs=/usr/local/cuda/lib
else
  found=$(timeout 45 find / -xdev \( -name 'libcudart.so.13*' -o -name 'libcublas.so.13*' \
      -o -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null)
  echo "== found CUDA libs:" >>"$log"; echo "$found" >>"$log"
  for n in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    # Prefer the toolkit's /usr/local/cuda*, then anything else.
    d=$( (echo "$found" | grep "/$n\$" | grep '^/usr/local/cuda'; echo "$found" | grep "/$n\$") | head -n 1)
    [ -z "$d" ] && d=$( (echo "$found" | grep "/$n" | grep '^/usr/local/cuda'; echo "$found" | grep "/$n") | head -n 1)
    if [ -n "$d" ]; then
      d=$(dirname "$d")
      case ":$cudadirs:" in *":$d:"*) ;; *) cudadirs="${cudadirs:+$cudadirs:}$d" ;; esac
    else
      say "MISSING on device: $n"
    fi
  done
fi
export LD_LIBRARY_PATH="$lib:$cudadirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
{ echo "== ldconfig libcuda:"; ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvidia-ml' ;
  echo "== ldd harness:"; ldd "$bin"; echo "== ldd libh0_cuda.so:"; ldd "$lib/libh0_cuda.so"; } >>"$log" 2>&1
if ldd "$bin" "$lib/libh0_cuda.so" 2>&1 | grep -q 'not found'; then
  say "ldd: NOT FOUND libs:"; ldd "$bin" "$lib/libh0_cuda.so" 2>&1 | grep 'not found' | sort -u | tee -a "$sum" >>"$log"
fi
{ echo "== nvidia-smi:"; timeout 30 nvidia-smi; } >>"$log" 2>&1 || say "nvidia-smi failed"

cd "$root"
if [ "${DEVRUN_CPU:-0}" = 1 ]; then
  plat="$root/configs/platforms/cpu.yaml"
else
  plat=/tmp/devbundle-cuda.yaml
  sed "s|../../build/lib/libh0_cuda.so|$lib/libh0_cuda.so|" "$root/configs/platforms/cuda.yaml" >"$plat"
  grep -n 'lib:' "$plat" >>"$log"
fi
rc=0
tmpj=/tmp/devbundle-json; rm -rf "$tmpj"; mkdir -p "$tmpj"

runsuite() {  # name timeout suite-file json [extra args...]
  local name=$1 to=$2 file=$3 json=$4; shift 4
  echo "== [$(el)] suite $name: timeout $to harness run $file $*" >>"$log"
  timeout -k 10 "$to" "$bin" run "$file" "$@" --json "$json" --db "$out/results.db" >>"$log" 2>&1
  local s=$?
  tail -n 1 "$log" >>"$sum"
  say "[$(el)] $name suite exit status: $s$( [ $s = 124 ] && echo ' (TIMEOUT)')"
  [ $s -ne 0 ] && rc=$s
  return 0
}

runsuite ops "${T_OPS:-140}" suites/ops.yaml "$out/ops.json" --platform "$plat"
if [ -f "$out/ops.json" ] && command -v python3 >/dev/null; then
  python3 "$root/tests/bench/op_timings.py" "$out/ops.json" >>"$sum" 2>&1 || say "op_timings.py failed"
fi
for s in layers model image; do
  runsuite "$s" "${T_SUITE:-50}" "suites/$s.yaml" "$tmpj/$s.json" --platform "$plat"
done
# Collectives over a single-GPU NCCL communicator.
mesh=/tmp/devbundle-mesh.yaml
if [ "${DEVRUN_CPU:-0}" = 1 ]; then cp suites/mesh.yaml "$mesh"
else sed 's/^defaults:$/defaults:\n  engine: nccl/' suites/mesh.yaml >"$mesh"; fi
grep -n -A1 '^defaults:' "$mesh" >>"$log"
runsuite mesh "${T_MESH:-80}" "$mesh" "$out/mesh.json" --filter 'collective/*'

# The service end to end: `{harness}` in the platform's service start is this binary
# (/proc/self/exe) and `{platform}` the generated file above, which stays in place until the end;
# the server children inherit LD_LIBRARY_PATH.
runsuite e2e "${T_E2E:-200}" suites/e2e.yaml "$tmpj/e2e.json" --platform "$plat"

# Merge the small suites' JSON into one file; summarize failures and busbw.
python3 - "$tmpj" "$out" >>"$sum" 2>&1 <<'EOF' || { cp "$tmpj"/*.json "$out"/ 2>/dev/null; say "merge failed"; }
import json, os, sys
tmpj, out = sys.argv[1], sys.argv[2]
merged = {}
for s in ("layers", "model", "image", "e2e"):
    p = os.path.join(tmpj, s + ".json")
    if os.path.exists(p):
        merged[s] = json.load(open(p))
json.dump(merged, open(os.path.join(out, "suites.json"), "w"))
def report(name, run):
    cases = run.get("cases", [])
    print(f"== {name}: {len(cases)} cases, counts {run.get('counts')}")
    for c in cases:
        st = c.get("status")
        if st not in ("pass", "PASS"):
            msg = c.get("message") or c.get("details", {}).get("message") or ""
            print(f"  {st} {c.get('id') or c.get('case')}: {str(msg)[:300]}")
for s, run in merged.items():
    report(s, run)
if "e2e" in merged:
    print("e2e per case: status, duration, metrics")
    for c in merged["e2e"].get("cases", []):
        m = c.get("metrics") or {}
        ms = ", ".join(f"{k}={round(v, 3) if isinstance(v, float) else v}" for k, v in list(m.items())[:14])
        print(f"  {c.get('id') or c.get('case')} {c.get('status')} {c.get('duration_ms', c.get('time_ms', ''))}: {ms}")
p = os.path.join(out, "mesh.json")
if os.path.exists(p):
    run = json.load(open(p)); report("mesh", run)
    print("mesh per case: largest size: time_us (in place), algbw, busbw, max busbw over sizes, wrong_total")
    for c in run.get("cases", []):
        d = c.get("details") or {}
        m = c.get("metrics") or {}
        sz = d.get("sizes") or [{}]
        last = sz[-1]
        mx = max((x.get("busbw_gbps", 0) or 0) for x in sz) if sz else 0
        alg = m.get("algbw_gbps@" + str(last.get("size")), "?")
        extra = {k: v for k, v in d.items() if k != "sizes"}
        print(f"  {c.get('id')} {c.get('status')}: {last.get('size')} t={last.get('time_us')} ({last.get('time_us_in_place')}) us "
              f"algbw={alg} busbw={last.get('busbw_gbps')} maxbusbw={mx} wrong={m.get('wrong_total')} {extra if extra else ''}")
EOF
say "[$(el)] done, rc=$rc"
exit $rc
