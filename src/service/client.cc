// The transport of client.h: libcurl, one easy handle per attempt, driven through its own multi
// handle so that the idle timeout is checked every few milliseconds rather than once a second.
#include "service/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "base/check.h"
#include "base/json_read.h"
#include "base/utf8.h"
#include "service/json_util.h"
#include "service/openai_protocol.h"
#include "service/sse.h"

namespace h0::service {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kTailBytes = 2048;  // Result::body_tail
constexpr int kPollMs = 50;          // the longest wait between idle-timeout checks

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// "0.5", "600": seconds for messages.
std::string format_s(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", s);
  return text;
}

// `text` with each byte that is not part of valid UTF-8 replaced by U+FFFD, cut to at most
// `max_bytes` on a character boundary (server bytes going into messages and the store).
std::string clean_utf8(std::string_view text, size_t max_bytes = std::string::npos) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool valid = n > 0 && i + n <= text.size();
    for (size_t k = 1; valid && k < n; ++k) valid = (text[i + k] & 0xC0) == 0x80;
    std::string_view piece = valid ? text.substr(i, n) : kReplacementCharacter;
    if (out.size() + piece.size() > max_bytes) break;
    out.append(piece);
    i += valid ? n : 1;
  }
  return out;
}

// `text` parsed as JSON; if that fails, parsed again with invalid UTF-8 replaced (server text
// may hold broken characters). Discarded when neither parses.
json parse_json(std::string_view text) {
  json parsed = base::parse_json_or_discarded(text);
  if (parsed.is_discarded()) parsed = base::parse_json_or_discarded(clean_utf8(text));
  return parsed;
}

// The last ≤ kTailBytes of `text`, starting on a character boundary.
std::string tail_of(const std::string& text) {
  size_t start = text.size() > kTailBytes ? text.size() - kTailBytes : 0;
  while (start < text.size() && (text[start] & 0xC0) == 0x80) ++start;
  return clean_utf8(std::string_view(text).substr(start), kTailBytes);
}

// "1 token", "3 tokens".
std::string count(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { H0_CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK); });
}

// GET, a POST whose body is only kept (an engine's control endpoint), or POST of a completion
// whose 2xx body is read into the Result.
enum class Kind { kGet, kPost, kCompletion, kChat };

// One attempt's state, shared with libcurl's write callback.
struct Transfer {
  CURL* easy = nullptr;
  Kind kind = Kind::kGet;
  bool stream = false;
  Result* result = nullptr;
  Clock::time_point start;
  Clock::time_point last_byte;
  double first_byte_s = -1;
  long status = 0;  // known once the first body byte arrived
  size_t bytes = 0;
  std::string body;  // the whole body, except of a 2xx stream (read as it arrives)
  std::string tail;  // the last ≥ kTailBytes received
  SseParser sse;
  std::optional<Outcome> failed;  // set when the callback aborted the transfer
  std::string failure;

  bool reading_stream() const { return stream && status >= 200 && status < 300; }
  // Aborts the transfer (the callback returns 0) with `outcome` and `why`.
  size_t fail(Outcome outcome, std::string why) {
    failed = outcome;
    failure = std::move(why);
    return 0;
  }
};

// Reads one SSE event of a 2xx stream into the result; 0 aborts the transfer.
size_t read_event(Transfer* t, const SseEvent& event, double arrival_s) {
  size_t n = t->sse.events();
  json chunk = parse_json(event.data);
  bool is_error = event.type == "error" || (chunk.is_object() && chunk.contains("error"));
  if (chunk.is_discarded() && !is_error) {
    return t->fail(Outcome::kProtocol, "stream chunk " + std::to_string(n) +
                                           " is not JSON: " + clean_utf8(event.data, 200));
  }
  if (is_error) {
    // vLLM reports a failure inside a 200 stream as {"error": {"message", "code": 400}}.
    const json& error = chunk.is_object() ? chunk.value("error", json()) : json();
    if (error.is_object() && error.value("code", json()).is_number_integer()) {
      t->result->http_status = error["code"].get<int>();
    }
    std::string message = error_message(chunk);
    return t->fail(Outcome::kHttpError,
                   "error in the stream after " + count(n - 1, "chunk") + ": " +
                       clean_utf8(message.empty() ? event.data : message, 500));
  }
  std::string bad = read_response(chunk, t->kind == Kind::kChat, true, arrival_s, t->result);
  if (!bad.empty()) {
    return t->fail(Outcome::kProtocol, "stream chunk " + std::to_string(n) + ": " + bad);
  }
  return 1;
}

