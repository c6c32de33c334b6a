// The `mpi` engine: host buffers over an MPI communicator (a dup of MPI_COMM_WORLD, or a split
// of one). Every operation is non-blocking MPI polled with MPI_Test until the deadline, so a
// peer that died or hangs turns into MeshTimeout here instead of a hang. f16 and bf16 are
// widened to f32 for reductions and rounded back once.
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "mesh/communicator.h"
#include "mesh/mesh_util.h"
#include "mesh/mpi_runtime.h"
#include "tensor/convert.h"

namespace h0::mesh {
namespace {

using tensor::DType;
using Bytes = std::vector<std::byte>;

bool is_narrow(DType d) { return d == DType::kF16 || d == DType::kBF16; }

// `count` elements of `dtype` widened to f32.
Bytes widen(const void* src, size_t count, DType dtype) {
  Bytes out(count * sizeof(float));
  tensor::convert(src, dtype, out.data(), DType::kF32, count);
  return out;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, double timeout_s) : comm_(comm), timeout_s_(timeout_s) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized && failure_.empty())
      MPI_Comm_free(&comm_);  // a failed one may have requests pending
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string engine() const override { return "mpi"; }
  double timeout_s() const override { return timeout_s_; }

  void all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    const int n = enter("all_reduce", count);
    check_reducible("all_reduce", dtype);
    const MPI_Datatype t = mpi::reduce_type(dtype);
    const size_t bytes = count * (is_narrow(dtype) ? sizeof(float) : tensor::dtype_size(dtype));
    Bytes w = is_narrow(dtype) ? widen(send, count, dtype) : Bytes();
    void* buf = is_narrow(dtype) ? w.data() : recv;
    if (bytes <= kSmallReduceBytes) {
      if (!is_narrow(dtype) && send != recv) std::memcpy(recv, send, bytes);
      doubling_all_reduce(buf, n, t, mpi::reduce_op(op), bytes);
    } else {
      const void* in = is_narrow(dtype) || send == recv ? MPI_IN_PLACE : send;
      MPI_Request r = MPI_REQUEST_NULL;
      post("all_reduce", MPI_Iallreduce(in, buf, n, t, mpi::reduce_op(op), comm_, &r));
      wait("all_reduce", &r, 1, &w);
    }
    if (is_narrow(dtype)) tensor::convert(w.data(), DType::kF32, recv, dtype, count);
  }

  void all_gather(const void* send, void* recv, size_t count, DType dtype) override {
    const int n = enter("all_gather", count);
    const size_t bytes = byte_size(count, dtype);
    Bytes copy;
    const bool in_place = send == static_cast<std::byte*>(recv) + bytes * rank_;
    const void* in = in_place ? MPI_IN_PLACE : staged(send, bytes, recv, bytes * size_, &copy);
    const MPI_Datatype t = mpi::element_type(dtype);
    MPI_Request r = MPI_REQUEST_NULL;
    post("all_gather", MPI_Iallgather(in, n, t, recv, n, t, comm_, &r));
    wait("all_gather", &r, 1, &copy);
  }

  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype,
                      ReduceOp op) override {
    const int n = enter("reduce_scatter", count);
    enter("reduce_scatter", count * size_);
    check_reducible("reduce_scatter", dtype);
    MPI_Request r = MPI_REQUEST_NULL;
    if (is_narrow(dtype)) {
      Bytes w = widen(send, count * size_, dtype), out(count * sizeof(float));
      post("reduce_scatter", MPI_Ireduce_scatter_block(w.data(), out.data(), n, MPI_FLOAT,
                                                       mpi::reduce_op(op), comm_, &r));
      wait("reduce_scatter", &r, 1, &w, &out);
      tensor::convert(out.data(), DType::kF32, recv, dtype, count);
      return;
    }
    Bytes copy;
    const void* in =
        staged(send, byte_size(count * size_, dtype), recv, byte_size(count, dtype), &copy);
    post("reduce_scatter", MPI_Ireduce_scatter_block(in, recv, n, mpi::reduce_type(dtype),
                                                     mpi::reduce_op(op), comm_, &r));
    wait("reduce_scatter", &r, 1, &copy);
  }

  void all_to_all(const void* send, void* recv, size_t count, DType dtype) override {
    const int n = enter("all_to_all", count);
    enter("all_to_all", count * size_);
    const size_t bytes = byte_size(count * size_, dtype);
    Bytes copy;
    const void* in = staged(send, bytes, recv, bytes, &copy);
    const MPI_Datatype t = mpi::element_type(dtype);
    MPI_Request r = MPI_REQUEST_NULL;
    post("all_to_all", MPI_Ialltoall(in, n, t, recv, n, t, comm_, &r));
    wait("all_to_all", &r, 1, &copy);
  }

  void broadcast(void* buf, size_t count, DType dtype, int root) override {
    const int n = enter("broadcast", count);
    check_peer("broadcast", "root", root, size_);
    MPI_Request r = MPI_REQUEST_NULL;
    post("broadcast", MPI_Ibcast(buf, n, mpi::element_type(dtype), root, comm_, &r));
    wait("broadcast", &r, 1);
  }

  void send(const void* buf, size_t count, DType dtype, int peer) override {
    send_recv(buf, peer, nullptr, -1, count, dtype);
  }
  void recv(void* buf, size_t count, DType dtype, int peer) override {
    send_recv(nullptr, -1, buf, peer, count, dtype);
  }

  // dst or src -1: no send or no receive (send() and recv() alone). A rank's messages to itself
  // go through the loopback queue.
  void send_recv(const void* send_buf, int dst, void* recv_buf, int src, size_t count,
                 DType dtype) override {
    const char* op = dst < 0 ? "recv" : src < 0 ? "send" : "send_recv";
    const int n = enter(op, count);
    const size_t bytes = byte_size(count, dtype);
    if (dst >= 0) check_peer(op, "destination", dst, size_);
    if (src >= 0) check_peer(op, "source", src, size_);
    if (dst == rank_) loopback_.push(send_buf, bytes);
    if (src == rank_) loopback_.pop(recv_buf, bytes, mpi_prefix(op));
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    const MPI_Datatype t = mpi::element_type(dtype);
    if (dst >= 0 && dst != rank_) post(op, MPI_Isend(send_buf, n, t, dst, kTag, comm_, &r[0]));
    if (src >= 0 && src != rank_) post(op, MPI_Irecv(recv_buf, n, t, src, kTag, comm_, &r[1]));
    const int peer = src >= 0 && src != rank_ ? src : dst;
    const std::string whom = "rank " + std::to_string(peer);
    wait(op, r, 2, nullptr, nullptr, whom.c_str());
  }

  void barrier() override {
    enter("barrier", 0);
    MPI_Request r = MPI_REQUEST_NULL;
    post("barrier", MPI_Ibarrier(comm_, &r));
    wait("barrier", &r, 1);
  }

  // Every rank first shows up in an all_gather (so a dead peer is a timeout, not a hang), then
  // MPI_Comm_split.
  std::unique_ptr<Communicator> split(int color, int key) override {
    enter("split", 0);
    int mine[2] = {color, key};
    std::vector<int> all(2 * static_cast<size_t>(size_));
    MPI_Request r = MPI_REQUEST_NULL;
    post("split", MPI_Iallgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_, &r));
    wait("split", &r, 1);
    MPI_Comm out = MPI_COMM_NULL;
    mpi::check(MPI_Comm_split(comm_, color, key, &out), mpi_prefix("split"));
    mpi::check(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN), mpi_prefix("split"));
    return std::make_unique<MpiCommunicator>(out, timeout_s_);
  }

 private:
  static constexpr int kTag = 7, kReduceTag = 8;
  // Up to this many bytes all_reduce is recursive doubling over point-to-point messages: libnbc's
  // per-call schedule setup would cost more than the data (mesh_bench: 2-5x MPI_Allreduce's time
  // below 4 KiB through MPI_Iallreduce, 1.0x this way).
  // Their messages go in pieces of kPieceBytes, under Open MPI's shared-memory eager limit
  // (4 KiB with the header): a rendezvous would triple the time of a 4 KiB all_reduce.
  static constexpr size_t kSmallReduceBytes = 32768, kPieceBytes = 2048;
  static constexpr int kMaxPieces = kSmallReduceBytes / kPieceBytes;

  // Recursive doubling on `buf` (this rank's contribution in, the result out). With a size that
  // is not a power of two, the ranks past the largest power p fold into rank - p first and get
  // the result back last. Each step combines two partial results with a commutative op, so all
  // ranks end with the same bits.
  void doubling_all_reduce(void* buf, int n, MPI_Datatype t, MPI_Op op, size_t bytes) {
    int p = 1;
    while (p * 2 <= size_) p *= 2;
    scratch_.resize(bytes);
    if (rank_ >= p) {
      exchange(buf, rank_ - p, nullptr, -1, n, t);
      exchange(nullptr, -1, buf, rank_ - p, n, t);
      return;
    }
    if (rank_ + p < size_) combine(buf, -1, rank_ + p, n, t, op);
    for (int mask = 1; mask < p; mask *= 2) combine(buf, rank_ ^ mask, rank_ ^ mask, n, t, op);
    if (rank_ + p < size_) exchange(buf, rank_ + p, nullptr, -1, n, t);
  }

  // Sends buf to dst (unless -1) while receiving src's partial result into scratch_, then folds
  // it into buf.
  void combine(void* buf, int dst, int src, int n, MPI_Datatype t, MPI_Op op) {
    exchange(dst < 0 ? nullptr : buf, dst, scratch_.data(), src, n, t, &scratch_);
    post("all_reduce", MPI_Reduce_local(scratch_.data(), buf, n, t, op));
  }

  // One step's messages of all_reduce (n elements of t each way, in pieces), waited for against
  // the deadline.
  void exchange(const void* send_buf, int dst, void* recv_buf, int src, int n, MPI_Datatype t,
                Bytes* keep = nullptr) {
    int esize = 1;
    MPI_Type_size(t, &esize);
    const int piece = static_cast<int>(kPieceBytes) / esize;
    MPI_Request r[2 * kMaxPieces];
    int k = 0;
    const int pieces = std::max(1, (n + piece - 1) / piece);
    for (int i = 0; i < pieces; ++i) {
      const int at = i * piece, m = std::min(piece, n - at);
      const size_t offset = static_cast<size_t>(at) * esize;
      if (dst >= 0) {
        const void* out = static_cast<const std::byte*>(send_buf) + offset;
        post("all_reduce", MPI_Isend(out, m, t, dst, kReduceTag, comm_, &r[k++]));
      }
      if (src >= 0) {
        void* in = static_cast<std::byte*>(recv_buf) + offset;
        post("all_reduce", MPI_Irecv(in, m, t, src, kReduceTag, comm_, &r[k++]));
      }
    }
    wait("all_reduce", r, k, keep);
  }

  std::string mpi_prefix(const char* op) const { return rank_prefix(op, rank_, size_); }

  // Starts an operation: refuses on a failed communicator, returns `count` as MPI's int.
  int enter(const char* op, size_t count) const {
    if (!failure_.empty())
      throw MeshError(mpi_prefix(op) + "the communicator failed earlier (" + failure_ + ")");
    if (count > static_cast<size_t>(INT_MAX)) {
      throw MeshError(mpi_prefix(op) + std::to_string(count) +
                      " elements are more than MPI's int counts allow");
    }
    return static_cast<int>(count);
  }

  void post(const char* op, int rc) const {
    if (rc != MPI_SUCCESS) mpi::check(rc, mpi_prefix(op));
  }

  // `send` itself, or a copy of it in `copy` when it overlaps `recv` in a way MPI cannot take.
  static const void* staged(const void* send, size_t send_bytes, const void* recv,
                            size_t recv_bytes, Bytes* copy) {
    if (!overlaps(send, send_bytes, recv, recv_bytes)) return send;
    const auto* p = static_cast<const std::byte*>(send);
    copy->assign(p, p + send_bytes);
    return copy->data();
  }

  // Waits for the requests until the deadline. On a timeout or an error the communicator is
  // failed for good, and the staging buffers the requests may still use are kept alive.
  void wait(const char* op, MPI_Request* r, int n, Bytes* a = nullptr, Bytes* b = nullptr,
            const char* whom = "its peers") {
    int error = MPI_SUCCESS;
    if (mpi::wait_all(r, n, timeout_s_, &error)) return;
    const bool timed_out = error == MPI_SUCCESS;
    if (timed_out) {
      failure_ = timeout_message(op, rank_, size_, timeout_s_, whom);
    } else {
      try {
        mpi::check(error, mpi_prefix(op));
      } catch (const MeshError& e) {
        failure_ = e.what();
      }
    }
    for (Bytes* keep : {a, b}) {
      if (keep != nullptr) orphans_.push_back(std::move(*keep));
    }
    if (timed_out) throw MeshTimeout(failure_);
    throw MeshError(failure_);
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  double timeout_s_;
  std::string failure_;         // why the communicator failed; empty while it works
  std::vector<Bytes> orphans_;  // staging of requests abandoned on failure
  Bytes scratch_;               // small all_reduce's received partial results
  Loopback loopback_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(double timeout_s) {
  mpi::ensure_initialized();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string prefix = rank_prefix("make_mpi_communicator", rank, size);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Comm_idup(MPI_COMM_WORLD, &comm, &r), prefix);
  int error = MPI_SUCCESS;
  if (!mpi::wait_all(&r, 1, timeout_s, &error)) {
    mpi::check(error, prefix);
    throw MeshTimeout(timeout_message("make_mpi_communicator", rank, size, timeout_s, "its peers"));
  }
  mpi::check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), prefix);
  return std::make_unique<MpiCommunicator>(comm, timeout_s);
}

}  // namespace h0::mesh
