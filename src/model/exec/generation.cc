#include "model/exec/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "model/config/tower.h"
#include "model/vision/image.h"

namespace h0::model {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

double log_sum_exp(const float* logits, int64_t vocab) {
  double max = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) max = std::max(max, double(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max);
  return max + std::log(sum);
}

TopK top_k_logprobs(const float* logits, int64_t vocab, int k, double lse) {
  // The k best ids so far, best first (higher logit, then lower id): each id is compared with
  // the worst kept, and inserted in order when better. Ids come in increasing order, so an id
  // tied with a kept one goes after it.
  const auto better = [&](int64_t a, int64_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  const size_t n = std::min<size_t>(size_t(k), size_t(vocab));
  TopK top;
  std::vector<int64_t>& best = top.ids;
  best.reserve(std::min<size_t>(n, 64) + 1);
  for (int64_t i = 0; i < vocab && n > 0; ++i) {
    if (best.size() == n && !better(i, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), i, better), i);
    if (best.size() > n) best.pop_back();
  }
  for (int64_t id : best) top.logprobs.push_back(double(logits[id]) - lse);
  return top;
}

Generation generate_greedy(Executor& ex, const std::vector<int64_t>& prompt, int steps,
                           ProbeRecorder* probes, const tensor::Tensor* image_features,
                           const std::vector<ImageGrid>& image_grids, int64_t chunk) {
  Generation g;
  const int seq = ex.new_sequence();
  const int64_t V = ex.arch().text.vocab_size;
  auto start = std::chrono::steady_clock::now();
  if (chunk <= 0 || int64_t(prompt.size()) <= chunk) {
    g.prompt_logits = ex.forward(seq, prompt, probes, image_features, image_grids);
  } else {
    if (image_features != nullptr)
      throw InputError("generate_greedy", "a chunked prefill takes no images");
    g.prompt_logits = tensor::Tensor::empty(tensor::DType::kF32, {int64_t(prompt.size()), V});
    for (int64_t begin = 0; begin < int64_t(prompt.size()); begin += chunk) {
      const int64_t end = std::min<int64_t>(begin + chunk, int64_t(prompt.size()));
      const tensor::Tensor rows = ex.forward(
          seq, std::vector<int64_t>(prompt.begin() + begin, prompt.begin() + end), probes);
      std::memcpy(g.prompt_logits.mutable_data_as<float>() + begin * V, rows.data_as<float>(),
                  size_t((end - begin) * V) * sizeof(float));
    }
  }
  g.prefill_s = seconds_since(start);
  tensor::Tensor last =
      g.prompt_logits.slice_rows(g.prompt_logits.dim(0) - 1, g.prompt_logits.dim(0));
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

std::vector<int64_t> synthetic_prompt(const Architecture& a, int64_t n) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i)
    ids.push_back((i * 37 + 11) % std::min<int64_t>(a.text.vocab_size, 1000));
  return ids;
}

ImageInput image_input(Executor& ex, const std::string& model_dir, const std::string& image_path,
                       ProbeRecorder* probes) {
  const Tower* tower = tower_of(ex.arch());
  if (tower == nullptr) throw InputError(image_path, "the model has no vision tower to read it");
  const std::unique_ptr<ImageProcessor> p = tower->processor(model_dir);
  const TowerPixels px = p->pixels(decode_image(image_path));
  ImageInput in;
  if (px.has_grid()) in.grids.push_back(px.grid);
  in.features = tower->features(ex, *p, px, probes);
  return in;
}

}  // namespace h0::model
