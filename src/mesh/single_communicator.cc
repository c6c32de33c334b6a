// The `single` engine: a communicator of one rank. Every collective is a copy (memmove, so
// overlapping in-place layouts work); send and recv to rank 0 meet in a local queue.
#include <cstring>

#include "mesh/communicator.h"
#include "mesh/mesh_util.h"

namespace h0::mesh {
namespace {

using tensor::DType;

class SingleCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string engine() const override { return "single"; }

  void all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp) override {
    check_reducible("all_reduce", dtype);
    copy(send, recv, count, dtype);
  }
  void all_gather(const void* send, void* recv, size_t count, DType dtype) override {
    copy(send, recv, count, dtype);
  }
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp) override {
    check_reducible("reduce_scatter", dtype);
    copy(send, recv, count, dtype);
  }
  void all_to_all(const void* send, void* recv, size_t count, DType dtype) override {
    copy(send, recv, count, dtype);
  }
  void broadcast(void*, size_t, DType, int root) override {
    check_peer("broadcast", "root", root, 1);
  }

  void send(const void* buf, size_t count, DType dtype, int peer) override {
    check_peer("send", "peer", peer, 1);
    loopback_.push(buf, byte_size(count, dtype));
  }
  void recv(void* buf, size_t count, DType dtype, int peer) override {
    check_peer("recv", "peer", peer, 1);
    loopback_.pop(buf, byte_size(count, dtype), rank_prefix("recv", 0, 1));
  }
  void send_recv(const void* send_buf, int dst, void* recv_buf, int src, size_t count,
                 DType dtype) override {
    check_peer("send_recv", "destination", dst, 1);
    check_peer("send_recv", "source", src, 1);
    copy(send_buf, recv_buf, count, dtype);
  }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override {
    return std::make_unique<SingleCommunicator>();
  }

 private:
  static void copy(const void* send, void* recv, size_t count, DType dtype) {
    if (send != recv && count > 0) std::memmove(recv, send, byte_size(count, dtype));
  }

  Loopback loopback_;
};

}  // namespace

std::unique_ptr<Communicator> make_single_communicator() {
  return std::make_unique<SingleCommunicator>();
}

}  // namespace h0::mesh
