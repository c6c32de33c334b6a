// A scripted fake OpenAI-compatible server on loopback, for the client and launcher tests.
//
//   fake_openai_server --port N --mode MODE [--ready-after S] [--port-file F] [--auth-file F]
//                      [--exit-after-start]
//
// Plain POSIX sockets, one thread per connection, one request per connection ("Connection:
// close"), so that a test can script exactly how a response breaks. Routes: GET /health,
// GET /v1/models (id "fake-model"), POST /v1/completions and /v1/chat/completions, streaming
// (SSE, chunked) or not. Modes:
//   ok                deterministic tokens from a hash of the prompt: up to 8 tokens
//                     (max_tokens with ignore_eos), ids, logprobs and top_logprobs when asked,
//                     "token_id:N" token strings with return_tokens_as_token_ids, token_ids and
//                     prompt_token_ids with return_token_ids, usage
//   never_healthy     /health and /v1/models answer 503 forever
//   die_mid_stream    3 chunks (or half a plain body), then the process _exits
//   malformed_sse     1 chunk, then `data: {"choices": [` (not JSON)
//   bogus_sse         1 chunk, then a line that is neither an SSE field nor a comment
//   http_500          completions answer 500 with an OpenAI error JSON
//   http_429          completions answer 429 with an OpenAI error JSON
//   slow_tokens       1 chunk, then 10 s of silence before the rest
//   no_done           a complete stream ended by the chunked terminator without [DONE]
//   stream_error      1 chunk, then {"error": {"message", "code": 400}} (as vLLM reports
//                     a failure inside a 200 stream), then [DONE]
//   invalid_utf8      like ok, but the first token's text ends in a raw 0xFF byte
//   echo_auth         like ok, but the first token's text ends in the request's Authorization
//                     header (a server that echoes the caller's key in a successful answer)
//   nondeterministic  like ok, but each completion is held 150 ms, and one that overlapped
//                     another gets its 4th token changed (id + 1)
//   vllm_detokenizer  like ok, but a golden's text is replayed as vLLM 0.32's incremental
//                     detokenizer emits it (vllm_detokenizer.h): the prompt's held-back incomplete
//                     character comes out with the first token, a trailing one never
//   bos_in_echo_offsets  like ok, but an echo lists special tokens (the BOS) with their text and
//                     counts their characters in text_offset though the echoed text omits them,
//                     as vLLM 0.32 does
//   answers           a model of known accuracy for eval tests: a text completion whose prompt
//                     holds a marker <<N>> (its last one) answers " N" (right) for a share
//                     --known P of the prompts (by a hash of the prompt) and " N+1" for the rest;
//                     --lose Q turns a share Q of the right ones wrong (a platform that loses a
//                     few items, always in one direction). Other requests: as ok
//   serving           a serving engine (fake_serving.h): a hash "model" whose decode and
//                     prefill agree, a prefix cache, running requests, a KV pool that preempts
//                     (--kv-tokens N), prefill in chunks (--prefill-chunk N), speculative
//                     decoding counters (--spec-tokens K), /metrics with vLLM's names; each token
//                     2 ms; guided decoding, required / named tool calls, and auto ones (the
//                     first offered function the user message names). Its faults, one per
//                     serving feature: stale_prefix, batch_slot, chunk_off_by_one,
//                     preempt_position, lying_usage, decode_drift, guided_invalid, tool_args_split;
//                     the conversation layer's: template_drops_system (with --chat-goldens),
//                     reasoning_off_by_one (with --reasoning), auto_tool_miss, auto_args_invalid,
//                     ignores_constraints (free text for guided decoding and tool calls)
//   --profile-trace F --profile-dir D  (any mode) vLLM's profiler endpoints: POST /start_profile
//                     answers 200, POST /stop_profile writes F (a trace a real vLLM wrote) into D
//                     as rank0.<n>.pt.trace.json.gz, as vLLM writes its trace at the stop; without
//                     them both are 404, as vLLM started without --profiler-config
//   --kv-cache-info T,M,B  (any mode) /metrics carries vllm:cache_config_info with
//                     kv_cache_size_tokens T, kv_cache_memory_bytes M, block_size B, and the
//                     startup log says "CPU KV cache size: T tokens" (vLLM 0.32's line)
// --chat-goldens D (chat): a request equal to a rendering golden's (golden/chat format) reports
// the golden's prompt_token_ids as its prompt. --reasoning (with --tokenizer holding </think>): a
// thinking model's answer, split into `reasoning` and `content` (think() below).
// Outside the serving modes a chat request for guided decoding (response_format,
// structured_outputs) or tool calls (tools with a tool_choice other than none) is refused with a
// 400.
// --strict: as `transformers serve` (FastAPI, extra fields forbidden): a request field outside
// the documented OpenAI set is answered 422 {"detail": "Unexpected fields in the request:
// {...}"}; /v1/completions takes only a string prompt (400 otherwise); no logprobs and no token
// ids in any answer; a stream carries its usage in the last chunk and ends without [DONE].
// echo (completions, not streamed, with --tokenizer F): the prompt's tokens (its ids, or its text
// encoded with specials) come first in the logprobs, each with text_offset into the echoed text
// (the prompt's decode, specials skipped) and a logprob that depends on the id and position
// only (the first null), then the completion's.
// --golden-dir D [--tokenizer F] [--corrupt-at N]: a request equal to a golden's (golden/e2e
// format: chat messages, or a completion whose prompt is the golden's text or tokenizes to its
// prompt_token_ids with F) gets the golden's answer (its token ids, its text; streamed token by
// token when F is given), with token N replaced (id + 1, text re-decoded) under
// --corrupt-at; other requests get the ok mode's tokens. --model-name: the id /v1/models lists.
// --ready-after S: health answers 503 for S seconds. --exit-after-start: exits with status 3
// after 0.3 s. --port 0 binds a free port; it is printed and written to --port-file.
// --auth-file F: each /v1/ request writes its Authorization header (or nothing) to F.
// Logs a line on start and one per request to stdout; never the Authorization value.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "service/fake_serving.h"
#include "service/vllm_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Flags {
  int port = 0;
  std::string mode = "ok";
  double ready_after_s = 0;
  std::string port_file;
  std::string auth_file;
  bool exit_after_start = false;
  bool strict = false;
  std::string golden_dir, tokenizer, model_name = "fake-model";
  std::string chat_goldens;  // --chat-goldens: prompt rendering goldens (golden/chat format)
  bool reasoning = false;    // --reasoning: a thinking model (<think> ... </think>)
  // --kv-cache-info TOKENS,MEMORY,BLOCK: the KV cache vLLM 0.32 reports, as its /metrics
  // vllm:cache_config_info gauge and its startup log line "CPU KV cache size: N tokens".
  std::string kv_cache_info;
  std::string profile_trace, profile_dir;  // --profile-trace, --profile-dir
  int64_t corrupt_at = -1;
  double known = 0.6, lose = 0;   // mode answers
  fake_serving::Options serving;  // the serving modes' engine
};
Flags g_flags;
const Clock::time_point g_start = Clock::now();
std::mutex g_mutex;       // guards stdout, the auth file, g_last_auth and g_in_flight
std::string g_last_auth;  // the Authorization header of the last /v1/ request
// Requests being held by nondeterministic mode: each one's "overlapped another" flag.
std::set<bool*> g_in_flight;

