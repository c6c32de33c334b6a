// The client against the scripted fake server (tests/service/fake_openai_server.cc), one server
// process per test on a port of its own.
#include "service/client.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "service/launcher.h"
#include "test_util.h"

extern char** environ;

namespace h0::service {
namespace {

using Clock = std::chrono::steady_clock;

using test::read_file;
using test::since;

// The fake server in `mode` on a free port, killed when this goes out of scope.
class FakeServer {
 public:
  explicit FakeServer(const std::string& mode, const std::vector<std::string>& extra = {}) {
    std::string port_file = dir_.file("port");
    std::vector<std::string> args = {H0_FAKE_SERVER, "--port",  "0",           "--mode",   mode,
                                     "--port-file",  port_file, "--auth-file", auth_file()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    std::string log = dir_.file("log");
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
    for (Clock::time_point t0 = Clock::now(); pid_ > 0 && since(t0) < 10;) {
      std::string port = read_file(port_file);
      if (!port.empty() && port.back() == '\n') {
        url_ = "http://127.0.0.1:" + port.substr(0, port.size() - 1);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~FakeServer() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  const std::string& url() const { return url_; }
  std::string auth_file() const { return dir_.file("auth"); }
  std::string log() const { return read_file(dir_.file("log")); }

 private:
  test::TempDir dir_;
  pid_t pid_ = -1;
  std::string url_;
};

ClientOptions options_for(const FakeServer& server) {
  ClientOptions options;
  options.base_url = server.url();
  options.connect_timeout_s = 2;
  options.request_timeout_s = 10;
  options.idle_timeout_s = 3;
  options.retries = 0;
  return options;
}

Request text_request(bool chat, bool stream, int top_logprobs) {
  Request request;
  request.model = "fake-model";
  if (chat) {
    request.messages = {{"user", {{"text", "Say hello", ""}}}};
  } else {
    request.prompt = "Once upon a time";
  }
  request.sampling.max_tokens = 16;
  request.sampling.top_logprobs = top_logprobs;
  request.stream = stream;
  return request;
}

// Streaming and non-streaming give the same text, token ids and logprobs.
void expect_stream_matches_plain(bool chat) {
  FakeServer server("ok");
  ASSERT_FALSE(server.url().empty());
  Client client(options_for(server));
  Result plain = client.complete(text_request(chat, false, 3));
  Result stream = client.complete(text_request(chat, true, 3));
  ASSERT_TRUE(plain.ok()) << plain.error;
  ASSERT_TRUE(stream.ok()) << stream.error;
  EXPECT_EQ(plain.text, stream.text);
  EXPECT_FALSE(plain.text.empty());
  ASSERT_EQ(plain.token_ids.size(), 8u);
  EXPECT_EQ(plain.token_ids, stream.token_ids);
  EXPECT_EQ(plain.prompt_token_ids, stream.prompt_token_ids);
  EXPECT_FALSE(plain.prompt_token_ids.empty());
  EXPECT_EQ(plain.finish_reason, "stop");
  EXPECT_EQ(stream.finish_reason, "stop");
  EXPECT_EQ(plain.completion_tokens, 8);
  EXPECT_EQ(stream.completion_tokens, 8);
  EXPECT_EQ(plain.prompt_tokens, stream.prompt_tokens);
  ASSERT_EQ(plain.tokens.size(), 8u);
  ASSERT_EQ(stream.tokens.size(), 8u);
  std::string joined;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(plain.tokens[i].id, plain.token_ids[i]);
    EXPECT_EQ(stream.tokens[i].id, plain.token_ids[i]);
    EXPECT_EQ(plain.tokens[i].logprob, stream.tokens[i].logprob);
    ASSERT_TRUE(plain.tokens[i].logprob.has_value());
    EXPECT_EQ(plain.tokens[i].top, stream.tokens[i].top);
    ASSERT_EQ(plain.tokens[i].top.size(), 3u);
    EXPECT_EQ(plain.tokens[i].top[0].first, "token_id:" + std::to_string(plain.token_ids[i]));
    joined += stream.tokens[i].text;  // one token per chunk: each gets its chunk's text
  }
  EXPECT_EQ(joined, stream.text);
  ASSERT_EQ(stream.chunk_arrival_s.size(), 8u);
  EXPECT_GT(stream.ttft_s, 0);
  EXPECT_EQ(stream.ttft_s, stream.chunk_arrival_s[0]);
  EXPECT_GE(stream.e2e_s, stream.chunk_arrival_s.back());
  EXPECT_GT(plain.ttft_s, 0);
  EXPECT_EQ(plain.attempts, 1);
}

TEST(Client, ChatStreamMatchesNonStreaming) { expect_stream_matches_plain(true); }
TEST(Client, CompletionStreamMatchesNonStreaming) { expect_stream_matches_plain(false); }

TEST(Client, PromptIdsWithoutLogprobs) {
  FakeServer server("ok");
  Client client(options_for(server));
  Request request = text_request(false, false, 0);
  request.prompt_ids = {5, 6, 7};
  request.sampling.max_tokens = 4;
  Result plain = client.complete(request);
  request.stream = true;
  Result stream = client.complete(request);
  ASSERT_TRUE(plain.ok()) << plain.error;
  ASSERT_TRUE(stream.ok()) << stream.error;
  EXPECT_EQ(plain.text, stream.text);
  EXPECT_EQ(plain.token_ids, stream.token_ids);
  EXPECT_EQ(plain.prompt_token_ids, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(plain.finish_reason, "length");
  EXPECT_EQ(plain.tokens.size(), 4u);
  EXPECT_FALSE(plain.tokens[0].logprob.has_value());
}

TEST(Client, ChatBodyWithImageHasOpenAIShape) {
  Request request;
  request.model = "m";
  request.messages = {
      {"system", {{"text", "Be brief.", ""}}},
      {"user", {{"text", "What is this?", ""}, {"image_url", "", "data:image/png;base64,AAAA"}}}};
  request.sampling.max_tokens = 8;
  request.sampling.seed = 42;
  request.sampling.top_logprobs = 2;
  request.stream = true;
  request.extra = {{"min_tokens", 2}, {"temperature", 0.5}};
  nlohmann::json expected = nlohmann::json::parse(R"({
    "model": "m",
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}],
    "max_tokens": 8, "temperature": 0.5, "seed": 42, "stream": true,
    "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 2,
    "return_tokens_as_token_ids": true, "return_token_ids": true, "min_tokens": 2})");
  EXPECT_EQ(Client::body(request), expected) << Client::body(request).dump(2);
}

TEST(Client, CompletionBody) {
  Request request;
  request.model = "m";
  request.prompt_ids = {1, 2};
  request.sampling.top_k = 1;
  request.sampling.top_p = 0.9;
  request.sampling.top_logprobs = 5;
  request.sampling.ignore_eos = true;
  request.sampling.return_token_ids = false;
  nlohmann::json expected = nlohmann::json::parse(R"({
    "model": "m", "prompt": [1, 2], "max_tokens": 16, "temperature": 0.0, "top_k": 1,
    "top_p": 0.9, "stream": false, "logprobs": 5, "return_tokens_as_token_ids": true,
    "ignore_eos": true})");
  EXPECT_EQ(Client::body(request), expected) << Client::body(request).dump(2);
}

TEST(Client, ModelsAndProbe) {
  FakeServer server("ok");
  Client client(options_for(server));
  std::vector<std::string> ids;
  Result result = client.models(&ids);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(ids, std::vector<std::string>{"fake-model"});
  EXPECT_TRUE(client.probe("/health", 1));
  EXPECT_FALSE(client.probe("/nowhere", 1));
  FakeServer sick("never_healthy");
  Client sick_client(options_for(sick));
  EXPECT_FALSE(sick_client.probe("/health", 1));
  result = sick_client.models(&ids);
  EXPECT_EQ(result.outcome, Outcome::kHttpError);
  EXPECT_EQ(result.http_status, 503);
  EXPECT_TRUE(ids.empty());
}

TEST(Client, ConnectionRefusedRetriesWithBackoff) {
  ClientOptions options;
  options.base_url = "http://127.0.0.1:" + std::to_string(free_port());
  options.retries = 2;
  options.backoff_s = 0.1;
  Client client(options);
  Clock::time_point t0 = Clock::now();
  Result result = client.complete(text_request(false, false, 0));
  double elapsed = since(t0);
  EXPECT_EQ(result.outcome, Outcome::kConnect);
  EXPECT_STREQ(outcome_name(result.outcome), "connect");
  EXPECT_EQ(result.attempts, 3);
  EXPECT_GE(elapsed, 0.1 + 0.2);
  EXPECT_LT(elapsed, 2);
  EXPECT_NE(result.error.find("cannot connect to " + options.base_url), std::string::npos)
      << result.error;
  EXPECT_NE(result.error.find("3 attempts"), std::string::npos) << result.error;
}

void expect_http_error(const std::string& mode, int status) {
  FakeServer server(mode);
  ClientOptions options = options_for(server);
  options.retries = 3;
  Client client(options);
  for (bool stream : {false, true}) {
    Result result = client.complete(text_request(true, stream, 0));
    EXPECT_EQ(result.outcome, Outcome::kHttpError);
    EXPECT_STREQ(outcome_name(result.outcome), "http_error");
    EXPECT_EQ(result.http_status, status);
    EXPECT_EQ(result.attempts, 1);  // never retried
    std::string message = "fake server says " + std::to_string(status);
    EXPECT_NE(result.error.find("HTTP " + std::to_string(status)), std::string::npos);
    EXPECT_NE(result.error.find(message), std::string::npos) << result.error;
    EXPECT_NE(result.body_tail.find(message), std::string::npos) << result.body_tail;
  }
}

TEST(Client, Http500IsAnErrorNotRetried) { expect_http_error("http_500", 500); }
TEST(Client, Http429IsAnErrorNotRetried) { expect_http_error("http_429", 429); }

// Runs `request` against a server in `mode`; expects `outcome`, an error holding `message`,
// within `max_s` seconds; returns the result.
Result expect_failure(const std::string& mode, const Request& request, Outcome outcome,
                      const std::string& message, double max_s = 2, double idle_timeout_s = 3) {
  FakeServer server(mode);
  ClientOptions options = options_for(server);
  options.idle_timeout_s = idle_timeout_s;
  options.retries = 2;
  Client client(options);
  Clock::time_point t0 = Clock::now();
  Result result = client.complete(request);
  EXPECT_LT(since(t0), max_s);
  EXPECT_EQ(result.outcome, outcome) << outcome_name(result.outcome) << ": " << result.error;
  EXPECT_NE(result.error.find(message), std::string::npos) << result.error;
  EXPECT_EQ(result.attempts, 1);
  EXPECT_FALSE(result.body_tail.empty());
  return result;
}

TEST(Client, DeathMidStreamIsProtocolError) {
  expect_failure("die_mid_stream", text_request(true, true, 0), Outcome::kProtocol,
                 "stream ended after 4 chunks without [DONE]");  // the role chunk, 3 tokens
}

TEST(Client, DeathMidResponseIsProtocolError) {
  expect_failure("die_mid_stream", text_request(false, false, 0), Outcome::kProtocol,
                 "response cut after");
}

TEST(Client, NonJsonChunkIsProtocolError) {
  expect_failure("malformed_sse", text_request(false, true, 0), Outcome::kProtocol,
                 "stream chunk 2 is not JSON: {\"choices\": [");
}

TEST(Client, BogusSseLineIsProtocolError) {
  expect_failure("bogus_sse", text_request(true, true, 0), Outcome::kProtocol,
                 "malformed SSE after 2 chunks: not an SSE field or comment");
}

TEST(Client, StreamWithoutDoneIsProtocolError) {
  expect_failure("no_done", text_request(false, true, 0), Outcome::kProtocol,
                 "stream ended after 9 chunks without [DONE]");  // 8 tokens and the usage
}

TEST(Client, ErrorInsideTheStreamIsHttpError) {
  Result result = expect_failure("stream_error", text_request(false, true, 0), Outcome::kHttpError,
                                 "error in the stream after 1 chunk: fake stream failure");
  EXPECT_EQ(result.http_status, 400);  // the error's code, though the response said 200
  EXPECT_EQ(result.text, result.tokens.at(0).text);
}

TEST(Client, InvalidUtf8FromTheServerIsReplaced) {
  FakeServer server("invalid_utf8");
  Client client(options_for(server));
  for (bool stream : {false, true}) {
    Result result = client.complete(text_request(true, stream, 0));
    ASSERT_TRUE(result.ok()) << result.error;
    EXPECT_NE(result.text.find("\xEF\xBF\xBD w"), std::string::npos) << result.text;
  }
}

TEST(Client, IgnoreEosGeneratesMaxTokens) {
  FakeServer server("ok");
  Client client(options_for(server));
  Request request = text_request(false, true, 0);
  request.sampling.max_tokens = 12;
  request.sampling.ignore_eos = true;
  Result result = client.complete(request);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.token_ids.size(), 12u);
  EXPECT_EQ(result.chunk_arrival_s.size(), 12u);
  EXPECT_EQ(result.finish_reason, "length");
}

TEST(Client, SilentStreamTimesOutQuickly) {
  expect_failure("slow_tokens", text_request(true, true, 0), Outcome::kTimeout,
                 "no data for 0.5 s after 1 token", 2, 0.5);
}

TEST(Client, SlowResponseHitsRequestTimeout) {
  FakeServer server("slow_tokens");
  ClientOptions options = options_for(server);
  options.request_timeout_s = 0.5;
  Client client(options);
  Clock::time_point t0 = Clock::now();
  Result result = client.complete(text_request(false, false, 0));
  EXPECT_LT(since(t0), 2);
  EXPECT_EQ(result.outcome, Outcome::kTimeout) << result.error;
  EXPECT_NE(result.error.find("no complete response within 0.5 s"), std::string::npos)
      << result.error;
}

TEST(Client, ApiKeyIsSentAndNeverReturned) {
  const std::string key = "sk-h0-7f3a9c1e-do-not-leak";
  auto expect_no_key = [&](const Result& result) {
    for (const std::string* field :
         {&result.error, &result.body_tail, &result.text, &result.finish_reason}) {
      EXPECT_EQ(field->find(key), std::string::npos) << *field;
    }
    for (const TokenInfo& token : result.tokens) EXPECT_EQ(token.text.find(key), std::string::npos);
  };
  FakeServer failing("http_500");
  ClientOptions options = options_for(failing);
  options.api_key = key;
  Result failed = Client(options).complete(text_request(true, false, 2));
  EXPECT_EQ(failed.outcome, Outcome::kHttpError);
  expect_no_key(failed);
  EXPECT_EQ(read_file(failing.auth_file()), "Bearer " + key);

  FakeServer server("ok");
  options.base_url = server.url();
  Client client(options);
  for (bool stream : {false, true}) {
    Result result = client.complete(text_request(true, stream, 2));
    ASSERT_TRUE(result.ok()) << result.error;
    expect_no_key(result);
    EXPECT_EQ(read_file(server.auth_file()), "Bearer " + key);
  }
  // A server that echoes the key inside a successful completion: the answer's texts come back
  // with the key masked (they are stored, printed and put on the dashboard).
  FakeServer echoing("echo_auth");
  options.base_url = echoing.url();
  for (bool stream : {false, true}) {
    Result result = Client(options).complete(text_request(true, stream, 2));
    ASSERT_TRUE(result.ok()) << result.error;
    expect_no_key(result);
    EXPECT_NE(result.text.find("Bearer ***"), std::string::npos) << result.text;
  }
  options.base_url = server.url();
  std::vector<std::string> ids;
  expect_no_key(client.models(&ids));
  EXPECT_EQ(server.log().find(key), std::string::npos);
  options.base_url = "http://127.0.0.1:" + std::to_string(free_port());
  expect_no_key(Client(options).complete(text_request(true, false, 0)));
}

TEST(Client, ConcurrentRequestsOnOneClient) {
  FakeServer server("ok");
  Client client(options_for(server));
  Result expected = client.complete(text_request(true, false, 1));
  ASSERT_TRUE(expected.ok()) << expected.error;
  std::vector<Result> results(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = client.complete(text_request(true, i % 2, 1)); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Result& result : results) {
    ASSERT_TRUE(result.ok()) << result.error;
    EXPECT_EQ(result.token_ids, expected.token_ids);
    EXPECT_EQ(result.text, expected.text);
  }
}

TEST(Client, NondeterministicServerChangesOverlappingRequests) {
  FakeServer server("nondeterministic");
  Client client(options_for(server));
  Result alone = client.complete(text_request(false, false, 0));
  Result again = client.complete(text_request(false, true, 0));
  ASSERT_TRUE(alone.ok() && again.ok()) << alone.error << again.error;
  EXPECT_EQ(alone.token_ids, again.token_ids);
  Result a, b;
  std::thread first([&] { a = client.complete(text_request(false, false, 0)); });
  std::thread second([&] { b = client.complete(text_request(false, true, 0)); });
  first.join();
  second.join();
  ASSERT_TRUE(a.ok() && b.ok()) << a.error << b.error;
  ASSERT_EQ(a.token_ids.size(), alone.token_ids.size());
  EXPECT_EQ(a.token_ids[3], alone.token_ids[3] + 1);
  EXPECT_EQ(b.token_ids[3], alone.token_ids[3] + 1);
  EXPECT_EQ(a.token_ids[2], alone.token_ids[2]);
  EXPECT_NE(a.text, alone.text);
}

// A strict server (as transformers serve: FastAPI with extra fields forbidden) refuses vLLM's
// extension fields with 422; the probe finds the OpenAI dialect and that token-id prompts are
// refused; requests in that dialect then succeed, with no token ids in the answer.
TEST(Dialect, StrictServerIsProbedAsOpenAi) {
  FakeServer server("ok", {"--strict"});
  ASSERT_FALSE(server.url().empty()) << server.log();
  Client client(options_for(server));
  Request r;
  r.model = "fake-model";
  r.messages = {{"user", {{"text", "Hello", ""}}}};
  r.sampling.max_tokens = 4;
  const Result refused = client.complete(r);  // the default dialect: vLLM's fields
  EXPECT_EQ(refused.outcome, Outcome::kHttpError);
  EXPECT_EQ(refused.http_status, 422);
  EXPECT_NE(refused.error.find("Unexpected fields in the request"), std::string::npos)
      << refused.error;

  const Dialect d = probe_dialect(client, "fake-model");
  EXPECT_EQ(d.name, "openai");
  EXPECT_FALSE(d.return_token_ids);
  EXPECT_FALSE(d.ignore_eos);
  EXPECT_FALSE(d.id_prompts);
  EXPECT_NE(d.how.find("vllm fields refused (HTTP 422"), std::string::npos) << d.how;
  EXPECT_NE(d.how.find("token-id prompts refused"), std::string::npos) << d.how;

  r.dialect = d;
  r.sampling.ignore_eos = true;
  r.sampling.top_k = 1;
  const Result ok = client.complete(r);
  EXPECT_TRUE(ok.ok()) << ok.error;
  EXPECT_TRUE(ok.token_ids.empty());
  EXPECT_FALSE(ok.text.empty());
  const nlohmann::json body = Client::body(r);
  for (const char* field :
       {"return_token_ids", "ignore_eos", "top_k", "return_tokens_as_token_ids"})
    EXPECT_FALSE(body.contains(field)) << field;
}

TEST(Dialect, PermissiveServerIsProbedAsVllm) {
  FakeServer server("ok");
  ASSERT_FALSE(server.url().empty()) << server.log();
  Client client(options_for(server));
  const Dialect d = probe_dialect(client, "fake-model");
  EXPECT_EQ(d.name, "vllm") << d.how;
  EXPECT_TRUE(d.return_token_ids);
  EXPECT_TRUE(d.id_prompts);
  EXPECT_EQ(Dialect::from_json(d.to_json()).to_json(), d.to_json());
  ASSERT_TRUE(dialect_named("sglang"));
  EXPECT_FALSE(dialect_named("sglang")->return_token_ids);
  EXPECT_TRUE(dialect_named("sglang")->ignore_eos);
  EXPECT_FALSE(dialect_named("tgi"));
}

}  // namespace
}  // namespace h0::service
