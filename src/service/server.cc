#include "service/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "base/error.h"
#include "base/utf8.h"
#include "service/json_util.h"
#include "service/server_request.h"
#include "tokenizer/byte_level.h"

namespace h0::service {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void send_error(httplib::Response& res, const HttpError& e) {
  res.status = e.status;
  res.set_content(dump(error_body(e)), "application/json");
}

// The field an engine error names ("max_tokens: must be ..." -> "max_tokens").
std::string param_of(const std::string& message) {
  for (const char* f : {"max_tokens", "messages", "prompt"}) {
    if (message.rfind(f, 0) == 0) return f;
  }
  return "";
}

std::string random_hex(size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += kHex[rng() % 16];
  return s;
}

// The output as it grows: tokens, the visible text (stop strings applied), what was streamed.
struct Output {
  std::vector<TokenEvent> tokens;
  std::vector<TokenEvent> prompt;  // echo with logprobs: prompt tokens 1..T-1 (StreamEvent::prompt)
  std::string text;                // decode(token ids, true), less a stop string
  std::optional<tokenizer::DecodeStream> decoder;  // makes `text`, one token at a time
  size_t stable = 0;  // text[0, stable) will not change: no trailing U+FFFD unless finished
  size_t sent_bytes = 0, sent_tokens = 0;
  int64_t text_offset = 0;  // completions logprobs: code points before the next unsent token
  std::string finish_reason;
  json stop_reason = nullptr;
};

}  // namespace

