#include "service/batch_engine.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "base/error.h"
#include "model/exec/generation.h"
#include "model/exec/host_glue.h"

namespace h0::service {

struct BatchEngine::Active {
  GenerationRequest request;
  std::shared_ptr<RequestStream> stream;
  int64_t blocks = 0;  // reserved for prompt + max_tokens
  int seq = -1;
  bool prefilled = false;
  int64_t generated = 0, last = -1;
  tensor::Tensor features;              // every image's features, in prompt order
  std::vector<model::ImageGrid> grids;  // the images' grids, where the tower has them (M-RoPE)
};

namespace {

StreamEvent error_event(const std::string& what, bool request_error) {
  StreamEvent e;
  e.kind = StreamEvent::Kind::kError;
  e.error = what;
  e.request_error = request_error;
  return e;
}

// The chosen token's logprob and the `n` best, from the f32 logits row [V], in f64.
TokenEvent token_event(const float* row, int64_t vocab, int64_t id, int n) {
  TokenEvent t;
  t.id = id;
  if (n < 0) return t;
  const double lse = model::log_sum_exp(row, vocab);
  t.logprob = double(row[id]) - lse;
  if (n > 0) {
    const model::TopK top = model::top_k_logprobs(row, vocab, n, lse);
    for (size_t i = 0; i < top.ids.size(); ++i) t.top.emplace_back(top.ids[i], top.logprobs[i]);
  }
  return t;
}

}  // namespace

StreamEvent RequestStream::next() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !events_.empty(); });
  StreamEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void RequestStream::push(StreamEvent e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

BatchEngine::BatchEngine(model::Executor& executor, EngineOptions options)
    : ex_(executor), options_(std::move(options)) {
  const model::KvGeometry& g = ex_.kv_cache().geometry();
  block_size_ = g.block_size;
  capacity_blocks_ = ex_.kv_cache().free_blocks();
  options_.max_batch = std::max(1, options_.max_batch);
  thread_ = std::thread([this] { loop(); });
}

BatchEngine::~BatchEngine() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void BatchEngine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

EngineStats BatchEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

int64_t BatchEngine::blocks_for(const GenerationRequest& r) const {
  return (int64_t(r.prompt.size()) + r.sampling.max_tokens + block_size_ - 1) / block_size_;
}

std::shared_ptr<RequestStream> BatchEngine::submit(GenerationRequest request) {
  auto a = std::make_unique<Active>();
  a->stream = std::make_shared<RequestStream>();
  std::shared_ptr<RequestStream> stream = a->stream;
  const int64_t vocab = ex_.arch().text.vocab_size;
  const int64_t prompt = int64_t(request.prompt.size()), max_tokens = request.sampling.max_tokens;
  std::string bad;
  for (int64_t id : request.prompt) {
    if (id < 0 || id >= vocab) {
      bad = "prompt: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
            std::to_string(vocab) + ")";
      break;
    }
  }
  const SamplingParams& s = request.sampling;
  if (prompt == 0) bad = "prompt: empty (at least one token is required)";
  if (max_tokens < 1) bad = "max_tokens: must be at least 1, got " + std::to_string(max_tokens);
  if (!(s.temperature >= 0) || !(s.top_p > 0 && s.top_p <= 1) || s.top_k < 0 ||
      s.seed > uint64_t(INT64_MAX)) {
    bad =
        "sampling: temperature >= 0, top_p in (0, 1], top_k >= 0 and a seed in [0, 2^63) are "
        "required";
  }
  if (bad.empty() && blocks_for(request) > capacity_blocks_) {
    bad = "prompt (" + std::to_string(prompt) + " tokens) + max_tokens (" +
          std::to_string(max_tokens) +
          ") needs more KV cache than the server has: " + std::to_string(kv_capacity()) +
          " tokens (--kv-tokens)";
  }
  if (!bad.empty()) {
    a->stream->push(error_event(bad, true));
    return stream;
  }
  a->blocks = blocks_for(request);
  a->request = std::move(request);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      a->stream->push(error_event("the server is shutting down", false));
      return stream;
    }
    waiting_.push_back(std::move(a));
    stats_.waiting = int64_t(waiting_.size());
  }
  cv_.notify_all();
  return stream;
}

