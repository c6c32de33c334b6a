// The parts of the Communicator contract every engine shares: the default send_recv and the
// argument checks of mesh_util.h.
#include "mesh/communicator.h"

#include <cstdio>
#include <cstring>

#include "mesh/mesh_util.h"

namespace h0::mesh {

using tensor::DType;

void check_reducible(const char* op, DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kI64:
    case DType::kI32:
      return;
    default:
      throw MeshError(std::string(op) + ": dtype " + tensor::dtype_name(dtype) +
                      " cannot be reduced (f64, f32, f16, bf16, i64, i32)");
  }
}

void check_peer(const char* op, const char* what, int peer, int size) {
  if (peer < 0 || peer >= size) {
    throw MeshError(std::string(op) + ": " + what + " " + std::to_string(peer) +
                    " is not a rank of a communicator of " + std::to_string(size));
  }
}

std::string rank_prefix(const char* op, int rank, int size) {
  return std::string(op) + ": rank " + std::to_string(rank) + " of " + std::to_string(size) + ": ";
}

std::string timeout_message(const char* op, int rank, int size, double timeout_s,
                            const std::string& whom) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
  return std::string(op) + ": rank " + std::to_string(rank) + " of " + std::to_string(size) +
         " timed out after " + seconds + " s waiting for " + whom;
}

void Loopback::push(const void* buf, size_t bytes) {
  const auto* p = static_cast<const std::byte*>(buf);
  messages_.emplace_back(p, p + bytes);
}

void Loopback::pop(void* buf, size_t bytes, const std::string& prefix) {
  if (messages_.empty())
    throw MeshError(prefix + "waits for a message from itself that it never sent");
  const std::vector<std::byte>& m = messages_.front();
  if (m.size() != bytes) {
    throw MeshError(prefix + "expects " + std::to_string(bytes) +
                    " bytes from itself, its send had " + std::to_string(m.size()));
  }
  if (bytes > 0) std::memcpy(buf, m.data(), bytes);
  messages_.pop_front();
}

// Even ranks send first, odd ranks receive first: in a ring every sender meets a receiver.
// With an odd size the last (even) rank sends to rank 0, which has finished its send by then.
void Communicator::send_recv(const void* send_buf, int dst, void* recv_buf, int src, size_t count,
                             DType dtype) {
  if (rank() % 2 == 0) {
    send(send_buf, count, dtype, dst);
    recv(recv_buf, count, dtype, src);
  } else {
    recv(recv_buf, count, dtype, src);
    send(send_buf, count, dtype, dst);
  }
}

}  // namespace h0::mesh