size_t on_write(char* data, size_t size, size_t items, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * items;
  t->last_byte = Clock::now();
  double now_s = seconds(t->last_byte - t->start);
  if (t->first_byte_s < 0) t->first_byte_s = now_s;
  if (t->status == 0) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->status);
  t->bytes += len;
  t->tail.append(data, len);
  if (t->tail.size() > 4 * kTailBytes) t->tail.erase(0, t->tail.size() - kTailBytes);
  if (!t->reading_stream()) {
    t->body.append(data, len);
    return len;
  }
  std::vector<SseEvent> events;
  bool well_formed = t->sse.feed(std::string_view(data, len), &events);
  for (const SseEvent& event : events) {
    if (read_event(t, event, now_s) == 0) return 0;
  }
  if (!well_formed) {
    return t->fail(Outcome::kProtocol, "malformed SSE after " + count(t->sse.events(), "chunk") +
                                           ": " + t->sse.error());
  }
  return len;
}

// A NO_PROXY list that keeps loopback off any proxy the environment names, and keeps the
// environment's own exceptions.
std::string no_proxy_list() {
  std::string list = "localhost,127.0.0.1,::1";
  for (const char* name : {"NO_PROXY", "no_proxy"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return list + "," + value;
  }
  return list;
}

// Limits of one attempt, in seconds (≤ 0: none).
struct Limits {
  double connect_s, total_s, idle_s;
  bool done_required = true;  // a stream must end in data: [DONE] (else: after a finish_reason)
};

// The request's headers: no "Expect: 100-continue", the body's and the stream's types, and the
// API key. The caller frees the list.
curl_slist* request_headers(const ClientOptions& options, bool post, bool stream) {
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");
  if (post) headers = curl_slist_append(headers, "Content-Type: application/json");
  if (stream) headers = curl_slist_append(headers, "Accept: text/event-stream");
  if (!options.api_key.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + options.api_key).c_str());
  }
  return headers;
}

// Sets up `t.easy` for one exchange with `url`; the strings, `headers`, `curl_error` and `t`
// must outlive the transfer.
void set_options(Transfer& t, const std::string& url, const std::string& no_proxy,
                 curl_slist* headers, char* curl_error, const Limits& limits,
                 const std::string* post) {
  CURL* easy = t.easy;
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_VERBOSE, 0L);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_NOPROXY, no_proxy.c_str());
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, curl_error);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
  if (limits.connect_s > 0) {
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, std::max(1L, long(limits.connect_s * 1e3)));
  }
  if (limits.total_s > 0) {
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, std::max(1L, long(limits.total_s * 1e3)));
  }
  if (post != nullptr) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, post->data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(post->size()));
  }
}

// How a driven transfer ended, as libcurl saw it.
struct Ended {
  CURLcode code = CURLE_OK;
  bool idle = false;  // stopped by the idle timeout
  double end_s = 0;   // seconds since the start
  curl_off_t connect_us = 0, pretransfer_us = 0;
};

// Drives the transfer, checking the idle timeout between waits. A stream is idle from the
// start (no first token is a hang too); a plain response only once it has begun.
Ended drive(Transfer& t, const Limits& limits) {
  Ended e;
  CURLM* multi = curl_multi_init();
  H0_CHECK(multi != nullptr) << "curl_multi_init failed";
  curl_multi_add_handle(multi, t.easy);
  t.start = t.last_byte = Clock::now();
  int running = 1;
  while (curl_multi_perform(multi, &running) == CURLM_OK && running > 0) {
    double quiet = seconds(Clock::now() - t.last_byte);
    bool idle_applies = limits.idle_s > 0 && (t.stream || t.bytes > 0);
    if (idle_applies && quiet >= limits.idle_s) {
      e.idle = true;
      break;
    }
    int wait_ms = kPollMs;
    if (idle_applies) wait_ms = std::clamp(int((limits.idle_s - quiet) * 1e3) + 1, 1, kPollMs);
    curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
  }
  int queued = 0;
  while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
    if (message->msg == CURLMSG_DONE) e.code = message->data.result;
  }
  e.end_s = seconds(Clock::now() - t.start);
  curl_easy_getinfo(t.easy, CURLINFO_CONNECT_TIME_T, &e.connect_us);
  curl_easy_getinfo(t.easy, CURLINFO_PRETRANSFER_TIME_T, &e.pretransfer_us);
  if (t.status == 0) curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &t.status);
  curl_multi_remove_handle(multi, t.easy);
  curl_multi_cleanup(multi);
  return e;
}

