#!/usr/bin/env bash
# Runs mesh_bench (the mesh's all_reduce beside MPI_Allreduce) under mpirun.
# Usage: tests/bench/mesh_bench.sh [ranks (default 2)] [max bytes (default 64MiB)]
# The build directory is $HARNESS_BUILD_DIR, else ./build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${HARNESS_BUILD_DIR:-$root/build}"
bench="$build/bin/mesh_bench"
if [ ! -x "$bench" ]; then
  echo "mesh_bench.sh: $bench not built (cmake --build $build --target mesh_bench; needs MPI)" >&2
  exit 2
fi
exec mpirun --allow-run-as-root --oversubscribe -np "${1:-2}" "$bench" "${2:-67108864}"
