// Helpers the Google Benchmark programs share: a wall-clock timer for one call, and a tensor in
// a backend's memory holding a host vector's bytes.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <vector>

#include "backend/harness_backend.h"

namespace h0::bench {

// Seconds `fn` took (steady clock).
inline double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A backend-allocated tensor of `shape` holding `host`'s bytes (the caller frees t.data).
template <typename T>
hb_tensor device(const hb_backend* be, hb_dtype dtype, std::initializer_list<int64_t> shape,
                 const std::vector<T>& host) {
  hb_tensor t{};
  t.dtype = dtype;
  for (int64_t d : shape) t.shape[t.ndim++] = d;
  be->alloc(be->self, host.size() * sizeof(T), &t.data);
  be->copy_to_device(be->self, t.data, host.data(), host.size() * sizeof(T));
  return t;
}

}  // namespace h0::bench