void log(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::printf("fake_openai_server: %s\n", line.c_str());
  std::fflush(stdout);
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// --kv-cache-info's gauge, the labels vLLM 0.32 writes for it (a subset); "" without the flag.
std::string cache_config_info() {
  if (g_flags.kv_cache_info.empty()) return "";
  long long tokens = 0, memory = 0, block = 0;
  std::sscanf(g_flags.kv_cache_info.c_str(), "%lld,%lld,%lld", &tokens, &memory, &block);
  return "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
         "# TYPE vllm:cache_config_info gauge\n"
         "vllm:cache_config_info{block_size=\"" +
         std::to_string(block) +
         "\",cache_dtype=\"auto\",engine=\"0\",gpu_memory_utilization=\"0.92\","
         "kv_cache_memory_bytes=\"" +
         std::to_string(memory) + "\",kv_cache_size_tokens=\"" + std::to_string(tokens) +
         "\",num_gpu_blocks=\"" + std::to_string(block > 0 ? tokens / block : 0) + "\"} 1.0\n";
}

struct HttpRequest {
  std::string method, path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(size_t(n));
  }
  return true;
}

bool read_request(int fd, HttpRequest* request) {
  std::string buffer;
  char chunk[4096];
  size_t header_end;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0 || buffer.size() > (1 << 20)) return false;
    buffer.append(chunk, size_t(n));
  }
  size_t line_end = buffer.find("\r\n");
  std::string first = buffer.substr(0, line_end);
  size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
  if (sp1 == std::string::npos || sp2 <= sp1) return false;
  request->method = first.substr(0, sp1);
  request->path = first.substr(sp1 + 1, sp2 - sp1 - 1);
  for (size_t at = line_end + 2; at < header_end;) {
    size_t end = buffer.find("\r\n", at);
    std::string line = buffer.substr(at, end - at);
    at = end + 2;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    size_t value = line.find_first_not_of(' ', colon + 1);
    request->headers[name] = value == std::string::npos ? "" : line.substr(value);
  }
  size_t length = std::strtoul(request->headers["content-length"].c_str(), nullptr, 10);
  if (request->headers["expect"] == "100-continue") send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");
  request->body = buffer.substr(header_end + 4);
  while (request->body.size() < length) {
    ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    request->body.append(chunk, size_t(n));
  }
  return true;
}

std::string status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
  }
  return "Status";
}

std::string head(int status, const std::string& type, const std::string& extra) {
  return "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
         "\r\nContent-Type: " + type + "\r\nConnection: close\r\n" + extra + "\r\n";
}

// `body` as sent: its dump, with the marker turned into a raw 0xFF byte in invalid_utf8 mode.
constexpr std::string_view kBadByteMarker = "<0xFF>";
std::string wire(const json& body) {
  std::string text = body.dump(), out;
  size_t from = 0;
  for (size_t at; (at = text.find(kBadByteMarker, from)) != std::string::npos;) {
    out.append(text, from, at - from).push_back('\xFF');
    from = at + kBadByteMarker.size();
  }
  return out.append(text, from);
}

void respond(int fd, int status, const json& body, const std::string& extra_headers = "") {
  std::string text = wire(body);
  send_all(fd, head(status, "application/json",
                    extra_headers + "Content-Length: " + std::to_string(text.size()) + "\r\n") +
                   text);
}

json error_json(int status, const std::string& message) {
  return {{"error", {{"message", message}, {"type", "FakeError"}, {"code", status}}}};
}

// One HTTP chunk of a chunked body; an SSE event is "data: <json>\n\n".
bool send_chunk(int fd, std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return send_all(fd, std::string(size) + std::string(data) + "\r\n");
}
bool send_event(int fd, const json& data) { return send_chunk(fd, "data: " + wire(data) + "\n\n"); }

struct Token {
  int64_t id;
  std::string text;
  double logprob;
  fake_serving::Top top = {};  // the serving modes' top logprobs; else made up from id
  int part = 0;  // --reasoning: 0 content, 1 reasoning, 2 the end marker (in neither text)
};

// What a completion request asked for, and the tokens it gets.
struct Generation {
  bool chat = false, stream = false, usage_chunk = false, token_ids = false, as_ids = false;
  int top = 0;  // top_logprobs; 0: no logprobs
  std::string model;
  std::vector<int64_t> prompt_ids;
  std::vector<Token> tokens;
  std::string finish;
  // echo: the prompt's tokens (logprob NAN for the first), their text offsets, the echoed text.
  std::vector<Token> echoed;
  std::vector<int64_t> echo_offsets;
  std::string echo_text;
  // The serving modes: prompt tokens the prefix cache served (-1: not reported), whether usage
  // lies, the time each token takes.
  int64_t cached = -1;
  bool lying_usage = false;
  double token_delay_s = 0;
};

// --golden-dir: the golden files, read once; --tokenizer: the model's tokenizer.
std::vector<json> g_goldens;
std::unique_ptr<h0::tokenizer::Tokenizer> g_tokenizer;
std::unique_ptr<fake_serving::Engine> g_engine;  // the serving modes