// The exchange's outcome and error into `result`, from how it ended. Returns whether the
// failure is one to retry: no connection, or a connection reset before any byte came back.
bool set_outcome(const Transfer& t, const Ended& e, const Limits& limits, const std::string& url,
                 const std::string& path, const char* curl_error, const std::string& raw_body,
                 Result* result) {
  const bool stream = t.stream;
  const CURLcode code = e.code;
  const std::string tokens = count(result->tokens.size(), "token");
  bool connected = e.connect_us > 0 || e.pretransfer_us > 0 || t.bytes > 0;
  bool retry = false;
  if (t.failed) {
    result->outcome = *t.failed;
    result->error = t.failure;
  } else if (e.idle) {
    result->outcome = Outcome::kTimeout;
    result->error = "no data for " + format_s(limits.idle_s) + " s after " +
                    (stream ? tokens : count(t.bytes, "byte") + " of the response");
  } else if (code == CURLE_OPERATION_TIMEDOUT && connected) {
    result->outcome = Outcome::kTimeout;
    result->error = "no complete response within " + format_s(limits.total_s) + " s (" +
                    (stream ? tokens : count(t.bytes, "byte")) + " so far)";
  } else if (code != CURLE_OK && t.bytes == 0 && t.status == 0) {
    // No response at all: refused, unresolved, connect timeout, or reset before any byte.
    result->outcome = Outcome::kConnect;
    result->error = url + ": " + (curl_error[0] ? curl_error : curl_easy_strerror(code));
    retry = code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
            code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_OPERATION_TIMEDOUT ||
            code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING;
  } else if (t.status < 200 || t.status >= 300) {
    json body = parse_json(raw_body);
    std::string message = body.is_discarded() ? "" : error_message(body);
    if (message.empty()) message = raw_body.empty() ? "(empty body)" : raw_body;
    result->outcome = Outcome::kHttpError;
    result->error =
        "HTTP " + std::to_string(t.status) + " from " + path + ": " + clean_utf8(message, 500);
  } else if (code != CURLE_OK) {  // cut after the response began
    std::string why = curl_error[0] ? curl_error : curl_easy_strerror(code);
    result->outcome = Outcome::kProtocol;
    result->error =
        stream ? "stream ended after " + count(t.sse.events(), "chunk") + " without [DONE]: " + why
               : "response cut after " + count(t.bytes, "byte") + ": " + why;
  } else if (stream && !t.sse.done() && !limits.done_required && !t.sse.partial()) {
    result->outcome = Outcome::kOk;  // finish_completion still asks for a finish_reason
    result->notes.push_back("the stream ended without data: [DONE]");
  } else if (stream && !t.sse.done()) {
    result->outcome = Outcome::kProtocol;
    result->error = "stream ended after " + count(t.sse.events(), "chunk") + " without [DONE]" +
                    (t.sse.partial() ? ", cut inside an event" : "");
  } else {
    result->outcome = Outcome::kOk;
  }
  return retry;
}

// One HTTP exchange: fills `result` (outcome, error, status, timing and, for completions, the
// response) and `raw_body` (the body unless it was a 2xx stream). Returns whether the failure
// is one to retry: no connection, or a connection reset before any byte came back.
bool attempt(const ClientOptions& options, const std::string& path, const std::string* post,
             Kind kind, bool stream, const Limits& limits, Result* result, std::string* raw_body) {
  CURL* easy = curl_easy_init();
  H0_CHECK(easy != nullptr) << "curl_easy_init failed";
  std::string base = options.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url = base + path;
  curl_slist* headers = request_headers(options, post != nullptr, stream);
  std::string no_proxy = no_proxy_list();
  char curl_error[CURL_ERROR_SIZE] = {};
  Transfer t;
  t.easy = easy;
  t.kind = kind;
  t.stream = stream;
  t.result = result;
  set_options(t, url, no_proxy, headers, curl_error, limits, post);
  const Ended ended = drive(t, limits);
  curl_easy_cleanup(easy);
  curl_slist_free_all(headers);

  result->http_status = result->http_status ? result->http_status : int(t.status);
  result->e2e_s = ended.end_s;
  if (!stream) result->ttft_s = t.first_byte_s;
  *raw_body = std::move(t.body);
  const bool retry = set_outcome(t, ended, limits, url, path, curl_error, *raw_body, result);
  if (result->outcome != Outcome::kOk) result->body_tail = tail_of(t.tail);
  return retry;
}

// Reads a 2xx non-streaming completion body into `result`; checks any completion's end.
void finish_completion(Kind kind, bool stream, const std::string& raw_body, Result* result) {
  if (!stream) {
    json body = parse_json(raw_body);
    std::string bad = body.is_discarded()
                          ? "the response is not JSON"
                          : read_response(body, kind == Kind::kChat, false, result->ttft_s, result);
    if (!bad.empty()) {
      result->outcome = Outcome::kProtocol;
      result->error = bad;
      result->body_tail = tail_of(raw_body);
      return;
    }
  }
  if (result->finish_reason.empty()) {
    result->outcome = Outcome::kProtocol;
    result->error =
        stream ? "the stream ended without a finish_reason" : "the response has no finish_reason";
    if (!stream) result->body_tail = tail_of(raw_body);
  }
}

