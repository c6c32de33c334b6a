#include "model/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace h0::model {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TopK top_k_logprobs(const float* logits, int64_t vocab, int k) {
  double max = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) max = std::max(max, double(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max);
  const double lse = max + std::log(sum);
  std::vector<int64_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  const size_t n = std::min<size_t>(size_t(k), order.size());
  std::partial_sort(order.begin(), order.begin() + long(n), order.end(), [&](int64_t a, int64_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  TopK top;
  for (size_t i = 0; i < n; ++i) {
    top.ids.push_back(order[i]);
    top.logprobs.push_back(double(logits[order[i]]) - lse);
  }
  return top;
}

Generation generate_greedy(Executor& ex, const std::vector<int64_t>& prompt, int steps, ProbeRecorder* probes,
                           const tensor::Tensor* image_features) {
  Generation g;
  const int seq = ex.new_sequence();
  const int64_t V = ex.arch().text.vocab_size;
  auto start = std::chrono::steady_clock::now();
  g.prompt_logits = ex.forward(seq, prompt, probes, image_features);
  g.prefill_s = seconds_since(start);
  tensor::Tensor last = g.prompt_logits.slice_rows(g.prompt_logits.dim(0) - 1, g.prompt_logits.dim(0));
  start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    const int64_t next = ex.greedy(last)[0];
    g.ids.push_back(next);
    g.top5.push_back(top_k_logprobs(last.data_as<float>(), V, 5));
    if (s + 1 < steps) last = ex.forward(seq, {next});
  }
  g.decode_s = seconds_since(start);
  ex.free_sequence(seq);
  return g;
}

}  // namespace h0::model
