// An engine's Prometheus text as the serving checks read it (service/metrics.h): samples summed
// over their label sets, histogram buckets kept apart by bound, malformed lines skipped.
#include "service/metrics.h"

#include <gtest/gtest.h>

namespace h0::service {
namespace {

// As vLLM 0.32 writes it: labels per engine and model, _created twins, histograms.
const char* const kVllm =
    "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
    "# TYPE vllm:prefix_cache_hits_total counter\n"
    "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"tiny-llama\"} 256.0\n"
    "vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"tiny-llama\"} 128.0\n"
    "vllm:prefix_cache_hits_created{engine=\"0\",model_name=\"tiny-llama\"} 1.7650e+09\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"a}b\"} 3\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"64.0\"} 5\n"
    "vllm:iteration_tokens_total_bucket{engine=\"1\",le=\"64.0\"} 2\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"+Inf\"} 9\n"
    "not a metric line\n"
    "vllm:broken{engine=\"0\" 4\n"
    "process_open_fds 12 1765000000000\n";

TEST(Metrics, SumsLabelSetsAndKeepsBucketsByBound) {
  const Metrics m = Metrics::parse(kVllm);
  EXPECT_DOUBLE_EQ(*m.value("vllm:prefix_cache_hits_total"), 384);
  EXPECT_DOUBLE_EQ(*m.value("vllm:num_requests_running"), 3);  // a '}' inside a label value
  EXPECT_DOUBLE_EQ(*m.value("vllm:iteration_tokens_total_bucket{le=\"64.0\"}"), 7);
  EXPECT_DOUBLE_EQ(*m.value("vllm:iteration_tokens_total_bucket{le=\"+Inf\"}"), 9);
  EXPECT_DOUBLE_EQ(*m.value("process_open_fds"), 12);  // a timestamp after the value
  EXPECT_FALSE(m.value("vllm:broken").has_value());
  EXPECT_EQ(m.skipped(), 2u);
}

TEST(Metrics, FirstOfAndDeltaNameTheCounterFound) {
  const Metrics before = Metrics::parse(kVllm);
  const Metrics after = Metrics::parse(
      "vllm:prefix_cache_hits_total{engine=\"0\"} 500\nvllm:num_preemptions_total 2\n");
  const auto found =
      before.first_of({"sglang:cache_hit_tokens_total", "vllm:prefix_cache_hits_total"});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->name, "vllm:prefix_cache_hits_total");
  const auto hits = counter_delta(before, after, {"vllm:prefix_cache_hits_total"});
  ASSERT_TRUE(hits.has_value());
  EXPECT_DOUBLE_EQ(hits->value, 500 - 384);
  // A counter the first scrape lacks (vLLM writes some only once they move) starts at 0.
  const auto preempted = counter_delta(before, after, {"vllm:num_preemptions_total"});
  ASSERT_TRUE(preempted.has_value());
  EXPECT_DOUBLE_EQ(preempted->value, 2);
  EXPECT_FALSE(counter_delta(before, after, {"sglang:num_retractions"}).has_value());
}

}  // namespace
}  // namespace h0::service