std::string decode(const std::vector<int64_t>& ids) {
  std::vector<int32_t> v(ids.begin(), ids.end());
  return g_tokenizer->decode(v, true);
}

// One token's text: its decode with the tokenizer, else " w<id>".
std::string token_text(int64_t id) {
  if (!g_tokenizer) return " w" + std::to_string(id);
  return g_tokenizer->decode(std::vector<int32_t>{int32_t(id)}, false);
}

// The golden `request` equals, or null.
const json* golden_for(const json& request, bool chat) {
  for (const json& g : g_goldens) {
    const json& want = g["request"];
    if (chat != (g.value("endpoint", "") == "chat")) continue;
    if (chat && request.contains("messages") && want.contains("messages") &&
        request["messages"] == want["messages"])
      return &g;
    if (chat || !request.contains("prompt")) continue;
    const json& prompt = request["prompt"];
    if (want.contains("prompt") && prompt == want["prompt"]) return &g;
    if (want.contains("prompt_ids") && prompt == want["prompt_ids"]) return &g;
    if (prompt.is_string() && g_tokenizer) {
      const std::vector<int32_t> ids = g_tokenizer->encode(prompt.get<std::string>(), true);
      if (json(std::vector<int64_t>(ids.begin(), ids.end())) == g["prompt_token_ids"]) return &g;
    }
  }
  return nullptr;
}

// The golden's answer as tokens (one token per golden id, its text from the tokenizer's stream
// decode; without a tokenizer one token holding the whole text).
void replay(const json& golden, Generation* g) {
  std::vector<int64_t> ids = golden["token_ids"].get<std::vector<int64_t>>();
  g->prompt_ids = golden["prompt_token_ids"].get<std::vector<int64_t>>();
  std::string text = golden.value("text", "");
  if (g_flags.corrupt_at >= 0 && size_t(g_flags.corrupt_at) < ids.size()) {
    ids[size_t(g_flags.corrupt_at)] += 1;
    if (g_tokenizer) text = decode(ids);
  }
  g->tokens.clear();
  const json steps = golden.value("logprobs", json::array());
  if (g_tokenizer && g_flags.mode == "vllm_detokenizer") {
    h0::test::VllmDetokenizer stream(*g_tokenizer, g->prompt_ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      const double lp = i < steps.size() ? steps[i].value("logprob", -1.0) : -1.0;
      g->tokens.push_back({ids[i], stream.step(ids[i]), lp});
    }
  } else if (g_tokenizer) {
    // Each token's text: what decoding one more id adds, a trailing U+FFFD (an incomplete
    // character the next id may complete) held back until it is settled.
    std::string emitted;
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string cur = decode(std::vector<int64_t>(ids.begin(), ids.begin() + long(i) + 1));
      std::string piece;
      if (cur.compare(0, emitted.size(), emitted) == 0) piece = cur.substr(emitted.size());
      if (i + 1 < ids.size() && piece.size() >= 3 &&
          piece.compare(piece.size() - 3, 3, "\xEF\xBF\xBD") == 0)
        piece.resize(piece.size() - 3);
      emitted += piece;
      const double lp = i < steps.size() ? steps[i].value("logprob", -1.0) : -1.0;
      g->tokens.push_back({ids[i], piece, lp});
    }
    // What the stream held back (an incomplete character at the end) goes with the last token.
    std::string joined;
    for (const Token& t : g->tokens) joined += t.text;
    if (!g->tokens.empty() && text.compare(0, joined.size(), joined) == 0) {
      g->tokens.back().text += text.substr(joined.size());
    } else if (!g->tokens.empty()) {
      for (Token& t : g->tokens) t.text.clear();
      g->tokens[0].text = text;
    }
  } else {
    for (size_t i = 0; i < ids.size(); ++i) g->tokens.push_back({ids[i], i == 0 ? text : "", -1.0});
  }
  g->finish = golden.value("finish_reason", "length");
}

// --strict: the fields a strict server refuses, as transformers serve names them; "" if none.
std::string unexpected_fields(const json& request, bool chat) {
  static const std::set<std::string> kChat = {"model",
                                              "messages",
                                              "max_tokens",
                                              "max_completion_tokens",
                                              "temperature",
                                              "top_p",
                                              "n",
                                              "stream",
                                              "stream_options",
                                              "stop",
                                              "seed",
                                              "logprobs",
                                              "top_logprobs",
                                              "presence_penalty",
                                              "frequency_penalty",
                                              "logit_bias",
                                              "user",
                                              "response_format",
                                              "tools",
                                              "tool_choice"};
  static const std::set<std::string> kCompletion = {
      "model",      "prompt",  "max_tokens",       "temperature",
      "top_p",      "n",       "stream",           "stream_options",
      "stop",       "seed",    "logprobs",         "echo",
      "suffix",     "best_of", "presence_penalty", "frequency_penalty",
      "logit_bias", "user"};
  std::string out;
  for (const auto& [key, value] : request.items()) {
    if (!(chat ? kChat : kCompletion).contains(key)) out += (out.empty() ? "'" : ", '") + key + "'";
  }
  return out.empty() ? "" : "{" + out + "}";
}

// Mode answers: the completion for a prompt holding <<N>>, right or wrong as --known and
// --lose decide by the prompt's hash.
void answer_marker(const std::string& prompt, uint64_t hash, Generation* g) {
  const size_t open = prompt.rfind("<<"), close = prompt.rfind(">>");
  if (open == std::string::npos || close == std::string::npos || close < open) return;
  const int64_t n = std::atoll(prompt.substr(open + 2, close - open - 2).c_str());
  const bool known = double(hash % 10000) < g_flags.known * 10000;
  const bool lost = known && double((hash / 10000) % 10000) < g_flags.lose * 10000;
  const int64_t answer = known && !lost ? n : n + 1;
  g->tokens = {{1000 + answer % 30000, " " + std::to_string(answer), -0.1}};
  g->finish = "stop";
}

