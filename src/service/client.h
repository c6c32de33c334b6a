// A client of the OpenAI-compatible HTTP API every serving engine speaks (vLLM, SGLang, TGI,
// llama.cpp's server, `harness serve`), over libcurl: /v1/models, /v1/completions and
// /v1/chat/completions (text and image_url content parts), streaming (SSE) or not.
// Server and network failures are results, never exceptions: a check records them and the run
// goes on. Retries (with backoff) only when no response byte arrived: connection refused, reset
// or unresolved. The API key is sent as a bearer token and appears in no result, error or log.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "service/dialect.h"

namespace h0::service {

struct ClientOptions {
  std::string base_url;  // "http://127.0.0.1:8000" (the /v1 paths are appended)
  std::string api_key;   // empty: no Authorization header
  double connect_timeout_s = 10;
  double request_timeout_s = 300;  // the whole request, first byte to last
  // No byte for this long is a timeout: for a stream from the request on (a first token that
  // never comes is a hang too), for a plain response once its first byte came. Fractional.
  double idle_timeout_s = 60;
  int retries = 3;         // extra attempts after a connection error
  double backoff_s = 0.2;  // before the first retry; doubled before each next one
};

struct ContentPart {
  std::string type;  // "text" or "image_url"
  std::string text;  // type text
  std::string url;   // type image_url: "data:image/png;base64,..." or http(s)
};
struct ChatMessage {
  std::string role;                  // "system", "user", "assistant"
  std::vector<ContentPart> content;  // one text part is sent as a plain string
};

struct Sampling {
  int64_t max_tokens = 16;
  double temperature = 0;
  std::optional<uint64_t> seed;
  std::optional<int64_t> top_k;  // sent only when set (not every server accepts it)
  std::optional<double> top_p;
  int top_logprobs = 0;          // > 0: ask for logprobs with this many alternatives per token
  bool ignore_eos = false;       // vLLM's extension: generate max_tokens even past the end token
  bool return_token_ids = true;  // vLLM's extension: token ids of prompt and completion
};

struct Request {
  std::string model;
  // A chat request when `messages` is non-empty; else a completion of `prompt_ids` when
  // non-empty (a prompt of token ids), else of `prompt`.
  std::vector<ChatMessage> messages;
  std::string prompt;
  std::vector<int64_t> prompt_ids;
  // Completions: the prompt comes back first, in the text and (with logprobs) in `tokens`, each
  // prompt token with the logprob the model gave it (the first with none): OpenAI's legacy
  // `echo`, how a loglikelihood is scored over the API.
  bool echo = false;
  Sampling sampling;
  bool stream = false;
  // Extra top-level fields merged into the body (a platform's own parameters), sent in the order
  // given: an engine hands objects such as a tool's `parameters` to the chat template as received,
  // and the template's tojson writes their keys in that order.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // What the engine accepts: the sampling extensions above are sent only where it does.
  Dialect dialect;
};

// One generated token (or one streamed chunk when the server gives no per-token data).
struct TokenInfo {
  // The token's text; for a chunk or response of several tokens known only by id (token_ids, or
  // logprob tokens "token_id:N"), the first holds the chunk's text and the others "".
  std::string text;
  std::optional<int64_t> id;
  std::optional<double> logprob;
  std::vector<std::pair<std::string, double>> top;  // top_logprobs: token text, logprob
  std::optional<int64_t> text_offset;  // completions: characters of the text before this token
  double arrival_s = 0;  // seconds from sending the request to the chunk that carried it
};

// A function call the engine's tool-call parser found in the answer (chat). Streamed, the
// deltas of one index are joined: the id and name from the first, the arguments concatenated.
struct ToolCall {
  std::string id, type, name;
  std::string arguments;  // as the engine wrote it: a JSON text, not parsed here
};

enum class Outcome {
  kOk,         // a complete response (finish_reason set)
  kConnect,    // no connection after every retry
  kTimeout,    // request or idle timeout
  kHttpError,  // a non-2xx status, or an {"error": ...} object inside a stream
  kProtocol,   // malformed JSON or SSE, a stream that ended without [DONE], missing fields
};
const char* outcome_name(Outcome o);

struct Result {
  Outcome outcome = Outcome::kProtocol;
  std::string error;  // what went wrong, for a human; empty when ok
  int http_status = 0;
  int attempts = 0;
  std::string text;  // the completion's text (streamed chunks joined)
  // chat: the reasoning parser's part of the answer (message.reasoning, vLLM's name since 0.11,
  // or reasoning_content, DeepSeek's and SGLang's), streamed deltas joined; has_reasoning: either
  // field came as a string (an engine without a reasoning parser sends neither).
  std::string reasoning;
  bool has_reasoning = false;
  std::vector<int64_t> token_ids;  // when the server returned them
  std::vector<int64_t> prompt_token_ids;
  std::vector<TokenInfo> tokens;     // per token when logprobs or token ids came, else per chunk
  std::string finish_reason;         // "stop", "length", "tool_calls"
  std::vector<ToolCall> tool_calls;  // chat: message.tool_calls, or the deltas joined
  int64_t prompt_tokens = -1, completion_tokens = -1;  // usage; -1 when not reported
  // usage.prompt_tokens_details.cached_tokens: prompt tokens the engine's prefix cache served
  // (vLLM with --enable-prompt-tokens-details, OpenAI); -1 when not reported.
  int64_t cached_tokens = -1;
  // Request sent → first content chunk (streaming), or → first byte of the response.
  double ttft_s = -1;
  double e2e_s = -1;                    // request sent → last byte
  std::vector<double> chunk_arrival_s;  // streaming: arrival of each content-bearing chunk
  std::string body_tail;                // the last ≤ 2 KiB of the body, as evidence on errors
  std::vector<std::string> notes;       // leniencies of the dialect that applied (a missing [DONE])

  bool ok() const { return outcome == Outcome::kOk; }
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // GET `path` (e.g. "/health", "/v1/models"): true on a 2xx status within `timeout_s`.
  bool probe(const std::string& path, double timeout_s);
  // GET `path` (e.g. "/metrics"): the body of a 2xx answer in `body`; an error result otherwise.
  Result get(const std::string& path, std::string* body);
  // POST `body` (JSON text) to `path` (an engine's control endpoint, e.g. vLLM's /start_profile):
  // the answer's body in `response`. Not retried: such a call is not idempotent.
  Result post(const std::string& path, const std::string& body, std::string* response);
  // GET /v1/models: the model ids; an error result when the server did not answer properly.
  Result models(std::vector<std::string>* ids);
  // One request (thread-safe: concurrent calls on one Client are fine).
  Result complete(const Request& request);
  // The JSON body `complete` would send (for evidence and tests; holds no key).
  static nlohmann::json body(const Request& request);

  const ClientOptions& options() const { return options_; }

 private:
  ClientOptions options_;
};

}  // namespace h0::service
