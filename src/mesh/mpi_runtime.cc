#include "mesh/mpi_runtime.h"

#include <chrono>
#include <cstdlib>
#include <mutex>

namespace h0::mesh::mpi {
namespace {

using tensor::DType;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void initialize() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw MeshError("MPI is already finalized in this process");
  if (!initialized) {
    // Open MPI's non-blocking all_reduce picks a binomial tree (reduce, then broadcast) below 4
    // ranks and in place: 0.6-0.8x MPI_Allreduce's busbw (mesh_bench). The ring, as NCCL's,
    // reaches 1.2-1.7x. A value the user or mpirun set wins.
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      throw MeshError("MPI_Init_thread failed");
    }
    std::atexit(finalize_at_exit);
    if (provided < MPI_THREAD_FUNNELED)
      throw MeshError("MPI provides no MPI_THREAD_FUNNELED support");
  }
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler: ");
}

}  // namespace

void ensure_initialized() {
  static std::once_flag once;
  std::call_once(once, initialize);
}

void check(int rc, const std::string& prefix) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw MeshError(prefix +
                  (length > 0 ? std::string(text, length) : "MPI error " + std::to_string(rc)));
}

bool wait_all(MPI_Request* requests, int n, double timeout_s, int* error) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  *error = MPI_SUCCESS;
  for (unsigned polls = 1;; ++polls) {
    int done = 0;
    *error = MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
    if (*error != MPI_SUCCESS) return false;
    if (done) return true;
    if (timeout_s > 0 && polls % 64 == 0 && Clock::now() > deadline) return false;
  }
}

MPI_Datatype element_type(DType dtype) {
  switch (tensor::dtype_size(dtype)) {
    case 1:
      return MPI_UINT8_T;
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    default:
      return MPI_UINT64_T;
  }
}

MPI_Datatype reduce_type(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return MPI_DOUBLE;
    case DType::kI64:
      return MPI_INT64_T;
    case DType::kI32:
      return MPI_INT32_T;
    default:
      return MPI_FLOAT;  // f32, and f16/bf16 widened
  }
}

MPI_Op reduce_op(ReduceOp op) { return op == ReduceOp::kSum ? MPI_SUM : MPI_MAX; }

}  // namespace h0::mesh::mpi