// Replaces every occurrence of `secret` in `text` with "***".
void scrub(const std::string& secret, std::string* text) {
  if (secret.empty()) return;
  for (size_t at = text->find(secret); at != std::string::npos; at = text->find(secret, at + 3)) {
    text->replace(at, secret.size(), "***");
  }
}

// Every text of `result` with `secret` masked: an answer that echoes the key (in its text, a
// token, a note) is stored and printed, so it must not carry it.
void scrub_result(const std::string& secret, Result* result) {
  if (secret.empty()) return;
  for (std::string* s : {&result->error, &result->body_tail, &result->text, &result->finish_reason})
    scrub(secret, s);
  for (std::string& note : result->notes) scrub(secret, &note);
  for (TokenInfo& token : result->tokens) {
    scrub(secret, &token.text);
    for (auto& [text, logprob] : token.top) scrub(secret, &text);
  }
}

// `attempt` with retries and backoff; the Result of the last attempt, its `attempts` set.
Result exchange(const ClientOptions& options, const std::string& path, const std::string* post,
                Kind kind, bool stream, const Limits& limits, int retries, std::string* raw_body) {
  init_curl_once();
  Result result;
  double backoff_s = options.backoff_s;
  for (int n = 1;; ++n) {
    result = Result{};
    bool retry = attempt(options, path, post, kind, stream, limits, &result, raw_body);
    result.attempts = n;
    if (!retry || n > retries) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff_s));
    backoff_s *= 2;
  }
  if (result.outcome == Outcome::kConnect) {
    result.error = "cannot connect to " + result.error + " (" + std::to_string(result.attempts) +
                   (result.attempts == 1 ? " attempt)" : " attempts)");
  }
  if (result.ok() && (kind == Kind::kCompletion || kind == Kind::kChat))
    finish_completion(kind, stream, *raw_body, &result);
  scrub_result(options.api_key, &result);
  return result;
}

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kConnect:
      return "connect";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kHttpError:
      return "http_error";
    case Outcome::kProtocol:
      return "protocol";
  }
  return "protocol";
}

Client::Client(ClientOptions options) : options_(std::move(options)) { init_curl_once(); }

Client::~Client() = default;

bool Client::probe(const std::string& path, double timeout_s) {
  Limits limits{std::min(options_.connect_timeout_s, timeout_s), timeout_s, 0};
  std::string body;
  Result result = exchange(options_, path, nullptr, Kind::kGet, false, limits, 0, &body);
  return result.ok();
}

Result Client::get(const std::string& path, std::string* body) {
  Limits limits{options_.connect_timeout_s, options_.request_timeout_s, options_.idle_timeout_s};
  body->clear();
  Result result =
      exchange(options_, path, nullptr, Kind::kGet, false, limits, options_.retries, body);
  if (!result.ok()) body->clear();
  return result;
}

Result Client::post(const std::string& path, const std::string& body, std::string* response) {
  Limits limits{options_.connect_timeout_s, options_.request_timeout_s, options_.idle_timeout_s};
  response->clear();
  return exchange(options_, path, &body, Kind::kPost, false, limits, 0, response);
}

Result Client::models(std::vector<std::string>* ids) {
  ids->clear();
  Limits limits{options_.connect_timeout_s, options_.request_timeout_s, options_.idle_timeout_s};
  std::string raw;
  Result result =
      exchange(options_, "/v1/models", nullptr, Kind::kGet, false, limits, options_.retries, &raw);
  if (!result.ok()) return result;
  json body = parse_json(raw);
  const json* data = body.is_object() && body.contains("data") ? &body["data"] : nullptr;
  bool well_formed = data != nullptr && data->is_array();
  for (size_t i = 0; well_formed && i < data->size(); ++i) {
    const json& model = (*data)[i];
    well_formed = model.is_object() && model.contains("id") && model["id"].is_string();
    if (well_formed) ids->push_back(model["id"].get<std::string>());
  }
  if (!well_formed) {
    ids->clear();
    result.outcome = Outcome::kProtocol;
    result.error = "/v1/models did not answer {\"data\": [{\"id\": ...}]}";
    result.body_tail = tail_of(raw);
    scrub(options_.api_key, &result.body_tail);
  }
  return result;
}

Result Client::complete(const Request& request) {
  bool chat = !request.messages.empty();
  std::string post =
      request_body(request).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  Limits limits{options_.connect_timeout_s, options_.request_timeout_s, options_.idle_timeout_s,
                request.dialect.done_marker};
  std::string raw;
  return exchange(options_, chat ? "/v1/chat/completions" : "/v1/completions", &post,
                  chat ? Kind::kChat : Kind::kCompletion, request.stream, limits, options_.retries,
                  &raw);
}

nlohmann::json Client::body(const Request& request) {
  return nlohmann::json(request_body(request));
}

}  // namespace h0::service
