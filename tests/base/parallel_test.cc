#include "base/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

namespace h0::base {
namespace {

TEST(ParallelFor, VisitsEveryIndexOnceInFixedChunks) {
  const size_t n = 10007, grain = 1000;
  std::vector<std::atomic<int>> hits(n);
  std::mutex mu;
  std::set<std::tuple<size_t, size_t, size_t>> chunks;
  parallel_for(n, grain, [&](size_t chunk, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) hits[i]++;
    std::lock_guard<std::mutex> lock(mu);
    chunks.emplace(chunk, begin, end);
  });
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  ASSERT_EQ(chunks.size(), 11u);
  for (const auto& [chunk, begin, end] : chunks) {
    EXPECT_EQ(begin, chunk * grain);
    EXPECT_EQ(end, std::min(n, (chunk + 1) * grain));
  }
}

TEST(ParallelFor, EmptyRangeRunsNothing) {
  int calls = 0;
  parallel_for(0, 16, [&](size_t, size_t, size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace h0::base
