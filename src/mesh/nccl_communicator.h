// The NCCL engine: collectives on CUDA device buffers. Built when HARNESS_HAVE_NCCL; without it
// every function here throws MeshError("this build has no NCCL").
#pragma once

#include <cstddef>
#include <memory>

#include "mesh/communicator.h"

namespace h0::mesh {

// A communicator over the same ranks as `bootstrap` (rank r of n there is rank r of n here), on
// CUDA device `device`, which becomes this thread's current device. Rank 0 makes the NCCL unique
// id and broadcasts it over `bootstrap` (collective over it). The communicator is non-blocking:
// every call waits for its stream at most `timeout_s` seconds, then aborts the communicator and
// throws MeshTimeout. NCCL reduces f16/bf16 natively; all_to_all is grouped send/recv.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device,
                                                     double timeout_s = 300);

// Device memory for the NCCL engine's buffers, on the current device (cudaMalloc / cudaFree /
// cudaMemcpy with the direction inferred, synchronous). Throw MeshError on a CUDA error.
void* nccl_device_alloc(size_t bytes);
void nccl_device_free(void* ptr);
void nccl_device_copy(void* dst, const void* src, size_t bytes);

}  // namespace h0::mesh