// echo: the prompt's tokens before the completion's, with text offsets as OpenAI counts them
// (characters of the echoed text), or as vLLM does in mode bos_in_echo_offsets (a special
// token's text counted too).
void echo_prompt(const json& prompt, Generation* g) {
  std::vector<int64_t> ids;
  if (prompt.is_array()) {
    ids = prompt.get<std::vector<int64_t>>();
  } else {
    for (const int32_t id : g_tokenizer->encode(prompt.get<std::string>(), true)) ids.push_back(id);
  }
  const bool vllm_offsets = g_flags.mode == "bos_in_echo_offsets";
  int64_t offset = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = int32_t(ids[i]);
    const bool special = g_tokenizer->is_special(id);
    const std::string text = g_tokenizer->decode(std::vector<int32_t>{id}, false);
    const double lp =
        i == 0 ? NAN : -(0.05 + double((uint64_t(id) * 7919 + i * 104729) % 1000) / 250.0);
    g->echoed.push_back({ids[i], text, lp});
    g->echo_offsets.push_back(offset);
    if (vllm_offsets || !special) {
      for (const char c : text) offset += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }
  }
  std::vector<int32_t> v(ids.begin(), ids.end());
  g->echo_text = g_tokenizer->decode(v, true);
}

Generation generate(const json& request, bool chat, bool overlapped) {
  Generation g;
  g.chat = chat;
  g.model = request.value("model", "fake-model");
  g.stream = request.value("stream", false);
  g.usage_chunk =
      request.contains("stream_options") && request["stream_options"].value("include_usage", false);
  g.token_ids = request.value("return_token_ids", false);
  g.as_ids = request.value("return_tokens_as_token_ids", false);
  if (chat && request.value("logprobs", false))
    g.top = std::max(1, request.value("top_logprobs", 1));
  if (!chat && request.contains("logprobs") && request["logprobs"].is_number_integer()) {
    g.top = std::max(1, request["logprobs"].get<int>());
  }
  const json& prompt = chat ? request["messages"] : request["prompt"];
  std::string key = prompt.dump();
  if (prompt.is_array() && !chat) {
    for (const json& id : prompt) g.prompt_ids.push_back(id.get<int64_t>());
  } else if (prompt.is_string() && !chat && g_tokenizer) {  // as an engine counts its prompt
    for (const int32_t id : g_tokenizer->encode(prompt.get<std::string>(), true))
      g.prompt_ids.push_back(id);
  } else {
    for (size_t i = 0; i < std::min<size_t>(key.size(), 64); ++i) {
      g.prompt_ids.push_back(static_cast<unsigned char>(key[i]));
    }
  }
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (char c : key) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  int64_t max_tokens = request.value("max_tokens", 16);
  int64_t n = request.value("ignore_eos", false) ? std::min<int64_t>(max_tokens, 512)
                                                 : std::min<int64_t>(max_tokens, 8);
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = 1000 + int64_t((hash + 7919 * uint64_t(i)) % 30000);
    g.tokens.push_back({id, " w" + std::to_string(id), -0.05 * double(i + 1) - 0.01 * (hash % 10)});
  }
  if (g_flags.mode == "invalid_utf8" && !g.tokens.empty()) g.tokens[0].text += kBadByteMarker;
  if (g_flags.mode == "echo_auth" && !g.tokens.empty()) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g.tokens[0].text += " " + g_last_auth;
  }
  if (overlapped && g.tokens.size() > 3) {
    g.tokens[3].id += 1;
    g.tokens[3].text = " w" + std::to_string(g.tokens[3].id);
  }
  g.finish = n < max_tokens ? "stop" : "length";
  if (g_flags.mode == "answers" && !chat && prompt.is_string())
    answer_marker(prompt.get<std::string>(), hash, &g);
  if (const json* golden = golden_for(request, chat)) replay(*golden, &g);
  if (!chat && request.value("echo", false) && g_tokenizer && !g.stream) echo_prompt(prompt, &g);
  if (g_flags.strict) g.top = 0, g.token_ids = g.as_ids = false;
  return g;
}

std::string token_string(const Generation& g, int64_t id, const std::string& text) {
  return g.as_ids ? "token_id:" + std::to_string(id) : text;
}

// The logprobs of tokens [begin, end) in the endpoint's format; null when not asked.
json logprobs_json(const Generation& g, size_t begin, size_t end) {
  if (g.top == 0) return nullptr;
  json content = json::array(), tokens = json::array(), values = json::array(),
       tops = json::array(), offsets = json::array();
  if (!g.echoed.empty() && begin == 0) {  // the prompt's tokens first, then the completion's
    for (size_t i = 0; i < g.echoed.size(); ++i) {
      const Token& t = g.echoed[i];
      const std::string text = token_string(g, t.id, t.text);
      tokens.push_back(text);
      values.push_back(std::isnan(t.logprob) ? json(nullptr) : json(t.logprob));
      json echo_top = {{text, t.logprob}};
      for (const auto& [id, lp] : t.top) echo_top[token_string(g, id, token_text(id))] = lp;
      tops.push_back(std::isnan(t.logprob) ? json(nullptr) : echo_top);
      offsets.push_back(g.echo_offsets[i]);
    }
  }
  int64_t offset = 0;
  if (!g.echoed.empty()) {  // the completion's offsets continue the echoed text's
    offset = g.echo_offsets.back();
    for (const char c : g.echoed.back().text)
      offset += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }
  for (size_t i = begin; i < end; ++i) {
    const Token& t = g.tokens[i];
    json top_list = json::array(), top_map = json::object();
    for (int k = 0; k < g.top; ++k) {
      if (!t.top.empty() && size_t(k) >= t.top.size()) break;
      int64_t id = t.top.empty() ? t.id + k : t.top[size_t(k)].first;
      std::string text =
          token_string(g, id, t.top.empty() ? " w" + std::to_string(id) : token_text(id));
      double logprob = t.top.empty() ? t.logprob - 0.5 * k : t.top[size_t(k)].second;
      top_list.push_back({{"token", text}, {"logprob", logprob}});
      top_map[text] = logprob;
    }
    std::string text = token_string(g, t.id, t.text);
    content.push_back({{"token", text}, {"logprob", t.logprob}, {"top_logprobs", top_list}});
    tokens.push_back(text);
    values.push_back(t.logprob);
    tops.push_back(top_map);
    offsets.push_back(offset);
    for (const char c : t.text) offset += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }
  if (g.chat) return {{"content", content}};
  json out = {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}};
  if (!g.echoed.empty()) out["text_offset"] = offsets;
  return out;
}

