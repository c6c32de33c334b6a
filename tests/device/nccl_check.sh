#!/usr/bin/env bash
# The device check of the mesh's nccl engine, for a machine with an NVIDIA GPU and NCCL (never
# run by CI): builds the harness with CUDA and NCCL, runs suites/mesh.yaml's collective cases
# with `engine: nccl` at world size 1 (device buffers through NCCL's own kernels: every data
# path, the in-place layouts, f16/bf16 reduced by NCCL; busbw of all_reduce, all_gather,
# reduce_scatter and all_to_all is 0 at one rank by nccl-tests' factors), and writes into $OUT
# (or ./device-out): results.json, results.db, run.txt, summary.txt, the build logs and
# nvidia-smi. Sized for a few minutes on one GPU (most of it the build). Exit status: the run's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$PWD/device-out}"
build="${HARNESS_BUILD_DIR:-$root/build-nccl}"
mkdir -p "$out"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >>"$out/nvidia-smi.txt"

echo "configuring and building into $build" | tee "$out/summary.txt"
if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHARNESS_WITH_CUDA=ON -DHARNESS_WITH_NCCL=ON \
      -DHARNESS_WITH_OPENCL=OFF -DHARNESS_BUILD_TESTS=OFF >"$out/configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$(nproc)" --target harness >"$out/build.log" 2>&1; then
  echo "build failed: see configure.log / build.log" | tee -a "$out/summary.txt"
  tail -n 30 "$out/configure.log" "$out/build.log" 2>/dev/null | tee -a "$out/summary.txt"
  exit 2
fi

# suites/mesh.yaml with `engine: nccl` among its defaults (only collective cases take it).
sed 's/^defaults:$/defaults:\n  engine: nccl/' "$root/suites/mesh.yaml" >"$out/mesh-nccl.yaml"
cd "$root"
set +e
timeout 300 "$build/bin/harness" run "$out/mesh-nccl.yaml" --filter 'collective/*' \
  --json "$out/results.json" --db "$out/results.db" >"$out/run.txt" 2>&1
rc=$?
set -e
echo "harness run exit status: $rc" | tee -a "$out/summary.txt"
tail -n 5 "$out/run.txt" | tee -a "$out/summary.txt"
grep -Ev '^\[[0-9]+/[0-9]+\] PASS' "$out/run.txt" | head -n 40 >>"$out/summary.txt" || true
exit "$rc"
