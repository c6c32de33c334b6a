// The `nccl` engine: collectives on device buffers over a non-blocking NCCL communicator.
// Every call is enqueued on the communicator's own stream and polled (cudaStreamQuery,
// ncclCommGetAsyncError) until it completes or the deadline passes; then the communicator is
// aborted (ncclCommAbort) and the call throws MeshTimeout, so a dead peer never hangs a rank.
#include "mesh/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <functional>
#include <utility>

#include "mesh/mesh_util.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the nccl engine needs NCCL 2.18 or newer (ncclCommSplit)"
#endif

namespace h0::mesh {
namespace {

using tensor::DType;
using Clock = std::chrono::steady_clock;

void cuda_check(cudaError_t e, const std::string& prefix) {
  if (e != cudaSuccess) throw MeshError(prefix + "CUDA: " + cudaGetErrorString(e));
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::kF64:
      return ncclFloat64;
    case DType::kF32:
      return ncclFloat32;
    case DType::kF16:
      return ncclFloat16;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kI64:
      return ncclInt64;
    case DType::kI32:
      return ncclInt32;
    case DType::kI8:
      return ncclInt8;
    default:
      return ncclUint8;  // u8, bool, f8: moved as bytes
  }
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::kSum ? ncclSum : ncclMax; }

Clock::time_point deadline_after(double timeout_s) {
  if (timeout_s <= 0) return Clock::time_point::max();
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
}

// Waits while `comm` has an operation in progress (a non-blocking init, split or enqueue).
// Returns false at the deadline; throws MeshError(prefix + NCCL's message) on an error.
bool wait_ready(ncclComm_t comm, Clock::time_point deadline, const std::string& prefix) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm, &state);
    if (state == ncclSuccess) return true;
    if (state != ncclInProgress)
      throw MeshError(prefix + "NCCL: " + ncclGetErrorString(state) + " " + ncclGetLastError(comm));
    if (Clock::now() > deadline) return false;
  }
}