// A response (`streamed` false) or a chunk of tokens [begin, end).
json choice_json(const Generation& g, size_t begin, size_t end, bool streamed, bool last) {
  std::string text, reasoning;
  std::vector<int64_t> ids;
  for (size_t i = begin; i < end; ++i) {
    if (g.tokens[i].part == 0) text += g.tokens[i].text;
    if (g.tokens[i].part == 1) reasoning += g.tokens[i].text;
    ids.push_back(g.tokens[i].id);
  }
  json choice = {{"index", 0}, {"logprobs", logprobs_json(g, begin, end)}};
  if (!g.chat) {
    choice["text"] = (begin == 0 ? g.echo_text : std::string()) + text;
  } else if (streamed) {
    choice["delta"] = {{"content", text}};
    if (!reasoning.empty()) choice["delta"]["reasoning"] = reasoning;
  } else {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
    if (g_flags.reasoning)
      choice["message"]["reasoning"] = reasoning.empty() ? json() : json(reasoning);
  }
  choice["finish_reason"] = last ? json(g.finish) : json(nullptr);
  if (g.token_ids) choice["token_ids"] = ids;
  if (g.token_ids && !g.chat && begin == 0) choice["prompt_token_ids"] = g.prompt_ids;
  return choice;
}

json usage_json(const Generation& g) {
  const size_t completion = g.tokens.size() + (g.lying_usage ? 1 : 0);
  json usage = {{"prompt_tokens", g.prompt_ids.size()},
                {"completion_tokens", completion},
                {"total_tokens", g.prompt_ids.size() + completion}};
  if (g.cached >= 0) usage["prompt_tokens_details"] = {{"cached_tokens", g.cached}};
  return usage;
}

void plain_response(int fd, const Generation& g) {
  json body = {{"id", "fake-1"},
               {"object", g.chat ? "chat.completion" : "text_completion"},
               {"created", 0},
               {"model", g.model},
               {"choices", {choice_json(g, 0, g.tokens.size(), false, true)}},
               {"usage", usage_json(g)}};
  if (g.token_ids && g.chat) body["prompt_token_ids"] = g.prompt_ids;
  if (g_flags.mode == "die_mid_stream") {
    std::string text = wire(body);
    send_all(fd, head(200, "application/json",
                      "Content-Length: " + std::to_string(text.size()) + "\r\n") +
                     text.substr(0, text.size() / 2));
    log("dying mid-response");
    _exit(1);
  }
  if (g_flags.mode == "slow_tokens") sleep_s(10);
  sleep_s(g.token_delay_s * double(g.tokens.size()));
  respond(fd, 200, body);
}

void stream_response(int fd, const Generation& g) {
  const std::string& mode = g_flags.mode;
  send_all(fd, head(200, "text/event-stream",
                    "Cache-Control: no-cache\r\n"
                    "Transfer-Encoding: chunked\r\n"));
  send_chunk(fd, ": ping\n\n");
  json chunk = {{"id", "fake-1"},
                {"object", g.chat ? "chat.completion.chunk" : "text_completion"},
                {"created", 0},
                {"model", g.model}};
  if (g.chat) {  // the role first, with no content (as vLLM and OpenAI send it)
    json first = chunk;
    first["choices"] = {{{"index", 0},
                         {"delta", {{"role", "assistant"}, {"content", ""}}},
                         {"logprobs", nullptr},
                         {"finish_reason", nullptr}}};
    if (g.token_ids) first["prompt_token_ids"] = g.prompt_ids;
    if (!send_event(fd, first)) return;
  }
  for (size_t i = 0; i < g.tokens.size(); ++i) {
    if ((mode == "malformed_sse" || mode == "bogus_sse" || mode == "slow_tokens") && i == 1) {
      if (mode == "slow_tokens") {
        sleep_s(10);
      } else {
        send_chunk(fd, mode == "bogus_sse" ? "this is not sse\n\n" : "data: {\"choices\": [\n\n");
        send_chunk(fd, "");
        return;
      }
    }
    if (mode == "stream_error" && i == 1) {
      send_event(fd, error_json(400, "fake stream failure"));
      break;
    }
    if (mode == "die_mid_stream" && i == 3) {
      log("dying mid-stream");
      _exit(1);
    }
    sleep_s(g.token_delay_s);
    json next = chunk;
    next["choices"] = {choice_json(g, i, i + 1, true, i + 1 == g.tokens.size())};
    if (g_flags.strict && i + 1 == g.tokens.size())
      next["usage"] = usage_json(g);  // in the last chunk
    if (!send_event(fd, next)) return;
  }
  if (g_flags.strict) {  // as transformers serve: no usage chunk, no [DONE]; the stream just closes
    send_chunk(fd, "");
    return;
  }
  if (g.usage_chunk) {
    json usage = chunk;
    usage["choices"] = json::array();
    usage["usage"] = usage_json(g);
    send_event(fd, usage);
  }
  if (mode != "no_done") send_chunk(fd, "data: [DONE]\n\n");
  send_chunk(fd, "");  // the chunked terminator
}