class Server::Impl {
 public:
  Impl(BatchEngine& engine, ServedModel model, ServerOptions options)
      : engine_(engine), model_(std::move(model)), options_(std::move(options)) {
    http_.new_task_queue = [n = options_.threads] { return new httplib::ThreadPool(size_t(n)); };
    http_.set_keep_alive_timeout(5);
    // The listening socket passes through here before bind (cpp-httplib's own options kept);
    // bind() raises its backlog, which the shared library fixes at 5.
    http_.set_socket_options([this](int sock) {
      httplib::default_socket_options(sock);
      if (listen_socket_ < 0) listen_socket_ = sock;
    });
    http_.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{}", "application/json");
    });
    http_.Get("/metrics",
              [this](const httplib::Request&, httplib::Response& res) { metrics(res); });
    http_.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
      if (authorized(req, res)) models(res);
    });
    http_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      generate(req, res, false);
    });
    http_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      generate(req, res, true);
    });
    http_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown exception";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          send_error(res, {500, "internal error: " + what, ""});
        });
    http_.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (res.body.empty())
        send_error(res, {res.status, "no route for " + req.method + " " + req.path, ""});
    });
  }

  int bind() {
    const int port = options_.port == 0
                         ? http_.bind_to_any_port(options_.host)
                         : (http_.bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port <= 0)
      throw InputError("--port",
                       "cannot listen on " + options_.host + ":" + std::to_string(options_.port));
    // listen() again on a listening socket only resizes its queue (the kernel caps it at
    // somaxconn).
    if (listen_socket_ < 0 || ::listen(listen_socket_, options_.listen_backlog()) != 0)
      throw std::runtime_error("cannot size the listen backlog of " + options_.host + ":" +
                               std::to_string(port));
    return port;
  }
  void run() { http_.listen_after_bind(); }
  void stop() { http_.stop(); }

 private:
  bool authorized(const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty() ||
        req.get_header_value("Authorization") == "Bearer " + options_.api_key)
      return true;
    send_error(res, {401, "missing or wrong API key (Authorization: Bearer <key>)", ""});
    return false;
  }

  void models(httplib::Response& res) {
    const json m = {
        {"id", model_.name},     {"object", "model"},   {"created", int64_t(std::time(nullptr))},
        {"owned_by", "harness"}, {"root", model_.name}, {"max_model_len", engine_.kv_capacity()}};
    res.set_content(dump({{"object", "list"}, {"data", json::array({m})}}), "application/json");
  }

  void metrics(httplib::Response& res) {
    const EngineStats s = engine_.stats();
    std::string out;
    auto line = [&](const char* name, const char* help, double v) {
      out += std::string("# HELP ") + name + " " + help + "\n" + name + " " + json(v).dump() + "\n";
    };
    line("harness_engine_steps_total", "forward passes", double(s.steps));
    line("harness_engine_batched_sequences_total", "sequences over all forward passes",
         double(s.batched_sequences));
    line("harness_engine_mean_batch_size", "sequences per forward pass",
         s.steps ? double(s.batched_sequences) / double(s.steps) : 0.0);
    line("harness_engine_max_batch_size", "most sequences in one forward pass",
         double(s.max_batch));
    line("harness_engine_prompt_tokens_total", "prefilled prompt tokens", double(s.prompt_tokens));
    line("harness_engine_generation_tokens_total", "generated tokens", double(s.generated_tokens));
    line("harness_engine_requests_finished_total", "requests finished", double(s.finished));
    line("harness_engine_requests_failed_total", "requests failed", double(s.failed));
    line("harness_engine_requests_cancelled_total", "requests cancelled", double(s.cancelled));
    line("harness_engine_requests_running", "sequences running", double(s.running));
    line("harness_engine_requests_waiting", "requests waiting", double(s.waiting));
    res.set_content(out, "text/plain; version=0.0.4");
  }

  // ---- output ----

  std::string token_text(int64_t id, bool as_id) const {
    if (as_id) return std::string(kTokenIdPrefix) + std::to_string(id);
    const int32_t i = int32_t(id);
    return model_.tokenizer->decode(std::span<const int32_t>(&i, 1), false);
  }

  json token_bytes(int64_t id) const {
    std::string raw;
    const std::optional<std::string> tok = model_.tokenizer->id_to_token(int32_t(id));
    if (!tok ||
        (model_.tokenizer->is_special(int32_t(id)) || !tokenizer::byte_level_decode(*tok, &raw)))
      raw = token_text(id, false);
    json out = json::array();
    for (char c : raw) out.push_back(int(static_cast<unsigned char>(c)));
    return out;
  }

  static double clamp_lp(double lp) { return std::max(lp, -9999.0); }

  // Logprobs of tokens [from, to) in the chat format (content: [...]).
  json chat_logprobs(const ApiRequest& r, const Output& o, size_t from, size_t to) const {
    json content = json::array();
    for (size_t i = from; i < to; ++i) {
      const TokenEvent& t = o.tokens[i];
      json top = json::array();
      for (const auto& [id, lp] : t.top)
        top.push_back({{"token", token_text(id, r.tokens_as_ids)},
                       {"logprob", clamp_lp(lp)},
                       {"bytes", token_bytes(id)}});
      content.push_back({{"token", token_text(t.id, r.tokens_as_ids)},
                         {"logprob", clamp_lp(t.logprob)},
                         {"bytes", token_bytes(t.id)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }

  // Logprobs of tokens [from, to) in the completions format; advances o->text_offset.
  json completion_logprobs(const ApiRequest& r, Output* o, size_t from, size_t to) const {
    json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    for (size_t i = from; i < to; ++i) {
      const TokenEvent& t = o->tokens[i];
      const std::string text = token_text(t.id, r.tokens_as_ids);
      tokens.push_back(text);
      lps.push_back(clamp_lp(t.logprob));
      json top = json::object();
      for (const auto& [alt, lp] : t.top) top[token_text(alt, r.tokens_as_ids)] = clamp_lp(lp);
      if (!top.contains(text)) top[text] = clamp_lp(t.logprob);
      tops.push_back(top);
      offsets.push_back(o->text_offset);
      o->text_offset += int64_t(utf8_characters(token_text(t.id, false)));
    }
    return {{"tokens", tokens},
            {"token_logprobs", lps},
            {"top_logprobs", tops},
            {"text_offset", offsets}};
  }

  // echo: the prompt as text (as sent, else its ids decoded), and in the completions logprobs
  // format: its first token without a logprob (null, as OpenAI and vLLM answer), each later one
  // with the logprob the prefill gave it. Sets o->text_offset past the prompt.
  std::string echo_text(const ApiRequest& r) const {
    if (!r.prompt_text.empty()) return r.prompt_text;
    std::vector<int32_t> ids(r.generation.prompt.begin(), r.generation.prompt.end());
    return model_.tokenizer->decode(ids, false);
  }
  json echo_logprobs(const ApiRequest& r, const std::string& echoed, Output* o) const {
    json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    const std::vector<int64_t>& prompt = r.generation.prompt;
    int64_t offset = 0;
    for (size_t i = 0; i < prompt.size(); ++i) {
      const std::string text = token_text(prompt[i], r.tokens_as_ids);
      tokens.push_back(text);
      offsets.push_back(offset);  // in the echoed text, which holds no special token's text
      const int32_t id = int32_t(prompt[i]);
      offset += int64_t(
          utf8_characters(model_.tokenizer->decode(std::span<const int32_t>(&id, 1), true)));
      if (i == 0 || i - 1 >= o->prompt.size()) {
        lps.push_back(nullptr);
        tops.push_back(nullptr);
        continue;
      }
      const TokenEvent& t = o->prompt[i - 1];
      lps.push_back(clamp_lp(t.logprob));
      json top = json::object();
      for (const auto& [alt, lp] : t.top) top[token_text(alt, r.tokens_as_ids)] = clamp_lp(lp);
      if (!top.contains(text)) top[text] = clamp_lp(t.logprob);
      tops.push_back(top);
    }
    o->text_offset = int64_t(utf8_characters(echoed));
    json out = {{"tokens", tokens},
                {"token_logprobs", lps},
                {"top_logprobs", tops},
                {"text_offset", offsets}};
    json generated = completion_logprobs(r, o, 0, o->tokens.size());
    for (auto& [key, values] : generated.items()) {
      for (auto& v : values) out[key].push_back(std::move(v));
    }
    return out;
  }

  // Takes one token event into `o`; true when the output is complete (a finish reason, or a stop
  // string found, which also cancels the generation).
  bool absorb(const ApiRequest& r, const StreamEvent& e, RequestStream& stream, Output* o) const {
    if (!e.prompt.empty()) o->prompt = e.prompt;
    o->tokens.push_back(e.token);
    if (!o->decoder) o->decoder.emplace(*model_.tokenizer, true);
    if (e.finish_reason == "stop")  // the end-of-sequence token's text is not output
      o->stop_reason = e.token.id;
    else
      o->decoder->push(int32_t(e.token.id), &o->text);  // o->text = decode(ids, true)
    o->finish_reason = e.finish_reason;
    // Stop strings are looked for in text that will not change: not in a trailing incomplete
    // UTF-8 sequence (U+FFFD now), unless this is the last token. Text before the previous
    // o->stable is unchanged and holds no stop string, and does not end with U+FFFD.
    const size_t old_stable = o->stable;
    size_t stable = o->text.size();
    while (o->finish_reason.empty() && stable > old_stable && stable >= 3 &&
           o->text.compare(stable - 3, 3, "\xEF\xBF\xBD") == 0)
      stable -= 3;
    o->stable = stable;
    const std::string_view settled(o->text.data(), stable);
    size_t cut = std::string::npos;
    for (const std::string& s : r.stop) {
      // A stop string found now ends after old_stable.
      const size_t from = s.empty() || old_stable < s.size() ? 0 : old_stable - (s.size() - 1);
      const size_t at = settled.find(s, from);
      if (at != std::string::npos && at < cut) {
        cut = at;
        o->stop_reason = s;
      }
    }
    if (cut != std::string::npos) {
      o->text.resize(cut);
      o->stable = cut;
      o->finish_reason = "stop";
      stream.cancel();
    }
    return !o->finish_reason.empty();
  }

  // How much of o.text may be streamed now: not a trailing incomplete UTF-8 sequence (decoded
  // as U+FFFD), nor the last (longest stop string − 1) bytes, which may become a stop string.
  static size_t streamable(const ApiRequest& r, const Output& o) {
    if (!o.finish_reason.empty()) return o.text.size();
    size_t n = o.stable;
    size_t hold = 0;
    for (const std::string& s : r.stop) hold = std::max(hold, s.size() - 1);
    n = n > hold ? n - hold : 0;
    while (n > 0 && n < o.text.size() && (static_cast<unsigned char>(o.text[n]) & 0xc0) == 0x80)
      --n;
    return std::max(n, o.sent_bytes);
  }

  json usage(const ApiRequest& r, const Output& o) const {
    const int64_t p = int64_t(r.generation.prompt.size()), c = int64_t(o.tokens.size());
    return {{"prompt_tokens", p}, {"completion_tokens", c}, {"total_tokens", p + c}};
  }

  json envelope(const ApiRequest& r, const std::string& id, int64_t created, bool chunk) const {
    return {{"id", id},
            {"object",
             r.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
            {"created", created},
            {"model", model_.name}};
  }

  json full_response(const ApiRequest& r, Output& o, const std::string& id, int64_t created) const {
    json choice = {{"index", 0}};
    if (r.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", o.text}};
      choice["logprobs"] = r.logprobs ? chat_logprobs(r, o, 0, o.tokens.size()) : json(nullptr);
    } else {
      const std::string echoed = r.echo ? echo_text(r) : "";
      choice["text"] = echoed + o.text;
      choice["logprobs"] = !r.logprobs ? json(nullptr)
                           : r.echo    ? echo_logprobs(r, echoed, &o)
                                       : completion_logprobs(r, &o, 0, o.tokens.size());
    }
    choice["finish_reason"] = o.finish_reason;
    choice["stop_reason"] = o.stop_reason;
    json out = envelope(r, id, created, false);
    if (r.token_ids) {
      std::vector<int64_t> ids;
      for (const TokenEvent& t : o.tokens) ids.push_back(t.id);
      choice["token_ids"] = ids;
      (r.chat ? out : choice)["prompt_token_ids"] = r.generation.prompt;
    }
    out["choices"] = json::array({choice});
    out["usage"] = usage(r, o);
    return out;
  }

  // The SSE chunk carrying the tokens and text not yet sent (and the finish reason at the end).
  json chunk(const ApiRequest& r, Output& o, const std::string& id, int64_t created,
             bool first) const {
    const size_t end = streamable(r, o);
    const std::string delta = o.text.substr(o.sent_bytes, end - o.sent_bytes);
    json choice = {{"index", 0}};
    if (r.chat) {
      choice["delta"] =
          first ? json{{"role", "assistant"}, {"content", delta}} : json{{"content", delta}};
      choice["logprobs"] =
          r.logprobs ? chat_logprobs(r, o, o.sent_tokens, o.tokens.size()) : json(nullptr);
    } else {
      choice["text"] = delta;
      choice["logprobs"] =
          r.logprobs ? completion_logprobs(r, &o, o.sent_tokens, o.tokens.size()) : json(nullptr);
    }
    choice["finish_reason"] = o.finish_reason.empty() ? json(nullptr) : json(o.finish_reason);
    if (!o.finish_reason.empty()) choice["stop_reason"] = o.stop_reason;
    json out = envelope(r, id, created, true);
    if (r.token_ids) {
      std::vector<int64_t> ids;
      for (size_t i = o.sent_tokens; i < o.tokens.size(); ++i) ids.push_back(o.tokens[i].id);
      choice["token_ids"] = ids;
      if (first) (r.chat ? out : choice)["prompt_token_ids"] = r.generation.prompt;
    }
    out["choices"] = json::array({choice});
    if (r.include_usage) out["usage"] = nullptr;
    o.sent_bytes = end;
    o.sent_tokens = o.tokens.size();
    return out;
  }

  // ---- the two generation endpoints ----

  struct Log {
    std::string id;
    int64_t prompt = 0, completion = 0;
    Clock::time_point start = Clock::now(), first{};
    void write(const std::string& outcome) const {
      const double ttft =
          first == Clock::time_point{} ? -1 : std::chrono::duration<double>(first - start).count();
      std::fprintf(
          stderr, "serve: %s prompt_tokens=%lld completion_tokens=%lld ttft_s=%.4f e2e_s=%.4f %s\n",
          id.c_str(), (long long)prompt, (long long)completion, ttft,
          std::chrono::duration<double>(Clock::now() - start).count(), outcome.c_str());
    }
  };

  void generate(const httplib::Request& req, httplib::Response& res, bool chat) {
    if (!authorized(req, res)) return;
    auto log = std::make_shared<Log>();
    ApiRequest r;
    try {
      r = parse_request(req.body, chat, model_);
    } catch (const HttpError& e) {
      send_error(res, e);
      return;
    } catch (const InputError& e) {  // the tokenizer or the image decoder refused the input
      send_error(res, {400, e.what(), ""});
      return;
    }
    log->id = (chat ? "chatcmpl-" : "cmpl-") + random_hex(32);
    log->prompt = int64_t(r.generation.prompt.size());
    const int64_t created = int64_t(std::time(nullptr));
    std::shared_ptr<RequestStream> stream = engine_.submit(r.generation);
    // The first event decides the status: an error before any token is a 400 or 500 response.
    StreamEvent first = stream->next();
    log->first = Clock::now();
    if (first.kind == StreamEvent::Kind::kError) {
      send_error(res, {first.request_error ? 400 : 500, first.error,
                       first.request_error ? param_of(first.error) : ""});
      log->write("error: " + first.error);
      return;
    }
    auto out = std::make_shared<Output>();
    if (!r.stream) {
      bool done = absorb(r, first, *stream, out.get());
      while (!done) {
        StreamEvent e = stream->next();
        if (e.kind == StreamEvent::Kind::kError) {
          send_error(res, {500, e.error, ""});
          log->write("error: " + e.error);
          return;
        }
        done = absorb(r, e, *stream, out.get());
      }
      log->completion = int64_t(out->tokens.size());
      res.set_content(dump(full_response(r, *out, log->id, created)), "application/json");
      log->write(out->finish_reason);
      return;
    }
    auto pending = std::make_shared<std::optional<StreamEvent>>(std::move(first));
    auto state = std::make_shared<int>(0);  // 0: nothing sent, 1: streaming, 2: done
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, r, stream, out, pending, state, log, created](size_t, httplib::DataSink& sink) {
          StreamEvent e = pending->has_value() ? std::move(**pending) : stream->next();
          pending->reset();
          std::string sse;
          if (e.kind == StreamEvent::Kind::kError) {
            sse = "data: " + dump(error_body({500, e.error, ""})) + "\n\n";
            out->finish_reason = "error";
          } else {
            const bool done = absorb(r, e, *stream, out.get());
            if (done || streamable(r, *out) > out->sent_bytes || *state == 0) {
              sse = "data: " + dump(chunk(r, *out, log->id, created, *state == 0)) + "\n\n";
              *state = 1;
            }
          }
          if (!out->finish_reason.empty()) {
            if (r.include_usage && out->finish_reason != "error") {
              json u = envelope(r, log->id, created, true);
              u["choices"] = json::array();
              u["usage"] = usage(r, *out);
              sse += "data: " + dump(u) + "\n\n";
            }
            sse += "data: [DONE]\n\n";
          }
          if (!sse.empty() && !sink.write(sse.data(), sse.size())) {
            stream->cancel();
            return false;
          }
          if (!out->finish_reason.empty()) {
            *state = 2;
            sink.done();
          }
          return true;
        },
        [stream, out, log, state](bool success) {
          log->completion = int64_t(out->tokens.size());
          if (!success || *state != 2) {
            stream->cancel();
            log->write("cancelled (client gone)");
          } else {
            log->write(out->finish_reason);
          }
        });
  }

  BatchEngine& engine_;
  ServedModel model_;
  ServerOptions options_;
  httplib::Server http_;
  int listen_socket_ = -1;  // the listening socket, once bind() made it
};

Server::Server(BatchEngine& engine, ServedModel model, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(model), std::move(options))) {}
Server::~Server() = default;
int Server::bind() { return impl_->bind(); }
void Server::run() { impl_->run(); }
void Server::stop() { impl_->stop(); }

}  // namespace h0::service
