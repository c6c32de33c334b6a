// The embedded OpenAI-compatible server (`harness serve`): cpp-httplib in front of a
// BatchEngine. Endpoints: GET /health, GET /metrics (Prometheus text: engine counters),
// GET /v1/models, POST /v1/completions, POST /v1/chat/completions — OpenAI's request and
// response shapes, SSE streaming, plus vLLM's extensions: ignore_eos, top_k, return_token_ids
// (prompt_token_ids and token_ids), return_tokens_as_token_ids ("token_id:<id>" in logprobs).
// Errors are OpenAI error objects {"error": {"message", "type", "param", "code"}} with 400
// (the field named), 401, 404 (an unknown model) or 500 (the platform failed).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/vision/image.h"
#include "service/batch_engine.h"
#include "service/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace h0::service {

// What the server knows of the model it serves.
struct ServedModel {
  std::string name;  // the id clients send as "model"
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::optional<ChatTemplate> chat;  // absent: chat requests are 400 with chat_error
  std::string chat_error;
  // The image token and the count per image (0: each image's own, TowerPixels::tokens).
  ImageTokens image;
  // The vision tower's image processor (config/tower.h); null for a text-only model.
  std::shared_ptr<const model::ImageProcessor> images;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0: a free port
  std::string api_key;  // non-empty: /v1/* requires "Authorization: Bearer <key>"
  int threads = 64;     // HTTP worker threads: concurrent connections served
  // Connections the kernel queues while every worker is busy; 0: 4 × threads, at least 256.
  // (cpp-httplib listens with a backlog of 5: 64 clients at once saw resets.)
  int backlog = 0;
  int listen_backlog() const { return backlog > 0 ? backlog : std::max(256, 4 * threads); }
};

class Server {
 public:
  Server(BatchEngine& engine, ServedModel model, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens; returns the port (the one picked for port 0). Throws InputError when the
  // address cannot be bound.
  int bind();
  // Serves until stop(); requests in flight complete first.
  void run();
  // Thread-safe; run() returns soon after.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace h0::service