// A chat answer that is one tool call, streamed as vLLM streams it (the id and name first, then
// the arguments in pieces) or not; mode tool_args_split loses the streamed arguments' last
// character.
void tool_call_response(int fd, const json& body, const std::string& name,
                        const std::string& arguments) {
  const json call = {{"id", "chatcmpl-tool-fake1"},
                     {"type", "function"},
                     {"function", {{"name", name}, {"arguments", arguments}}}};
  const std::string model = body.value("model", "fake-model");
  if (!body.value("stream", false)) {
    respond(fd, 200,
            {{"id", "fake-1"},
             {"object", "chat.completion"},
             {"created", 0},
             {"model", model},
             {"choices",
              {{{"index", 0},
                {"message", {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}}},
                {"finish_reason", "tool_calls"}}}},
             {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 3}, {"total_tokens", 8}}}});
    return;
  }
  send_all(fd, head(200, "text/event-stream",
                    "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"));
  auto chunk = [&](const json& delta, const json& finish) {
    send_event(fd, {{"id", "fake-1"},
                    {"object", "chat.completion.chunk"},
                    {"created", 0},
                    {"model", model},
                    {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}});
  };
  chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
  chunk({{"tool_calls",
          {{{"index", 0},
            {"id", call["id"]},
            {"type", "function"},
            {"function", {{"name", name}}}}}}},
        nullptr);
  std::string sent = arguments;
  if (g_flags.mode == "tool_args_split" && !sent.empty()) sent.pop_back();
  const size_t half = sent.size() / 2;
  for (const std::string& piece : {sent.substr(0, half), sent.substr(half)})
    chunk({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", piece}}}}}}}, nullptr);
  chunk(json::object(), "tool_calls");
  send_chunk(fd, "data: [DONE]\n\n");
  send_chunk(fd, "");
}

// --chat-goldens: each golden's request and the prompt ids transformers renders it to.
std::vector<json> g_chat_goldens;

// The rendering golden whose request `body` carries (messages, tools, chat_template_kwargs,
// add_generation_prompt equal), or null.
const json* chat_golden_for(const json& body) {
  for (const json& g : g_chat_goldens) {
    const json& r = g["request"];
    bool same = true;
    for (const char* key : {"messages", "tools", "chat_template_kwargs", "add_generation_prompt"})
      same = same && r.value(key, json()) == body.value(key, json());
    if (same) return &g;
  }
  return nullptr;
}

// The prompt ids of a rendering golden; fault template_drops_system: the system message's text
// rendered empty (as a template that ignores the system role does), re-encoded.
std::vector<int64_t> rendered_prompt(const json& golden) {
  std::vector<int64_t> ids = golden["prompt_token_ids"].get<std::vector<int64_t>>();
  if (g_flags.mode != "template_drops_system" || !g_tokenizer) return ids;
  std::string text = golden.value("prompt_text", "");
  for (const json& m : golden["request"]["messages"]) {
    if (m.value("role", "") != "system" || !m["content"].is_string()) continue;
    const std::string content = m["content"].get<std::string>();
    if (const size_t at = text.find(content); !content.empty() && at != std::string::npos)
      text.erase(at, content.size());
  }
  ids.clear();
  for (const int32_t id : g_tokenizer->encode(text, false)) ids.push_back(id);
  return ids;
}

// --reasoning: the answer as a thinking model gives it. Thinking on (chat_template_kwargs
// enable_thinking not false): reasoning, closed by </think> after thinking_token_budget tokens
// when the request sets one, then content; no budget: reasoning until cut. Thinking off: content.
// Each part's text is its ids decoded together, carried by its first token. Fault
// reasoning_off_by_one: the split is reported one token late (the first content token's text
// goes to the reasoning).
void think(const json& body, Generation* g) {
  const auto end = g_tokenizer ? g_tokenizer->token_to_id("</think>") : std::nullopt;
  const auto start = g_tokenizer ? g_tokenizer->token_to_id("<think>") : std::nullopt;
  if (!end || g->tokens.empty()) return;
  const int end_id = *end;
  const json kwargs = body.value("chat_template_kwargs", json::object());
  const bool thinking = !(kwargs.is_object() && kwargs.value("enable_thinking", true) == false);
  int64_t split = int64_t(g->tokens.size());  // the end marker's position; size: none
  if (body.contains("thinking_token_budget") && body["thinking_token_budget"].is_number_integer())
    split = std::min<int64_t>(split, body["thinking_token_budget"].get<int64_t>());
  for (size_t i = 0; i < g->tokens.size(); ++i) {
    Token& t = g->tokens[i];
    if (t.id == end_id || (start && t.id == *start)) t.id = 17;  // no marker but the one placed
    t.part = !thinking ? 0 : int64_t(i) < split ? 1 : int64_t(i) == split ? 2 : 0;
    if (t.part == 2) t.id = end_id;
  }
  if (g_flags.mode == "reasoning_off_by_one" && thinking && split + 1 < int64_t(g->tokens.size()))
    g->tokens[size_t(split + 1)].part = 1;
  for (int part : {0, 1}) {  // each part's ids decoded together, on its first token
    std::vector<int64_t> ids;
    Token* first = nullptr;
    for (Token& t : g->tokens) {
      if (t.part != part) continue;
      if (first == nullptr) first = &t;
      ids.push_back(t.id);
      t.text.clear();
    }
    if (first != nullptr) first->text = decode(ids);
  }
}

// The serving modes: the request run through g_engine (fake_serving.h). Requests sent together
// are held 100 ms after admission, so that each sees the others running (a loaded machine takes
// tens of ms to start 32 requests).
Generation serving_generation(const json& body, bool chat) {
  Generation g = generate(body, chat, false);
  const json& prompt = chat ? body["messages"] : body["prompt"];
  std::vector<int64_t> ids;
  if (prompt.is_array() && !chat) {
    ids = prompt.get<std::vector<int64_t>>();
  } else {
    const std::string text = prompt.is_string() ? prompt.get<std::string>() : prompt.dump();
    if (g_tokenizer) {
      for (const int32_t id : g_tokenizer->encode(text, true)) ids.push_back(id);
    } else {
      for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
    }
  }
  const int64_t max_tokens = body.value("max_tokens", 16);
  fake_serving::Engine::Admission a = g_engine->admit(ids, max_tokens);
  sleep_s(0.1);
  g_engine->settle(&a);
  const std::vector<fake_serving::Step> steps = g_engine->decode(ids, max_tokens, a);
  g.prompt_ids = ids;
  g.tokens.clear();
  g.echoed.clear();
  g.echo_offsets.clear();
  g.echo_text.clear();
  for (const fake_serving::Step& s : steps)
    g.tokens.push_back({s.id, token_text(s.id), s.logprob, s.top});
  g.finish = "length";
  if (!chat && body.value("echo", false) && !g.stream) {
    int64_t offset = 0;
    for (const fake_serving::Step& s : g_engine->prefill(ids)) {
      g.echoed.push_back({s.id, token_text(s.id), s.logprob, s.top});
      g.echo_offsets.push_back(offset);
      for (const char c : g.echoed.back().text)
        offset += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      g.echo_text += g.echoed.back().text;
    }
  }
  g.cached = a.cached;
  g.lying_usage = g_flags.mode == "lying_usage";
  g.token_delay_s = 0.002;
  g_engine->finish(ids, max_tokens, int64_t(steps.size()));
  return g;
}

void completion(int fd, const HttpRequest& request, bool chat) {
  const std::string& mode = g_flags.mode;
  if (mode == "http_500" || mode == "http_429") {
    int status = mode == "http_500" ? 500 : 429;
    respond(fd, status, error_json(status, "fake server says " + std::to_string(status)),
            status == 429 ? "Retry-After: 1\r\n" : "");
    return;
  }
  json body = json::parse(request.body, nullptr, false);
  if (!body.is_object() || !(chat ? body.contains("messages") : body.contains("prompt"))) {
    respond(fd, 400, error_json(400, "the body is not a completion request"));
    return;
  }
  if (g_flags.strict) {
    if (const std::string extra = unexpected_fields(body, chat); !extra.empty()) {
      respond(fd, 422, {{"detail", "Unexpected fields in the request: " + extra}});
      return;
    }
    if (!chat && !body["prompt"].is_string()) {
      respond(fd, 400, {{"detail", "prompt must be a string."}});
      return;
    }
  }
  bool overlapped = false;
  if (mode == "nondeterministic") {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (!g_in_flight.empty()) overlapped = true;
      for (bool* other : g_in_flight) *other = true;
      g_in_flight.insert(&overlapped);
    }
    sleep_s(0.15);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_in_flight.erase(&overlapped);
  }
  if (!g_engine && chat) {  // no guided decoding, no tool calls: refused, as harness serve does
    const json format = body.value("response_format", json::object());
    const json choice = body.value("tool_choice", json("auto"));
    if ((format.is_object() && format.value("type", "text") != "text") ||
        body.contains("structured_outputs")) {
      respond(fd, 400, error_json(400, "response_format: the fake engine does no guided decoding"));
      return;
    }
    if (body.contains("tools") && !body["tools"].empty() && choice != "none") {
      respond(fd, 400, error_json(400, "tools: the fake engine calls no tools"));
      return;
    }
  }
  const bool constrains = g_engine && mode != "ignores_constraints";
  if (constrains && chat) {  // a required or named tool call, as vLLM's tool-call parser answers
    if (const auto call = fake_serving::forced_tool_call(body)) {
      tool_call_response(fd, body, call->first, call->second);
      return;
    }
    if (const auto call = fake_serving::auto_tool_call(body, g_flags.serving.fault)) {
      tool_call_response(fd, body, call->first, call->second);
      return;
    }
  }
  if (constrains) {  // guided decoding: the constraint's least answer, or a 400
    std::string error;
    const std::optional<std::string> answer =
        fake_serving::guided_answer(body, g_flags.mode == "guided_invalid", &error);
    if (!error.empty()) {
      respond(fd, 400, error_json(400, "Failed to transform json schema into a grammar: " + error));
      return;
    }
    if (answer) {
      Generation g = generate(body, chat, false);
      g.tokens.clear();
      for (const char c : *answer)
        g.tokens.push_back({static_cast<unsigned char>(c), std::string(1, c), -0.1});
      g.finish = "stop";
      g.token_ids = false;  // the characters are no model's ids
      if (g.stream) {
        stream_response(fd, g);
      } else {
        plain_response(fd, g);
      }
      return;
    }
  }
  // ignores_constraints answers as the ok mode does: free text that ends (finish_reason stop).
  Generation g = constrains ? serving_generation(body, chat) : generate(body, chat, overlapped);
  if (chat) {
    if (const json* golden = chat_golden_for(body)) g.prompt_ids = rendered_prompt(*golden);
    if (g_flags.reasoning) think(body, &g);
  }
  if (g.stream) {
    stream_response(fd, g);
  } else {
    plain_response(fd, g);
  }
}