ncclConfig_t non_blocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int device, double timeout_s)
      : comm_(comm), device_(device), timeout_s_(timeout_s) {
    ncclCommCount(comm_, &size_);
    ncclCommUserRank(comm_, &rank_);
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
               prefix("make_nccl_communicator"));
    cuda_check(cudaMalloc(&token_, sizeof(float)), prefix("make_nccl_communicator"));
  }
  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    if (failed_) {
      abort_once();
      return;  // the stream and buffers may still be in use by the aborted work
    }
    ncclCommFinalize(comm_);
    if (!wait_ready(comm_, deadline_after(timeout_s_), ""))
      ncclCommAbort(comm_);
    else
      ncclCommDestroy(comm_);
    cudaFree(token_);
    cudaStreamDestroy(stream_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string engine() const override { return "nccl"; }
  double timeout_s() const override { return timeout_s_; }

  void all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    check_reducible("all_reduce", dtype);
    run("all_reduce", [&] {
      return ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), comm_, stream_);
    });
  }
  void all_gather(const void* send, void* recv, size_t count, DType dtype) override {
    const size_t bytes = byte_size(count, dtype);
    const bool in_place = send == static_cast<std::byte*>(recv) + bytes * rank_;
    run("all_gather", [&] {
      const void* in = in_place ? send : staged(send, bytes, recv, bytes * size_);
      return ncclAllGather(in, recv, count, nccl_type(dtype), comm_, stream_);
    });
  }
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype,
                      ReduceOp op) override {
    check_reducible("reduce_scatter", dtype);
    const size_t bytes = byte_size(count, dtype);
    const bool in_place = recv == static_cast<const std::byte*>(send) + bytes * rank_;
    run("reduce_scatter", [&] {
      const void* in = in_place ? send : staged(send, bytes * size_, recv, bytes);
      return ncclReduceScatter(in, recv, count, nccl_type(dtype), nccl_op(op), comm_, stream_);
    });
  }
  // Grouped send/recv (NCCL's own alltoall is newer than the NCCL this engine supports).
  void all_to_all(const void* send, void* recv, size_t count, DType dtype) override {
    const size_t bytes = byte_size(count, dtype);
    run("all_to_all", [&] {
      const auto* in =
          static_cast<const std::byte*>(staged(send, bytes * size_, recv, bytes * size_));
      ncclGroupStart();
      for (int r = 0; r < size_; ++r) {
        ncclSend(in + bytes * r, count, nccl_type(dtype), r, comm_, stream_);
        ncclRecv(static_cast<std::byte*>(recv) + bytes * r, count, nccl_type(dtype), r, comm_,
                 stream_);
      }
      return ncclGroupEnd();
    });
  }
  void broadcast(void* buf, size_t count, DType dtype, int root) override {
    check_peer("broadcast", "root", root, size_);
    run("broadcast",
        [&] { return ncclBroadcast(buf, buf, count, nccl_type(dtype), root, comm_, stream_); });
  }
  void send(const void* buf, size_t count, DType dtype, int peer) override {
    check_peer("send", "peer", peer, size_);
    if (peer == rank_)
      throw MeshError(prefix("send") + "NCCL sends to itself only within send_recv");
    run(
        "send", [&] { return ncclSend(buf, count, nccl_type(dtype), peer, comm_, stream_); }, peer);
  }
  void recv(void* buf, size_t count, DType dtype, int peer) override {
    check_peer("recv", "peer", peer, size_);
    if (peer == rank_)
      throw MeshError(prefix("recv") + "NCCL receives from itself only within send_recv");
    run(
        "recv", [&] { return ncclRecv(buf, count, nccl_type(dtype), peer, comm_, stream_); }, peer);
  }
  void send_recv(const void* send_buf, int dst, void* recv_buf, int src, size_t count,
                 DType dtype) override {
    check_peer("send_recv", "destination", dst, size_);
    check_peer("send_recv", "source", src, size_);
    run(
        "send_recv",
        [&] {
          ncclGroupStart();
          ncclSend(send_buf, count, nccl_type(dtype), dst, comm_, stream_);
          ncclRecv(recv_buf, count, nccl_type(dtype), src, comm_, stream_);
          return ncclGroupEnd();
        },
        src);
  }
  void barrier() override {
    run("barrier",
        [&] { return ncclAllReduce(token_, token_, 1, ncclFloat32, ncclSum, comm_, stream_); });
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    enter("split");
    ncclConfig_t config = non_blocking_config();
    ncclComm_t out = nullptr;
    const ncclResult_t rc = ncclCommSplit(comm_, color, key, &out, &config);
    if (rc != ncclSuccess && rc != ncclInProgress)
      fail("split", std::string("NCCL: ") + ncclGetErrorString(rc));
    if (!wait_ready(out, deadline_after(timeout_s_), prefix("split"))) {
      ncclCommAbort(out);
      throw MeshTimeout(timeout_message("split", rank_, size_, timeout_s_, "its peers"));
    }
    return std::make_unique<NcclCommunicator>(out, device_, timeout_s_);
  }

 private:
  std::string prefix(const char* op) const { return rank_prefix(op, rank_, size_); }

  void enter(const char* op) {
    if (failed_) throw MeshError(prefix(op) + "the communicator failed earlier (" + failure_ + ")");
    cuda_check(cudaSetDevice(device_), prefix(op));
  }

  // Fails the communicator for good: MeshTimeout when `timed_out`, else MeshError.
  [[noreturn]] void fail(const char* op, const std::string& why, bool timed_out = false,
                         int peer = -1) {
    failed_ = true;
    const std::string whom = peer < 0 ? "its peers" : "rank " + std::to_string(peer);
    failure_ = timed_out ? timeout_message(op, rank_, size_, timeout_s_, whom) : prefix(op) + why;
    if (timed_out) throw MeshTimeout(failure_);
    throw MeshError(failure_);
  }

  // `send`, or a stream-ordered device copy of it when it overlaps `recv` (freed after the call).
  const void* staged(const void* send, size_t send_bytes, const void* recv, size_t recv_bytes) {
    if (!overlaps(send, send_bytes, recv, recv_bytes)) return send;
    void* copy = nullptr;
    cuda_check(cudaMallocAsync(&copy, send_bytes, stream_), prefix("staging"));
    cuda_check(cudaMemcpyAsync(copy, send, send_bytes, cudaMemcpyDeviceToDevice, stream_),
               prefix("staging"));
    staging_ = copy;
    return copy;
  }

  // Enqueues the call, then waits for the enqueue and for the stream until the deadline.
  void run(const char* op, const std::function<ncclResult_t()>& issue, int peer = -1) {
    enter(op);
    const Clock::time_point deadline = deadline_after(timeout_s_);
    const ncclResult_t rc = issue();
    if (staging_ != nullptr) cudaFreeAsync(std::exchange(staging_, nullptr), stream_);
    if (rc != ncclSuccess && rc != ncclInProgress)
      fail(op, std::string("NCCL: ") + ncclGetErrorString(rc) + " " + ncclGetLastError(comm_));
    bool ready = false;
    try {
      ready = wait_ready(comm_, deadline, "");
    } catch (const MeshError& e) {
      fail(op, e.what());
    }
    if (!ready) abort_timeout(op, peer);
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) fail(op, std::string("CUDA: ") + cudaGetErrorString(e));
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress)
        fail(op, std::string("NCCL: ") + ncclGetErrorString(state));
      if (Clock::now() > deadline) abort_timeout(op, peer);
    }
  }

  // A timed-out call's kernels still wait on their peers: abort them now, not at destruction.
  [[noreturn]] void abort_timeout(const char* op, int peer) {
    abort_once();
    fail(op, "", true, peer);
  }

  void abort_once() {
    if (!aborted_) ncclCommAbort(comm_);
    aborted_ = true;
  }

  ncclComm_t comm_;
  int device_;
  double timeout_s_;
  int rank_ = 0, size_ = 1;
  cudaStream_t stream_ = nullptr;
  void* token_ = nullptr;    // barrier's one float
  void* staging_ = nullptr;  // the current call's staged send buffer
  bool failed_ = false, aborted_ = false;
  std::string failure_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device,
                                                     double timeout_s) {
  const std::string prefix =
      rank_prefix("make_nccl_communicator", bootstrap.rank(), bootstrap.size());
  cuda_check(cudaSetDevice(device), prefix);
  ncclUniqueId id{};
  if (bootstrap.rank() == 0) {
    const ncclResult_t rc = ncclGetUniqueId(&id);
    if (rc != ncclSuccess) throw MeshError(prefix + "ncclGetUniqueId: " + ncclGetErrorString(rc));
  }
  bootstrap.broadcast(&id, sizeof id, DType::kU8, 0);
  ncclConfig_t config = non_blocking_config();
  ncclComm_t comm = nullptr;
  const ncclResult_t rc =
      ncclCommInitRankConfig(&comm, bootstrap.size(), id, bootstrap.rank(), &config);
  if (rc != ncclSuccess && rc != ncclInProgress)
    throw MeshError(prefix + "ncclCommInitRankConfig: " + ncclGetErrorString(rc));
  if (!wait_ready(comm, deadline_after(timeout_s), prefix)) {
    ncclCommAbort(comm);
    throw MeshTimeout(timeout_message("make_nccl_communicator", bootstrap.rank(), bootstrap.size(),
                                      timeout_s, "its peers"));
  }
  return std::make_unique<NcclCommunicator>(comm, device, timeout_s);
}

void* nccl_device_alloc(size_t bytes) {
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "nccl_device_alloc: ");
  return p;
}

void nccl_device_free(void* ptr) { cudaFree(ptr); }

void nccl_device_copy(void* dst, const void* src, size_t bytes) {
  cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "nccl_device_copy: ");
  // From pageable host memory cudaMemcpy may return before the data reaches the device, and the
  // communicator's stream does not wait for the legacy stream: without this a collective could
  // read the buffer before the copy lands (seen on an H200: all_gather i32 1 MiB read the
  // receive buffer's sentinel fill after NCCL had written it).
  cuda_check(cudaDeviceSynchronize(), "nccl_device_copy: ");
}

}  // namespace h0::mesh
