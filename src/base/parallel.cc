#include "base/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace h0::base {

int worker_threads() {
  static const int threads = [] {
    if (const char* env = std::getenv("HARNESS_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return threads;
}

void parallel_for(size_t n, size_t grain,
                  const std::function<void(size_t chunk, size_t begin, size_t end)>& fn) {
  if (grain == 0) grain = 1;
  const size_t chunks = (n + grain - 1) / grain;
  const size_t threads = std::min<size_t>(chunks, static_cast<size_t>(worker_threads()));
  if (threads <= 1) {
    for (size_t c = 0; c < chunks; ++c) fn(c, c * grain, std::min(n, (c + 1) * grain));
    return;
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t c; (c = next.fetch_add(1)) < chunks;) fn(c, c * grain, std::min(n, (c + 1) * grain));
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace h0::base