void serve(int fd) {
  HttpRequest request;
  if (!read_request(fd, &request)) {
    close(fd);
    return;
  }
  bool stream = request.body.find("\"stream\":true") != std::string::npos;
  log(request.method + " " + request.path + (stream ? " (stream)" : ""));
  if (request.path.rfind("/v1/", 0) == 0) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_last_auth = request.headers["authorization"];
    if (!g_flags.auth_file.empty())
      std::ofstream(g_flags.auth_file, std::ios::trunc) << g_last_auth;
  }
  double up_s = std::chrono::duration<double>(Clock::now() - g_start).count();
  bool healthy = g_flags.mode != "never_healthy" && up_s >= g_flags.ready_after_s;
  if (request.method == "GET" && (request.path == "/health" || request.path == "/v1/models")) {
    if (!healthy) {
      respond(fd, 503, error_json(503, "not ready"));
    } else if (request.path == "/health") {
      respond(fd, 200, json::object());
    } else {
      respond(fd, 200,
              {{"object", "list"}, {"data", {{{"id", g_flags.model_name}, {"object", "model"}}}}});
    }
  } else if (request.method == "GET" && request.path == "/metrics" &&
             (g_engine || !g_flags.kv_cache_info.empty())) {
    const std::string text = (g_engine ? g_engine->metrics() : "") + cache_config_info();
    send_all(fd, head(200, "text/plain; version=0.0.4",
                      "Content-Length: " + std::to_string(text.size()) + "\r\n") +
                     text);
  } else if (request.method == "POST" && !g_flags.profile_dir.empty() &&
             (request.path == "/start_profile" || request.path == "/stop_profile")) {
    if (request.path == "/stop_profile") {  // the trace appears at the stop
      static int traces = 0;
      const std::string out =
          g_flags.profile_dir + "/rank0." + std::to_string(++traces) + ".pt.trace.json.gz";
      std::ifstream in(g_flags.profile_trace, std::ios::binary);
      std::ofstream(out, std::ios::binary) << in.rdbuf();
    }
    respond(fd, 200, json::object());
  } else if (request.method == "POST" && request.path == "/v1/completions") {
    completion(fd, request, false);
  } else if (request.method == "POST" && request.path == "/v1/chat/completions") {
    completion(fd, request, true);
  } else {
    respond(fd, 404, error_json(404, "no route " + request.path));
  }
  shutdown(fd, SHUT_WR);
  close(fd);
}

