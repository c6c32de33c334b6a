#!/usr/bin/env bash
# The device check of the cuda plugin, for a machine with an NVIDIA GPU (never run by CI):
# builds the harness and the plugin with CUDA, runs the ops, layers, model and image suites on
# configs/platforms/cuda.yaml, then tests/device/nccl_check.sh (collectives over NCCL, 1 GPU),
# and writes into $OUT (or ./device-out): results.json (harness run --json), results.db,
# run.txt (the terminal output), summary.txt (counts by status and route, the slowest cases,
# every case that did not pass), and the build and nvidia-smi logs. Sized for under 5 minutes
# on one H200 (most of it the build). Exit status: the run's (0 = every case passed).
# Without build tools on the device: tests/device/bundle.sh builds here and packs a bundle whose
# device_run.sh (tests/device/device_run.sh) runs these suites, the NCCL collectives and e2e.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$PWD/device-out}"
build="${HARNESS_BUILD_DIR:-$root/build-device}"
mkdir -p "$out"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >>"$out/nvidia-smi.txt"

echo "configuring and building into $build" | tee "$out/summary.txt"
if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHARNESS_WITH_CUDA=ON \
      -DHARNESS_WITH_MPI=OFF -DHARNESS_WITH_OPENCL=OFF -DHARNESS_WITH_NCCL=OFF \
      -DHARNESS_BUILD_TESTS=OFF >"$out/configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$(nproc)" --target harness h0_cuda >"$out/build.log" 2>&1; then
  echo "build failed: see configure.log / build.log" | tee -a "$out/summary.txt"
  tail -n 30 "$out/configure.log" "$out/build.log" 2>/dev/null | tee -a "$out/summary.txt"
  exit 2
fi

# configs/platforms/cuda.yaml with its plugin path pointed at this build.
sed "s|../../build/lib/libh0_cuda.so|$build/lib/libh0_cuda.so|" "$root/configs/platforms/cuda.yaml" >"$out/cuda.yaml"
cd "$root"
set +e
timeout 200 "$build/bin/harness" run suites/ops.yaml --platform "$out/cuda.yaml" \
  --json "$out/results.json" --db "$out/results.db" >"$out/run.txt" 2>&1
rc=$?
set -e
echo "harness run exit status: $rc" | tee -a "$out/summary.txt"
tail -n 5 "$out/run.txt" | tee -a "$out/summary.txt"
if command -v python3 >/dev/null && [ -f "$out/results.json" ]; then
  python3 "$root/tests/bench/op_timings.py" "$out/results.json" | tee -a "$out/summary.txt"
fi
# The tiny models layer by layer, whole, and through the image path, on the GPU's kernels.
set +e
for suite in layers model image; do
  timeout 120 "$build/bin/harness" run "suites/$suite.yaml" --platform "$out/cuda.yaml" \
    --json "$out/$suite.json" --db "$out/results.db" >"$out/$suite.txt" 2>&1
  src=$?
  echo "$suite suite exit status: $src" | tee -a "$out/summary.txt"
  tail -n 1 "$out/$suite.txt" | tee -a "$out/summary.txt"
  [ "$src" -ne 0 ] && rc=$src
done
set -e
# fp8 and MXFP4 weights dequantized on the device at real checkpoints' shapes.
set +e
timeout 180 "$build/bin/harness" run tests/device/quant_real_shapes.yaml --platform "$out/cuda.yaml" \
  --json "$out/quant.json" --db "$out/results.db" >"$out/quant.txt" 2>&1
src=$?
set -e
echo "quant real-shapes suite exit status: $src" | tee -a "$out/summary.txt"
tail -n 1 "$out/quant.txt" | tee -a "$out/summary.txt"
[ "$src" -ne 0 ] && rc=$src
# The collective checks over a single-GPU NCCL communicator (its own build, with NCCL).
OUT="$out/nccl" bash "$root/tests/device/nccl_check.sh" || rc=$?
exit "$rc"
