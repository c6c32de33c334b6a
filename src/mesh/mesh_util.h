// Helpers the communicator engines share (internal to mesh/): argument checks and the wording
// of their errors, so every engine fails the same way for the same mistake.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "mesh/communicator.h"

namespace h0::mesh {

// Throws MeshError("<op>: dtype <d> cannot be reduced (...)") unless `dtype` is one of
// f64, f32, f16, bf16, i64, i32.
void check_reducible(const char* op, tensor::DType dtype);
// Throws MeshError unless 0 <= peer < size.
void check_peer(const char* op, const char* what, int peer, int size);
// "<op>: rank <rank> of <size>: " — the prefix of every error a rank reports.
std::string rank_prefix(const char* op, int rank, int size);
// "<op>: rank 1 of 2 timed out after 30 s waiting for <whom>".
std::string timeout_message(const char* op, int rank, int size, double timeout_s,
                            const std::string& whom);
// Bytes of `count` elements of `dtype`.
inline size_t byte_size(size_t count, tensor::DType dtype) {
  return count * tensor::dtype_size(dtype);
}

// Whether two byte ranges share a byte (empty ranges never do).
inline bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto* pa = static_cast<const std::byte*>(a);
  const auto* pb = static_cast<const std::byte*>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + b_bytes && pb < pa + a_bytes;
}

// Messages a rank sends to itself, received in the order sent.
class Loopback {
 public:
  void push(const void* buf, size_t bytes);
  // Copies the oldest message into `buf`. Throws MeshError(prefix + why) when there is none or
  // it is not `bytes` long.
  void pop(void* buf, size_t bytes, const std::string& prefix);

 private:
  std::deque<std::vector<std::byte>> messages_;
};

}  // namespace h0::mesh