bool parse_flags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    bool has_value = i + 1 < argc;
    if (flag == "--exit-after-start") {
      g_flags.exit_after_start = true;
    } else if (flag == "--port" && has_value) {
      g_flags.port = std::atoi(argv[++i]);
    } else if (flag == "--mode" && has_value) {
      g_flags.mode = argv[++i];
    } else if (flag == "--ready-after" && has_value) {
      g_flags.ready_after_s = std::atof(argv[++i]);
    } else if (flag == "--port-file" && has_value) {
      g_flags.port_file = argv[++i];
    } else if (flag == "--auth-file" && has_value) {
      g_flags.auth_file = argv[++i];
    } else if (flag == "--strict") {
      g_flags.strict = true;
    } else if (flag == "--golden-dir" && has_value) {
      g_flags.golden_dir = argv[++i];
    } else if (flag == "--tokenizer" && has_value) {
      g_flags.tokenizer = argv[++i];
    } else if (flag == "--known" && has_value) {
      g_flags.known = std::atof(argv[++i]);
    } else if (flag == "--lose" && has_value) {
      g_flags.lose = std::atof(argv[++i]);
    } else if (flag == "--corrupt-at" && has_value) {
      g_flags.corrupt_at = std::atoll(argv[++i]);
    } else if (flag == "--prefill-chunk" && has_value) {
      g_flags.serving.prefill_chunk = std::atoll(argv[++i]);
    } else if (flag == "--kv-tokens" && has_value) {
      g_flags.serving.kv_tokens = std::atoll(argv[++i]);
    } else if (flag == "--spec-tokens" && has_value) {
      g_flags.serving.spec_tokens = std::atoll(argv[++i]);
    } else if (flag == "--chat-goldens" && has_value) {
      g_flags.chat_goldens = argv[++i];
    } else if (flag == "--reasoning") {
      g_flags.reasoning = true;
    } else if (flag == "--profile-trace" && has_value) {
      g_flags.profile_trace = argv[++i];
    } else if (flag == "--profile-dir" && has_value) {
      g_flags.profile_dir = argv[++i];
    } else if (flag == "--kv-cache-info" && has_value) {
      g_flags.kv_cache_info = argv[++i];
    } else if (flag == "--model-name" && has_value) {
      g_flags.model_name = argv[++i];
    } else {
      std::fprintf(stderr, "fake_openai_server: bad flag %s\n", flag.c_str());
      return false;
    }
  }
  static const std::set<std::string> kModes = {
      "ok",        "never_healthy",    "die_mid_stream",   "malformed_sse",
      "bogus_sse", "http_500",         "http_429",         "slow_tokens",
      "no_done",   "nondeterministic", "stream_error",     "invalid_utf8",
      "echo_auth", "answers",          "vllm_detokenizer", "bos_in_echo_offsets"};
  if (!kModes.contains(g_flags.mode) && !fake_serving::modes().contains(g_flags.mode)) {
    std::fprintf(stderr, "fake_openai_server: unknown mode %s\n", g_flags.mode.c_str());
    return false;
  }
  return true;
}

}  // namespace

bool load_goldens() {
  if (!g_flags.tokenizer.empty()) {
    g_tokenizer = std::make_unique<h0::tokenizer::Tokenizer>(
        h0::tokenizer::Tokenizer::from_file(g_flags.tokenizer));
  }
  if (!g_flags.chat_goldens.empty()) {
    for (const auto& e : std::filesystem::directory_iterator(g_flags.chat_goldens)) {
      if (e.path().extension() != ".json") continue;
      std::ifstream in(e.path());
      json j = json::parse(in, nullptr, false);
      if (j.is_object() && j.contains("request") && j.contains("prompt_token_ids"))
        g_chat_goldens.push_back(std::move(j));
    }
    log(std::to_string(g_chat_goldens.size()) + " rendering goldens from " + g_flags.chat_goldens);
  }
  if (g_flags.golden_dir.empty()) return true;
  for (const auto& e : std::filesystem::directory_iterator(g_flags.golden_dir)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    json j = json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("request") && j.contains("token_ids"))
      g_goldens.push_back(std::move(j));
  }
  log(std::to_string(g_goldens.size()) + " goldens from " + g_flags.golden_dir);
  return !g_goldens.empty();
}

int main(int argc, char** argv) {
  if (!parse_flags(argc, argv)) return 2;
  if (!load_goldens()) {
    std::fprintf(stderr, "fake_openai_server: no golden files in %s\n", g_flags.golden_dir.c_str());
    return 2;
  }
  if (fake_serving::modes().contains(g_flags.mode)) {
    if (g_flags.mode != "serving") g_flags.serving.fault = g_flags.mode;
    if (g_tokenizer) g_flags.serving.vocab = g_tokenizer->vocab_size();
    g_engine = std::make_unique<fake_serving::Engine>(g_flags.serving);
  }
  signal(SIGPIPE, SIG_IGN);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(uint16_t(g_flags.port));
  socklen_t length = sizeof(address);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listener, 128) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::fprintf(stderr, "fake_openai_server: cannot listen on port %d: %s\n", g_flags.port,
                 std::strerror(errno));
    return 1;
  }
  int port = ntohs(address.sin_port);
  if (!g_flags.port_file.empty()) {
    std::string temporary = g_flags.port_file + ".tmp";
    std::ofstream(temporary) << port << "\n";
    std::rename(temporary.c_str(), g_flags.port_file.c_str());
  }
  log("mode " + g_flags.mode + " listening on 127.0.0.1:" + std::to_string(port));
  if (!g_flags.kv_cache_info.empty()) {
    long long tokens = 0, memory = 0, block = 0;
    std::sscanf(g_flags.kv_cache_info.c_str(), "%lld,%lld,%lld", &tokens, &memory, &block);
    log("CPU KV cache size: " + std::to_string(tokens) + " tokens");
  }
  if (g_flags.exit_after_start) {
    std::thread([] {
      sleep_s(0.3);
      log("exiting with status 3 (--exit-after-start)");
      _exit(3);
    }).detach();
  }
  while (true) {
    int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::thread(serve, fd).detach();
  }
}
