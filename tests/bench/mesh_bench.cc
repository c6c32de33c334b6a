// The mesh's all_reduce (the MPI engine: MPI_Iallreduce polled against a deadline) beside
// MPI_Allreduce timed directly in the same run, f32 sum over 8B..64MiB. Run under mpirun
// (mesh_bench.sh). Prints one row per size: time, busbw (nccl-tests: algbw * 2(n-1)/n) of both,
// and ours / MPI's busbw; the target is >= 0.9 at every size from 64KiB up. Exit status 0.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "mesh/communicator.h"

namespace {

using h0::mesh::Communicator;

// Median over `trials` of the slowest rank's mean time (s) of `iters` calls after a barrier.
double time_calls(Communicator& c, int iters, int trials, const std::function<void()>& call) {
  std::vector<double> t;
  for (int k = 0; k < trials; ++k) {
    call();  // warm
    c.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) call();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    c.all_reduce(&s, &s, 1, h0::tensor::DType::kF64, h0::mesh::ReduceOp::kMax);
    t.push_back(s);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const size_t max_bytes = argc > 1 ? std::stoull(argv[1]) : size_t{64} << 20;
  auto comm = h0::mesh::make_mpi_communicator(120);
  const int n = comm->size();
  const double factor = 2.0 * (n - 1) / n;
  if (comm->rank() == 0) {
    std::printf("all_reduce f32 sum, %d ranks\n%10s %12s %12s %12s %12s %7s\n", n, "size",
                "ours_us", "mpi_us", "ours_busbw", "mpi_busbw", "ratio");
  }
  std::vector<float> send(max_bytes / 4, 1.f), recv(max_bytes / 4);
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
    const size_t count = bytes / 4;
    const int iters =
        static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / (bytes * 8), 5, 2000));
    const double ours = time_calls(*comm, iters, 5, [&] {
      comm->all_reduce(send.data(), recv.data(), count, h0::tensor::DType::kF32,
                       h0::mesh::ReduceOp::kSum);
    });
    const double mpi = time_calls(*comm, iters, 5, [&] {
      MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    });
    const double ours_bw = bytes / ours / 1e9 * factor, mpi_bw = bytes / mpi / 1e9 * factor;
    if (comm->rank() == 0) {
      std::printf("%10zu %12.2f %12.2f %12.3f %12.3f %7.2f\n", bytes, ours * 1e6, mpi * 1e6,
                  ours_bw, mpi_bw, mpi / ours);
    }
  }
  return 0;
}
