// `harness serve` end to end: the real binary as a child process on a free port (tiny-llama,
// and tiny-llava with an API key), spoken to over HTTP: health, models, completions streamed and
// not, greedy output equal to the executor's own, images in chat, batch invariance under
// concurrent requests, stop strings, errors; SIGTERM ends it with exit code 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "backend/backend.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/executor.h"
#include "model/exec/generation.h"
#include "model/weights/model_source.h"
#include "test_util.h"

namespace h0::service {
namespace {

using nlohmann::json;

// A `harness serve` child: started with the given flags, stopped with SIGTERM.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args, const std::string& env = "") {
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      const int log = open(log_.file("serve.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(log, 2);
      close(out[0]);
      if (!env.empty()) putenv(const_cast<char*>(env.c_str()));
      args.insert(args.begin(), {H0_HARNESS_BIN, "serve", "--port", "0"});
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    char c;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    std::smatch m;
    if (std::regex_search(line, m,
                          std::regex("^serving (\\S+) on http://127\\.0\\.0\\.1:(\\d+)"))) {
      name_ = m[1];
      port_ = std::stoi(m[2]);
    }
    first_line_ = line;
  }
  ~ServeProcess() { stop(); }

  // SIGTERM, then the exit status (-1 when it did not exit normally).
  int stop() {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return exit_code_;
  }
  int port() const { return port_; }
  const std::string& name() const { return name_; }
  const std::string& first_line() const { return first_line_; }
  std::string log() const {
    std::ifstream in(log_.file("serve.log"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  h0::test::TempDir log_;
  pid_t pid_ = -1;
  int port_ = 0, exit_code_ = -1;
  std::string name_, first_line_;
};

struct Reply {
  int status = 0;
  json body;                 // non-streaming
  std::vector<json> events;  // streaming: each data: JSON, [DONE] excluded
  bool done = false;         // streaming: ended with [DONE]
};

Reply post(int port, const std::string& path, const json& body, const std::string& key = "") {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60, 0);
  httplib::Headers headers;
  if (!key.empty()) headers.emplace("Authorization", "Bearer " + key);
  auto res = cli.Post(path.c_str(), headers,
                      body.is_string() ? body.get<std::string>() : body.dump(), "application/json");
  Reply r;
  if (!res) return r;
  r.status = res->status;
  if (res->get_header_value("Content-Type").rfind("text/event-stream", 0) == 0) {
    std::istringstream in(res->body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("data: ", 0) != 0) continue;
      if (line == "data: [DONE]") {
        r.done = true;
      } else {
        r.events.push_back(json::parse(line.substr(6)));
      }
    }
  } else {
    r.body = json::parse(res->body, nullptr, false);
  }
  return r;
}

std::string base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                       uint8_t(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += k[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

const std::vector<int64_t> kPrompt = {1000, 17, 256, 3, 999, 42, 511};

class Serve : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    llama_ = new ServeProcess(
        {"--model", h0::test::source_path("configs/models/tiny-llama"), "--max-batch", "8"});
  }
  static void TearDownTestSuite() {
    delete llama_;
    llama_ = nullptr;
  }
  void SetUp() override {
    ASSERT_GT(llama_->port(), 0) << llama_->first_line() << "\n" << llama_->log();
  }
  static int port() { return llama_->port(); }

  static ServeProcess* llama_;
};
ServeProcess* Serve::llama_ = nullptr;

TEST_F(Serve, HealthAndModels) {
  httplib::Client cli("127.0.0.1", port());
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto models = cli.Get("/v1/models");
  ASSERT_TRUE(models);
  const json m = json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  ASSERT_EQ(m["data"].size(), 1u);
  EXPECT_EQ(m["data"][0]["id"], "tiny-llama");
  EXPECT_EQ(m["data"][0]["object"], "model");
  EXPECT_EQ(m["data"][0]["owned_by"], "harness");
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("harness_engine_mean_batch_size"), std::string::npos);
}

// tiny-llama in this process on the cpu backend: what the server's answers are checked against.
struct LocalTinyLlama {
  model::ModelSource src = model::resolve_model(h0::test::source_path("configs/models/tiny-llama"));
  model::Architecture arch = model::load_architecture(src.dir);
  io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(src.dir);
  std::unique_ptr<backend::Backend> be = backend::Backend::open({"cpu", "", json::object()});
  model::Executor ex{arch, ckpt, *be, {}};
};

TEST_F(Serve, GreedyCompletionEqualsTheExecutorsGreedyGeneration) {
  const Reply r = post(port(), "/v1/completions",
                       {{"model", "tiny-llama"},
                        {"prompt", kPrompt},
                        {"max_tokens", 10},
                        {"temperature", 0},
                        {"ignore_eos", true},
                        {"return_token_ids", true}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const json& c = r.body["choices"][0];
  EXPECT_EQ(r.body["object"], "text_completion");
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_EQ(c["prompt_token_ids"].get<std::vector<int64_t>>(), kPrompt);
  EXPECT_EQ(r.body["usage"],
            json({{"prompt_tokens", 7}, {"completion_tokens", 10}, {"total_tokens", 17}}));

  LocalTinyLlama local;
  model::Executor& ex = local.ex;
  EXPECT_EQ(c["token_ids"].get<std::vector<int64_t>>(),
            model::generate_greedy(ex, kPrompt, 10).ids);
}

// echo with logprobs: the prompt comes back first, each token after the first with
// log_softmax of the executor's logits at the position before it; offsets count characters of
// the echoed text.
TEST_F(Serve, EchoScoresThePromptWithTheExecutorsLogits) {
  const Reply r = post(port(), "/v1/completions",
                       {{"model", "tiny-llama"},
                        {"prompt", kPrompt},
                        {"max_tokens", 1},
                        {"temperature", 0},
                        {"echo", true},
                        {"logprobs", 1}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const json& lp = r.body["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), kPrompt.size() + 1);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["text_offset"][0], 0);

  LocalTinyLlama local;
  model::Executor& ex = local.ex;
  const tensor::Tensor logits = ex.forward(ex.new_sequence(), kPrompt);
  const int64_t V = logits.dim(1);
  for (size_t t = 1; t < kPrompt.size(); ++t) {
    const float* row = logits.data_as<float>() + int64_t(t - 1) * V;
    const double lse = model::log_sum_exp(row, V);
    EXPECT_NEAR(lp["token_logprobs"][t].get<double>(), double(row[kPrompt[t]]) - lse, 1e-5) << t;
    EXPECT_GE(lp["text_offset"][t].get<int64_t>(), lp["text_offset"][t - 1].get<int64_t>());
  }
  // The prompt's text (here its ids decoded) precedes the completion's.
  const std::string text = r.body["choices"][0]["text"];
  const int64_t last = lp["text_offset"][kPrompt.size()];
  EXPECT_GT(last, 0);
  EXPECT_LT(size_t(last), text.size() + 1);

  const Reply streamed =
      post(port(), "/v1/completions",
           {{"model", "tiny-llama"}, {"prompt", "hi"}, {"echo", true}, {"stream", true}});
  EXPECT_EQ(streamed.status, 400);
  EXPECT_NE(streamed.body.dump().find("echo"), std::string::npos);
}

TEST_F(Serve, StreamingGivesTheSameTokensTextAndLogprobs) {
  json body = {{"prompt", kPrompt},  {"max_tokens", 12},         {"temperature", 0.8}, {"seed", 7},
               {"ignore_eos", true}, {"return_token_ids", true}, {"logprobs", 2}};
  const Reply full = post(port(), "/v1/completions", body);
  ASSERT_EQ(full.status, 200) << full.body.dump();
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const Reply streamed = post(port(), "/v1/completions", body);
  ASSERT_EQ(streamed.status, 200);
  EXPECT_TRUE(streamed.done);
  std::string text;
  std::vector<int64_t> ids;
  std::vector<double> lps;
  json usage;
  for (const json& e : streamed.events) {
    if (!e["usage"].is_null()) usage = e["usage"];
    if (e["choices"].empty()) continue;
    const json& c = e["choices"][0];
    text += c["text"].get<std::string>();
    for (int64_t id : c["token_ids"]) ids.push_back(id);
    for (double lp : c["logprobs"]["token_logprobs"]) lps.push_back(lp);
  }
  const json& c = full.body["choices"][0];
  EXPECT_EQ(streamed.events[0]["choices"][0]["prompt_token_ids"].get<std::vector<int64_t>>(),
            kPrompt);
  EXPECT_EQ(ids, c["token_ids"].get<std::vector<int64_t>>());
  EXPECT_EQ(text, c["text"].get<std::string>());
  EXPECT_EQ(lps, c["logprobs"]["token_logprobs"].get<std::vector<double>>());
  EXPECT_EQ(usage, full.body["usage"]);
  EXPECT_EQ(c["logprobs"]["top_logprobs"].size(), 12u);
}

TEST_F(Serve, ChatStreamsRoleFirstAndTheSameContent) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Say something."}}}},
               {"max_tokens", 16},
               {"temperature", 0},
               {"ignore_eos", true},
               {"logprobs", true},
               {"top_logprobs", 2},
               {"return_token_ids", true}};
  const Reply full = post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(full.status, 200) << full.body.dump();
  EXPECT_EQ(full.body["object"], "chat.completion");
  const json& msg = full.body["choices"][0]["message"];
  EXPECT_EQ(msg["role"], "assistant");
  const json& lp = full.body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 16u);
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_TRUE(lp[0]["bytes"].is_array());
  EXPECT_EQ(full.body["prompt_token_ids"][0], 1019);  // <|begin_of_text|> from the template
  body["stream"] = true;
  const Reply streamed = post(port(), "/v1/chat/completions", body);
  ASSERT_GE(streamed.events.size(), 2u);
  EXPECT_EQ(streamed.events[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(streamed.events[0]["choices"][0]["delta"]["role"], "assistant");
  std::string content;
  std::vector<int64_t> ids;
  for (const json& e : streamed.events) {
    content += e["choices"][0]["delta"].value("content", "");
    for (int64_t id : e["choices"][0]["token_ids"]) ids.push_back(id);
  }
  EXPECT_EQ(content, msg["content"].get<std::string>());
  EXPECT_EQ(ids, full.body["choices"][0]["token_ids"].get<std::vector<int64_t>>());
  EXPECT_EQ(streamed.events.back()["choices"][0]["finish_reason"], "length");
}

TEST_F(Serve, StopStringsCutTheText) {
  json body = {{"prompt", kPrompt}, {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true}};
  const std::string text = post(port(), "/v1/completions", body).body["choices"][0]["text"];
  ASSERT_GE(text.size(), 6u);
  size_t begin = text.size() / 2, end = begin + 1;  // one whole character from the middle
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xc0) == 0x80) --begin;
  while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) ++end;
  const std::string stop = text.substr(begin, end - begin);
  body["stop"] = stop;
  const Reply cut = post(port(), "/v1/completions", body);
  EXPECT_EQ(cut.body["choices"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(cut.body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(cut.body["choices"][0]["stop_reason"], stop);
  body["stream"] = true;
  std::string streamed;
  for (const json& e : post(port(), "/v1/completions", body).events)
    streamed += e["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(streamed, text.substr(0, text.find(stop)));
}

// Eight requests at once (greedy and seeded sampling, prompts of several lengths) share forward
// passes; each must come back exactly as it did alone.
TEST_F(Serve, ConcurrentRequestsEqualTheirSequentialResults) {
  std::vector<json> bodies;
  for (int i = 0; i < 8; ++i) {
    std::vector<int64_t> prompt = {1000};
    for (int j = 0; j <= 3 * i; ++j) prompt.push_back((37 * i + 11 * j + 5) % 1000);
    json b = {{"prompt", prompt},
              {"max_tokens", 8 + 2 * i},
              {"ignore_eos", true},
              {"return_token_ids", true},
              {"logprobs", 1}};
    b["temperature"] = i % 2 == 0 ? 0.0 : 0.9;
    if (i % 2 == 1) b["seed"] = 100 + i;
    bodies.push_back(b);
  }
  std::vector<json> alone, together(bodies.size());
  for (const json& b : bodies) alone.push_back(post(port(), "/v1/completions", b).body);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < bodies.size(); ++i) {
    threads.emplace_back([&, i] { together[i] = post(port(), "/v1/completions", bodies[i]).body; });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < bodies.size(); ++i) {
    ASSERT_TRUE(together[i].contains("choices")) << together[i].dump();
    const json &got = together[i]["choices"][0], &want = alone[i]["choices"][0];
    EXPECT_EQ(got["token_ids"], want["token_ids"]) << "request " << i;
    EXPECT_EQ(got["text"], want["text"]) << "request " << i;
    // The cpu platform's GEMM rows depend on the batch's row count (see batch_engine_test.cc):
    // logprobs agree to f32 rounding, not bit for bit.
    const std::vector<double> a = got["logprobs"]["token_logprobs"],
                              b = want["logprobs"]["token_logprobs"];
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k)
      EXPECT_NEAR(a[k], b[k], 1e-5) << "request " << i << " token " << k;
  }
  httplib::Client cli("127.0.0.1", port());
  const std::string metrics = cli.Get("/metrics")->body;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics, m, std::regex("harness_engine_max_batch_size (\\d+)")));
  EXPECT_GT(std::stoi(m[1]), 1);
}

TEST_F(Serve, BadRequestsNameTheField) {
  struct Case {
    json body;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"prompt", kPrompt}, {"max_tokens", -1}}, "max_tokens"},
      {{{"prompt", kPrompt}, {"temperature", "hot"}}, "temperature"},
      {{{"prompt", kPrompt}, {"top_p", 0}}, "top_p"},
      {{{"prompt", {1, 2, 5000}}}, "prompt"},
      {{{"max_tokens", 4}}, "prompt"},
      {{{"prompt", kPrompt}, {"n", 2}}, "n"},
      {{{"prompt", kPrompt}, {"max_tokens", 100000}}, "max_tokens"},
      {{{"prompt", kPrompt}, {"stop", 3}}, "stop"},
      // Refused, not ignored: no guided decoding, no tool calls.
      {{{"prompt", kPrompt}, {"response_format", {{"type", "json_object"}}}}, "response_format"},
      {{{"prompt", kPrompt}, {"structured_outputs", {{"choice", {"a", "b"}}}}},
       "structured_outputs"},
      {{{"prompt", kPrompt},
        {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
        {"tool_choice", "required"}},
       "tools"},
  };
  for (const Case& c : cases) {
    const Reply r = post(port(), "/v1/completions", c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump();
    EXPECT_EQ(r.body["error"]["code"], 400);
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find(c.field), std::string::npos)
        << r.body.dump();
  }
  const Reply no_messages = post(port(), "/v1/chat/completions", json{{"max_tokens", 4}});
  EXPECT_EQ(no_messages.status, 400);
  EXPECT_EQ(no_messages.body["error"]["param"], "messages");
  const json image = {
      {"role", "user"},
      {"content",
       {{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}}}}}}};
  const Reply no_vision = post(port(), "/v1/chat/completions", json{{"messages", {image}}});
  EXPECT_EQ(no_vision.status, 400);
  EXPECT_NE(no_vision.body["error"]["message"].get<std::string>().find("vision"),
            std::string::npos);
  // What the template families cannot render is refused at the field, not rendered as plain text.
  const json user = {{"role", "user"}, {"content", "Hi"}};
  const json call = {
      {"role", "assistant"},
      {"content", nullptr},
      {"tool_calls",
       {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}};
  const std::vector<std::pair<json, std::string>> chats = {
      {{{"messages", {user}}, {"add_generation_prompt", false}}, "add_generation_prompt"},
      {{{"messages", {user}}, {"chat_template_kwargs", {{"enable_thinking", false}}}},
       "chat_template_kwargs"},
      {{{"messages", {user, call}}}, "messages[1].tool_calls"},
      {{{"messages", {user, {{"role", "tool"}, {"content", "1"}, {"tool_call_id", "c1"}}}}},
       "messages[1].role"},
      {{{"messages", {user, {{"role", "assistant"}, {"content", "a"}, {"reasoning", "r"}}}}},
       "messages[1].reasoning"},
  };
  for (const auto& [body, field] : chats) {
    const Reply r = post(port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 400) << body.dump();
    EXPECT_EQ(r.body["error"]["param"], field) << r.body.dump();
  }
  EXPECT_EQ(post(port(), "/v1/chat/completions",
                 {{"messages", {user}}, {"add_generation_prompt", true}, {"max_tokens", 1}})
                .status,
            200);
  EXPECT_EQ(post(port(), "/v1/completions", json("{not json")).status, 400);
  // A body nested 100k deep (nlohmann's parser recurses per level): 400, and the server lives.
  const Reply deep =
      post(port(), "/v1/completions", json(std::string(100000, '[') + std::string(100000, ']')));
  EXPECT_EQ(deep.status, 400);
  EXPECT_EQ(post(port(), "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 1}}).status, 200);
  const Reply wrong = post(port(), "/v1/completions", {{"model", "gpt-4"}, {"prompt", kPrompt}});
  EXPECT_EQ(wrong.status, 404);
  EXPECT_EQ(wrong.body["error"]["code"], 404);
}

// The kernel's accept queue as `ss` reports it for a listening socket (its Send-Q column), or
// -1 without ss.
int listen_backlog_of(int port) {
  std::FILE* p =
      popen(("ss -Hltn 'sport = :" + std::to_string(port) + "' 2>/dev/null").c_str(), "r");
  if (p == nullptr) return -1;
  char line[512] = {0};
  const bool got = std::fgets(line, sizeof line, p) != nullptr;
  pclose(p);
  int recv_q = 0, send_q = -1;
  if (!got || std::sscanf(line, "LISTEN %d %d", &recv_q, &send_q) != 2) return -1;
  return send_q;
}

// 64 clients at once (cpp-httplib's own backlog of 5 reset some): every one is answered.
TEST_F(Serve, SixtyFourClientsAtOnceAreAllServed) {
  const int backlog = listen_backlog_of(port());
  if (backlog >= 0) {
    EXPECT_GE(backlog, 256);
  }
  std::atomic<int> ready{0};
  std::vector<int> status(64, 0);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < status.size(); ++i) {
    clients.emplace_back([&, i] {
      ++ready;
      while (ready.load() < static_cast<int>(status.size())) std::this_thread::yield();
      status[i] = post(port(), "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 2}}).status;
    });
  }
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < status.size(); ++i) EXPECT_EQ(status[i], 200) << "client " << i;
}

TEST(ServeImage, ChatWithAnImageAndAnApiKey) {
  ServeProcess llava({"--model", h0::test::source_path("configs/models/tiny-llava"),
                      "--api-key-env", "H0_TEST_SERVE_KEY"},
                     "H0_TEST_SERVE_KEY=sekret");
  ASSERT_GT(llava.port(), 0) << llava.first_line() << "\n" << llava.log();
  std::ifstream in(h0::test::golden_path("models/images/checker.png"), std::ios::binary);
  std::stringstream png;
  png << in.rdbuf();
  const json body = {
      {"model", "tiny-llava"},
      {"messages",
       {{{"role", "user"},
         {"content",
          {{{"type", "text"}, {"text", "What is this?"}},
           {{"type", "image_url"},
            {"image_url", {{"url", "data:image/png;base64," + base64(png.str())}}}}}}}}},
      {"max_tokens", 6},
      {"temperature", 0},
      {"ignore_eos", true},
      {"return_token_ids", true}};
  EXPECT_EQ(post(llava.port(), "/v1/chat/completions", body).status, 401);
  const Reply r = post(llava.port(), "/v1/chat/completions", body, "sekret");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const std::vector<int64_t> prompt = r.body["prompt_token_ids"];
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), 1003), 16);
  EXPECT_EQ(r.body["choices"][0]["token_ids"].size(), 6u);
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], int64_t(prompt.size()));
  // Two images but one placeholder's worth of tokens cannot happen; a bad image is a 400.
  json bad = body;
  bad["messages"][0]["content"][1]["image_url"]["url"] = "data:image/png;base64,iVBORw0KGgo=";
  EXPECT_EQ(post(llava.port(), "/v1/chat/completions", bad, "sekret").status, 400);
  EXPECT_EQ(llava.stop(), 0) << llava.log();
  EXPECT_EQ(llava.log().find("sekret"), std::string::npos);
}

TEST(ServeStop, SigtermExitsZero) {
  ServeProcess p(
      {"--model", h0::test::source_path("configs/models/tiny-qwen3-moe"), "--served-name", "moe"});
  ASSERT_EQ(p.name(), "moe") << p.first_line();
  const Reply r = post(p.port(), "/v1/chat/completions",
                       {{"model", "moe"},
                        {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                        {"max_tokens", 3},
                        {"ignore_eos", true}});
  EXPECT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(p.stop(), 0) << p.log();
  EXPECT_NE(p.log().find("completion_tokens=3"), std::string::npos) << p.log();
}

}  // namespace
}  // namespace h0::service
