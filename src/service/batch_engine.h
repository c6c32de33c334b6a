// Continuous batching over the executor's paged KV cache (the embedded server's engine).
// Requests are submitted from any thread and each gets its own stream of events; one scheduler
// thread owns the Executor and, every step, admits waiting requests while the cache has room
// for prompt + max_tokens, runs ONE forward_batch over all running sequences (new ones their
// prompt, running ones their last token), picks each next token (greedy argmax at temperature
// 0, else the `sample` op keyed by the request's seed and its own step index, so a token never
// depends on what else is in the batch), emits it, and retires finished sequences.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model/config/tower.h"
#include "model/exec/executor.h"
#include "model/vision/image.h"
#include "tensor/tensor.h"

namespace h0::service {

struct SamplingParams {
  int64_t max_tokens = 16;
  double temperature = 1.0;  // 0: greedy
  uint64_t seed = 0;
  int64_t top_k = 0;      // 0: no top-k
  double top_p = 1.0;     // 1: no nucleus
  int top_logprobs = -1;  // < 0: no logprobs; 0: the chosen token's only; N: and the N best
  // The prompt's own logprobs (OpenAI's `echo` with `logprobs`): < 0 none; else as top_logprobs,
  // for every prompt token after the first, from the prefill's logits.
  int prompt_logprobs = -1;
  bool ignore_eos = false;
};

struct GenerationRequest {
  std::vector<int64_t> prompt;
  SamplingParams sampling;
  // Each image of the prompt, in order, as the model's tower takes it (its ImageProcessor's
  // pixels). Features are computed on the scheduler thread.
  std::vector<model::TowerPixels> images;
};

struct TokenEvent {
  int64_t id = -1;
  double logprob = 0;                           // log_softmax of the raw logits, f64
  std::vector<std::pair<int64_t, double>> top;  // the top_logprobs best: id, logprob
};

// What a request's stream yields: tokens, the last one with its finish reason, or an error.
struct StreamEvent {
  enum class Kind { kToken, kError };
  Kind kind = Kind::kToken;
  TokenEvent token;
  // On the first token, when the request asked for prompt_logprobs: prompt tokens 1..T-1, each
  // scored by the logits of the position before it (the first prompt token has no logprob).
  std::vector<TokenEvent> prompt;
  std::string
      finish_reason;  // set on the last token: "stop" (an end-of-sequence token) or "length"
  std::string error;  // kError: what failed (the request's fault or the platform's)
  bool request_error = false;  // kError: the request itself is invalid (HTTP 400), else 500

  bool last() const { return kind == Kind::kError || !finish_reason.empty(); }
};

// One request's events, produced by the scheduler and consumed by one HTTP thread.
class RequestStream {
 public:
  // Blocks until the next event. After the last() one there are no more.
  StreamEvent next();
  // Asks the scheduler to drop the request (the client went away); no further events.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

 private:
  friend class BatchEngine;
  void push(StreamEvent e);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamEvent> events_;
  std::atomic<bool> cancelled_{false};
};

struct EngineOptions {
  int max_batch = 16;                 // sequences per forward pass
  int64_t max_prefill_tokens = 4096;  // prompt tokens admitted per step (one prompt always fits)
  std::vector<int64_t> eos_ids;       // tokens that end a sequence (unless ignore_eos)
  // The model's image processor (config/tower.h; null for a text-only model). Not owned.
  const model::ImageProcessor* images = nullptr;
};

// Counters since start, for /metrics and the benchmark.
struct EngineStats {
  int64_t steps = 0;
  int64_t batched_sequences = 0;  // Σ sequences per step (mean batch = this / steps)
  int64_t max_batch = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t finished = 0, failed = 0, cancelled = 0;
  int64_t running = 0, waiting = 0;
};

class BatchEngine {
 public:
  // Starts the scheduler thread. `executor` is used by that thread only from here on.
  BatchEngine(model::Executor& executor, EngineOptions options);
  // Stops the scheduler; requests still open end with an error.
  ~BatchEngine();
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;

  // Queues a request (thread-safe). A request that can never fit in the KV cache, or with an
  // id outside the vocabulary, gets its error event at once.
  std::shared_ptr<RequestStream> submit(GenerationRequest request);
  // Ends the scheduler after the current step; open requests end with an error.
  void stop();

  EngineStats stats() const;
  // KV cache capacity in tokens.
  int64_t kv_capacity() const { return capacity_blocks_ * block_size_; }

 private:
  struct Active;
  void loop();
  // Admits waiting requests that fit next to `running` sequences (under mu_); returns them.
  std::vector<std::unique_ptr<Active>> admit_locked(size_t running);
  bool prepare(Active& a);  // new sequence, image features; false (and an error event) on failure
  void step(std::vector<std::unique_ptr<Active>>& running);
  // Frees the sequence and its reservation; `end` (a last() event) goes to the stream.
  void finish(Active& a, StreamEvent end);
  int64_t blocks_for(const GenerationRequest& r) const;

  model::Executor& ex_;
  EngineOptions options_;
  int64_t block_size_ = 16, capacity_blocks_ = 0, reserved_blocks_ = 0;  // reserved_: under mu_
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Active>> waiting_;
  bool stopping_ = false;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace h0::service
