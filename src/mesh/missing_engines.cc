// The engines this build lacks: their factories exist and fail with a clear MeshError.
#include "mesh/communicator.h"
#include "mesh/nccl_communicator.h"

namespace h0::mesh {

#if !HARNESS_HAVE_MPI
std::unique_ptr<Communicator> make_mpi_communicator(double) {
  throw MeshError("this build has no MPI");
}
#endif

#if !HARNESS_HAVE_NCCL
std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, int, double) {
  throw MeshError("this build has no NCCL");
}
void* nccl_device_alloc(size_t) { throw MeshError("this build has no NCCL"); }
void nccl_device_free(void*) {}
void nccl_device_copy(void*, const void*, size_t) { throw MeshError("this build has no NCCL"); }
#endif

}  // namespace h0::mesh