std::vector<std::unique_ptr<BatchEngine::Active>> BatchEngine::admit_locked(size_t running) {
  std::vector<std::unique_ptr<Active>> out;
  int64_t budget = options_.max_prefill_tokens;
  while (!waiting_.empty() && running + out.size() < size_t(options_.max_batch)) {
    Active& a = *waiting_.front();
    if (a.stream->cancelled()) {
      ++stats_.cancelled;
      waiting_.pop_front();
      continue;
    }
    const int64_t prompt = int64_t(a.request.prompt.size());
    // First come, first served: a request that does not fit yet waits, and so do those behind it.
    if (reserved_blocks_ + a.blocks > capacity_blocks_ || (!out.empty() && prompt > budget)) break;
    budget -= prompt;
    reserved_blocks_ += a.blocks;
    out.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  stats_.waiting = int64_t(waiting_.size());
  return out;
}

bool BatchEngine::prepare(Active& a) {
  try {
    const model::Architecture& arch = ex_.arch();
    const int64_t image_token = arch.vision ? arch.vision->image_token_index : -1;
    const int64_t marked =
        image_token < 0 ? 0
                        : std::count(a.request.prompt.begin(), a.request.prompt.end(), image_token);
    const model::Tower* tower = model::tower_of(arch);
    if (!a.request.images.empty() && (tower == nullptr || options_.images == nullptr))
      throw InputError("messages", "the model has no vision tower: images are not supported");
    for (const model::TowerPixels& px : a.request.images) {
      const tensor::Tensor f = tower->features(ex_, *options_.images, px);
      a.features = a.features.numel() == 0 ? f : model::glue::concat_rows(a.features, f);
      if (px.has_grid()) a.grids.push_back(px.grid);
    }
    const int64_t rows = a.request.images.empty() ? 0 : a.features.dim(0);
    if (marked != rows) {
      throw InputError("prompt", "holds " + std::to_string(marked) + " image tokens (id " +
                                     std::to_string(image_token) + ") but the images give " +
                                     std::to_string(rows) + " feature rows");
    }
    a.seq = ex_.new_sequence();
    return true;
  } catch (const InputError& e) {
    a.stream->push(error_event(e.what(), true));
  } catch (const std::exception& e) {
    a.stream->push(error_event(std::string("image features failed: ") + e.what(), false));
  }
  std::lock_guard<std::mutex> lock(mu_);
  reserved_blocks_ -= a.blocks;
  ++stats_.failed;
  return false;
}

void BatchEngine::finish(Active& a, StreamEvent end) {
  const bool ok = end.kind == StreamEvent::Kind::kToken;
  if (a.seq >= 0) ex_.free_sequence(a.seq);
  a.seq = -1;
  {  // counted before the client sees its last event
    std::lock_guard<std::mutex> lock(mu_);
    reserved_blocks_ -= a.blocks;
    ++(a.stream->cancelled() ? stats_.cancelled : ok ? stats_.finished : stats_.failed);
  }
  if (!a.stream->cancelled()) a.stream->push(std::move(end));
}

void BatchEngine::step(std::vector<std::unique_ptr<Active>>& running) {
  std::vector<model::BatchItem> items;
  int64_t prompt_tokens = 0;
  for (const auto& a : running) {
    if (a->prefilled) {
      items.push_back({a->seq, {a->last}, nullptr});
    } else {
      items.push_back({a->seq, a->request.prompt,
                       a->request.images.empty() ? nullptr : &a->features, a->grids});
      prompt_tokens += int64_t(a->request.prompt.size());
    }
  }
  std::vector<tensor::Tensor> logits;
  try {
    logits = ex_.forward_batch(items);
  } catch (const std::exception& e) {  // the platform failed: every sequence of the pass ends
    for (auto& a : running)
      finish(*a, error_event(std::string("forward pass failed: ") + e.what(), false));
    running.clear();
    return;
  }
  const int64_t V = ex_.arch().text.vocab_size;
  std::vector<tensor::Tensor> rows;  // each sequence's last row [1, V]
  std::vector<size_t> greedy;        // indices into running
  for (size_t i = 0; i < running.size(); ++i) {
    const int64_t T = logits[i].dim(0);
    rows.push_back(logits[i].slice_rows(T - 1, T));
    if (running[i]->request.sampling.temperature <= 0) greedy.push_back(i);
  }
  std::vector<int64_t> next(running.size(), -1);
  std::vector<std::string> failed(running.size());
  int64_t produced = 0;
  if (!greedy.empty()) {  // argmax is row by row: one op for all greedy rows
    tensor::Tensor stacked =
        tensor::Tensor::zeros(tensor::DType::kF32, {int64_t(greedy.size()), V});
    for (size_t g = 0; g < greedy.size(); ++g) {
      std::copy_n(rows[greedy[g]].data_as<float>(), V,
                  stacked.mutable_data_as<float>() + int64_t(g) * V);
    }
    try {
      const std::vector<int64_t> ids = ex_.greedy(stacked);
      for (size_t g = 0; g < greedy.size(); ++g) next[greedy[g]] = ids[g];
    } catch (const std::exception& e) {
      for (size_t g : greedy) failed[g] = std::string("argmax failed: ") + e.what();
    }
  }
  for (size_t i = 0; i < running.size(); ++i) {
    const SamplingParams& s = running[i]->request.sampling;
    if (s.temperature <= 0) continue;
    try {
      next[i] =
          ex_.sample(rows[i], s.temperature, s.top_k, s.top_p, s.seed, running[i]->generated)[0];
    } catch (const std::exception& e) {
      failed[i] = std::string("sampling failed: ") + e.what();
    }
  }
  for (size_t i = 0; i < running.size(); ++i) {
    Active& a = *running[i];
    if (!failed[i].empty()) {  // its sequence is dropped; the others go on
      finish(a, error_event(failed[i], false));
      continue;
    }
    ++produced;
    const SamplingParams& s = a.request.sampling;
    a.prefilled = true;
    a.last = next[i];
    ++a.generated;
    StreamEvent e;
    e.token = token_event(rows[i].data_as<float>(), V, next[i], s.top_logprobs);
    if (a.generated == 1 && s.prompt_logprobs >= 0) {  // this pass was the prefill
      const std::vector<int64_t>& prompt = a.request.prompt;
      const float* all = logits[i].data_as<float>();
      for (size_t t = 1; t < prompt.size(); ++t)
        e.prompt.push_back(token_event(all + int64_t(t - 1) * V, V, prompt[t], s.prompt_logprobs));
    }
    const bool eos = !s.ignore_eos && std::find(options_.eos_ids.begin(), options_.eos_ids.end(),
                                                next[i]) != options_.eos_ids.end();
    if (eos || a.generated >= s.max_tokens) {
      e.finish_reason = eos ? "stop" : "length";
      finish(a, std::move(e));
    } else if (!a.stream->cancelled()) {
      a.stream->push(std::move(e));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.steps;
  stats_.batched_sequences += int64_t(running.size());
  stats_.max_batch = std::max(stats_.max_batch, int64_t(running.size()));
  stats_.prompt_tokens += prompt_tokens;
  stats_.generated_tokens += produced;
}

void BatchEngine::loop() {
  std::vector<std::unique_ptr<Active>> running;
  for (;;) {
    std::vector<std::unique_ptr<Active>> admitted;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !running.empty(); });
      if (stopping_) break;
      admitted = admit_locked(running.size());
    }
    for (auto& a : admitted) {
      if (prepare(*a)) running.push_back(std::move(a));
    }
    for (auto& a : running) {  // clients that went away
      if (a->stream->cancelled()) finish(*a, error_event("cancelled", false));
    }
    std::erase_if(running, [](const auto& a) { return a->seq < 0; });
    if (!running.empty()) step(running);
    std::erase_if(running, [](const auto& a) { return a->seq < 0; });
    std::lock_guard<std::mutex> lock(mu_);
    stats_.running = int64_t(running.size());
  }
  for (auto& a : running) finish(*a, error_event("the server is shutting down", false));
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& a : waiting_) a->stream->push(error_event("the server is shutting down", false));
  waiting_.clear();
}

}  // namespace h0::service
