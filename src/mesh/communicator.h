// The mesh's one communication interface (DESIGN.md: mesh/). Engines: MPI for host tensors
// (the CPU mesh, and the bootstrap everywhere), NCCL for CUDA device tensors (unique id
// broadcast over MPI), and `single` (size 1, no library). A rank that fails, exits or stops
// answering makes the others' collectives throw MeshError within the timeout instead of hang.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

#include "tensor/dtype.h"

namespace h0::mesh {

// The mesh failed: a peer died, a collective timed out, the library returned an error. The
// message names the operation, this rank and what it waited for.
class MeshError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A collective did not complete within the communicator's timeout (a peer died or hangs). The
// communicator is unusable afterwards: every later call throws MeshError.
class MeshTimeout : public MeshError {
 public:
  using MeshError::MeshError;
};

enum class ReduceOp { kSum, kMax };

// Where this process sits among its peers, from the launcher's environment: mpirun
// (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK), srun (SLURM_PROCID/NTASKS/LOCALID) or torchrun-style
// RANK/WORLD_SIZE/LOCAL_RANK; otherwise rank 0 of 1.
struct RankEnv {
  int rank = 0, size = 1, local_rank = 0;
  std::string launcher = "none";  // "mpirun", "srun", "torchrun", "none"
};
RankEnv detect_rank_env();

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string engine() const = 0;  // "mpi", "nccl", "single"
  // How long one collective waits for its peers before it throws MeshTimeout (--mesh-timeout;
  // 0: no bound, a single process).
  virtual double timeout_s() const { return 0; }

  // Element counts are per buffer; `send == recv` is in place. Buffers are host memory for the
  // MPI and single engines, device memory for NCCL. Floating dtypes f64/f32/f16/bf16 and
  // integers i64/i32 are supported (f16/bf16 are reduced in f32 and rounded once by the MPI
  // and single engines; NCCL reduces them natively). Data movement takes every dtype.
  // In place, as in NCCL: all_gather with send == recv + rank() * count, reduce_scatter with
  // recv == send + rank() * count; other overlaps are also accepted (staged through a copy).
  virtual void all_reduce(const void* send, void* recv, size_t count, tensor::DType dtype,
                          ReduceOp op) = 0;
  // recv holds size() blocks of `count`, block r from rank r.
  virtual void all_gather(const void* send, void* recv, size_t count, tensor::DType dtype) = 0;
  // send holds size() blocks of `count`; recv gets the reduction of block rank() over ranks.
  virtual void reduce_scatter(const void* send, void* recv, size_t count, tensor::DType dtype,
                              ReduceOp op) = 0;
  // send block r (of `count`) goes to rank r; recv block r came from rank r.
  virtual void all_to_all(const void* send, void* recv, size_t count, tensor::DType dtype) = 0;
  virtual void broadcast(void* buf, size_t count, tensor::DType dtype, int root) = 0;
  virtual void send(const void* buf, size_t count, tensor::DType dtype, int peer) = 0;
  virtual void recv(void* buf, size_t count, tensor::DType dtype, int peer) = 0;
  // Sends `send` to rank `dst` while receiving `recv` from rank `src` (a ring step, a pipeline
  // hand-off); either may be this rank. The default orders send() and recv() by rank parity,
  // which is deadlock-free for rings; engines override it with one concurrent exchange.
  virtual void send_recv(const void* send, int dst, void* recv, int src, size_t count,
                         tensor::DType dtype);
  virtual void barrier() = 0;
  // The ranks with the same `color`, ordered by `key` (MPI_Comm_split). Collective over this
  // communicator.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
};

// Size 1: every collective is a copy. Always available.
std::unique_ptr<Communicator> make_single_communicator();
// MPI_COMM_WORLD (MPI initialized on first use, finalized at exit). Collectives fail with
// MeshError after `timeout_s` seconds without completing. Throws MeshError when the build has
// no MPI (HARNESS_HAVE_MPI=0).
std::unique_ptr<Communicator> make_mpi_communicator(double timeout_s = 300);
// The world communicator for this process: MPI when launched by a launcher with size > 1,
// else single.
std::unique_ptr<Communicator> make_world_communicator(double timeout_s = 300);

}  // namespace h0::mesh
