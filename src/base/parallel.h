// Splits [0, n) into fixed chunks of `grain` and runs them on up to hardware_concurrency
// threads. Chunk boundaries depend only on n and grain, never on the thread count, so a
// reduction merged in chunk order gives the same bits on any machine.
#pragma once

#include <cstddef>
#include <functional>

namespace h0::base {

// Number of worker threads parallel_for uses (HARNESS_THREADS overrides; at least 1).
int worker_threads();

// Calls fn(chunk_index, begin, end) once per chunk; chunks run concurrently.
void parallel_for(size_t n, size_t grain,
                  const std::function<void(size_t chunk, size_t begin, size_t end)>& fn);

}  // namespace h0::base
