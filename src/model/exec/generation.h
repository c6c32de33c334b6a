// Greedy generation over the paged cache (prefill the prompt, then one token per step) and the
// top-k log-probabilities of each step, as the model checks and the dump format record them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/exec/executor.h"

namespace h0::model {

struct TopK {
  std::vector<int64_t> ids;      // by descending logprob, ties -> lower id
  std::vector<double> logprobs;  // log_softmax in f64
};

// log(sum(exp(logits))) of one row of logits [V], in f64.
double log_sum_exp(const float* logits, int64_t vocab);

// The top `k` of one row of logits [V]; `lse` is its log_sum_exp.
TopK top_k_logprobs(const float* logits, int64_t vocab, int k, double lse);
inline TopK top_k_logprobs(const float* logits, int64_t vocab, int k) {
  return top_k_logprobs(logits, vocab, k, log_sum_exp(logits, vocab));
}

struct Generation {
  tensor::Tensor prompt_logits;  // [T, V] of the prefill
  std::vector<int64_t> ids;      // the generated tokens
  std::vector<TopK> top5;        // per generated token: the top 5 of the logits it came from
  double prefill_s = 0, decode_s = 0;
};

// Prefills `prompt` into a new sequence, then greedily decodes `steps` tokens one by one.
// `probes` captures the prefill's probes. The sequence is freed at the end. `image_features` and,
// with M-RoPE, `image_grids`: the prompt's images (Executor::forward).
// `chunk` > 0: the prefill runs as forward passes of at most `chunk` tokens each (chunked
// prefill: each chunk attends to the cached keys of the ones before and carries the linear-
// attention state on); prompt_logits are the chunks' rows in order, and `probes` must append
// rows (ProbeRecorder's append_rows). Not with images.
Generation generate_greedy(Executor& ex, const std::vector<int64_t>& prompt, int steps,
                           ProbeRecorder* probes = nullptr,
                           const tensor::Tensor* image_features = nullptr,
                           const std::vector<ImageGrid>& image_grids = {}, int64_t chunk = 0);

// An image file run through the vision tower of `ex`'s model (config/tower.h) with the processor
// of `model_dir`: its features [N, D] for generate_greedy, and its grid where M-RoPE places the
// image by one. InputError naming `image_path` for a model without a tower.
struct ImageInput {
  tensor::Tensor features;
  std::vector<ImageGrid> grids;
};
ImageInput image_input(Executor& ex, const std::string& model_dir, const std::string& image_path,
                       ProbeRecorder* probes = nullptr);

// A prompt of `n` token ids below min(vocabulary, 1000) (spread, deterministic): what `model run`
// and the Day-0 performance snapshot time.
std::vector<int64_t> synthetic_prompt(const model::Architecture& arch, int64_t n);

}  // namespace h0::model
