#!/usr/bin/env bash
# Builds the harness and the cuda plugin (CUDA + NCCL, no MPI/OpenCL/tests) and assembles a
# self-contained bundle for a device machine that has the NVIDIA driver and CUDA libraries but
# no build tools: <bundle>/bin/harness, <bundle>/lib/libh0_cuda.so, every shared library ldd
# resolves for both except glibc's and CUDA's (libcudart, libcublas*, libnccl: the device's own
# are searched for there), the large ones gzipped to keep the bundle small enough to carry, and
# <bundle>/device_run.sh (tests/device/device_run.sh: the on-device run of the suites).
# Usage: tests/device/bundle.sh [bundle-dir]   (default <root>/.devbundle; keep it git-ignored)
# HARNESS_BUILD_DIR: the build tree (default <root>/build-device); JOBS: build parallelism.
# Then, on the device: bash .devbundle/device_run.sh (writes into $OUT; DEVRUN_CPU=1 tests it here).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bundle="${1:-$root/.devbundle}"
build="${HARNESS_BUILD_DIR:-$root/build-device}"
gz_over=$((1024 * 1024))   # libraries larger than this travel gzipped (the carried tree has a size limit)

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHARNESS_WITH_CUDA=ON \
    -DHARNESS_WITH_NCCL=ON -DHARNESS_WITH_MPI=OFF -DHARNESS_WITH_OPENCL=OFF \
    -DHARNESS_BUILD_TESTS=OFF
fi
cmake --build "$build" -j "${JOBS:-2}" --target harness h0_cuda

rm -rf "$bundle/bin" "$bundle/lib"
mkdir -p "$bundle/bin" "$bundle/lib"
cp "$build/bin/harness" "$bundle/bin/"
cp "$build/lib/libh0_cuda.so" "$bundle/lib/"
# glibc's own libraries and CUDA's stay behind.
skip='^(linux-vdso|ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia-.*)\.so'
ldd "$build/bin/harness" "$build/lib/libh0_cuda.so" | awk '/=> \//{print $1, $3}' | sort -u |
while read -r name path; do
  echo "$name" | grep -Eq "$skip" && continue
  if [ "$(stat -Lc %s "$path")" -gt "$gz_over" ]; then
    gzip -9 -c "$path" >"$bundle/lib/$name.gz"
  else
    cp -L "$path" "$bundle/lib/$name"
  fi
done
if ldd "$build/bin/harness" "$build/lib/libh0_cuda.so" | grep -q 'not found'; then
  echo "warning: unresolved libraries here:" >&2
  ldd "$build/bin/harness" "$build/lib/libh0_cuda.so" | grep 'not found' | sort -u >&2
fi
cp "$root/tests/device/device_run.sh" "$bundle/device_run.sh"
echo "bundle in $bundle: $(du -sh "$bundle" | cut -f1)"
ls -l "$bundle/bin" "$bundle/lib"
