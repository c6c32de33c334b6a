// Continuous batching on the tiny models: a greedy request equals the executor's own greedy
// generation, a request's tokens and logprobs do not depend on what else is in the batch,
// requests wait for KV room, end at eos, and can be cancelled.
#include "service/batch_engine.h"

#include <gtest/gtest.h>

#include <thread>

#include "backend/backend.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/generation.h"
#include "model/weights/synth.h"
#include "test_util.h"

namespace h0::service {
namespace {

struct Tiny {
  h0::test::TempDir dir;
  model::Architecture arch;
  io::ShardedCheckpoint ckpt;
  explicit Tiny(const std::string& name)
      : arch((model::synthesize_checkpoint(h0::test::source_path("configs/models/" + name),
                                           dir.path(), {0, 1}),
              model::load_architecture(dir.path()))),
        ckpt(io::ShardedCheckpoint::open(dir.path())) {}
};

struct Result {
  std::vector<TokenEvent> tokens;
  std::string finish_reason, error;
  std::vector<int64_t> ids() const {
    std::vector<int64_t> v;
    for (const auto& t : tokens) v.push_back(t.id);
    return v;
  }
};

Result drain(RequestStream& s) {
  Result r;
  for (;;) {
    StreamEvent e = s.next();
    if (e.kind == StreamEvent::Kind::kError) {
      r.error = e.error;
      return r;
    }
    r.tokens.push_back(e.token);
    if (e.last()) {
      r.finish_reason = e.finish_reason;
      return r;
    }
  }
}

GenerationRequest request(std::vector<int64_t> prompt, int64_t max_tokens, double temperature = 0,
                          uint64_t seed = 0) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  r.sampling.top_logprobs = 3;
  r.sampling.ignore_eos = true;
  return r;
}

class Engine : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(Engine, GreedyEqualsGenerateGreedy) {
  const auto& [name, backend_name] = GetParam();
  Tiny m(name);
  auto be = backend::Backend::open({backend_name, "", nlohmann::json::object()});
  const std::vector<int64_t> prompt = {1000, 17, 256, 3, 999, 42, 511};
  model::Generation want;
  {
    model::Executor ex(m.arch, m.ckpt, *be, {});
    want = model::generate_greedy(ex, prompt, 12);
  }
  model::Executor ex(m.arch, m.ckpt, *be, {});
  BatchEngine engine(ex, {});
  const Result got = drain(*engine.submit(request(prompt, 12)));
  EXPECT_EQ(got.error, "");
  EXPECT_EQ(got.ids(), want.ids);
  EXPECT_EQ(got.finish_reason, "length");
  ASSERT_EQ(got.tokens.size(), want.top5.size());
  for (size_t i = 0; i < got.tokens.size(); ++i) {  // logprobs: f64 log-softmax of the same row
    EXPECT_EQ(got.tokens[i].logprob, want.top5[i].logprobs[0]) << i;
    ASSERT_EQ(got.tokens[i].top.size(), 3u);
    EXPECT_EQ(got.tokens[i].top[1].first, want.top5[i].ids[1]);
  }
}

// The determinism check's question: is a request's output the same alone and in a batch? One
// greedy and one sampled request, each alone, then each among three others of other lengths
// (their prefills and decodes share its forward passes): the same token ids, and logprobs
// bit-identical on the reference backend. The cpu backend's rows depend on the GEMM's row count
// (OpenBLAS's small-matrix kernel, see tests/model/executor_test.cc): f32 rounding differences.
TEST_P(Engine, ResultsDoNotDependOnTheBatch) {
  const auto& [name, backend_name] = GetParam();
  Tiny m(name);
  auto be = backend::Backend::open({backend_name, "", nlohmann::json::object()});
  model::Executor ex(m.arch, m.ckpt, *be, {});
  BatchEngine engine(ex, {});
  const std::vector<GenerationRequest> probes = {request({1000, 5, 6, 7, 8, 9, 10, 11, 12}, 10),
                                                 request({1000, 300, 301}, 10, 0.9, 1234)};
  for (const GenerationRequest& probe : probes) {
    const Result alone = drain(*engine.submit(probe));
    std::vector<std::shared_ptr<RequestStream>> others;
    others.push_back(engine.submit(request({1000, 20, 21}, 14)));
    others.push_back(engine.submit(
        request({1000, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52}, 6, 0.7, 9)));
    const auto mine = engine.submit(probe);
    others.push_back(engine.submit(request({1000, 60}, 3)));
    const Result batched = drain(*mine);
    for (auto& o : others) EXPECT_EQ(drain(*o).error, "");
    ASSERT_EQ(batched.error, "");
    EXPECT_EQ(batched.ids(), alone.ids());
    ASSERT_EQ(batched.tokens.size(), alone.tokens.size());
    const double tol = backend_name == "reference" ? 0.0 : 1e-5;
    for (size_t i = 0; i < alone.tokens.size(); ++i) {
      EXPECT_NEAR(batched.tokens[i].logprob, alone.tokens[i].logprob, tol) << "token " << i;
      ASSERT_EQ(batched.tokens[i].top.size(), alone.tokens[i].top.size());
      for (size_t k = 0; k < alone.tokens[i].top.size(); ++k) {
        EXPECT_EQ(batched.tokens[i].top[k].first, alone.tokens[i].top[k].first) << "token " << i;
        EXPECT_NEAR(batched.tokens[i].top[k].second, alone.tokens[i].top[k].second, tol)
            << "token " << i;
      }
    }
  }
  EXPECT_GT(engine.stats().max_batch, 1);
}

INSTANTIATE_TEST_SUITE_P(Models, Engine,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3-moe",
                                                              "tiny-deepseek-v3"),
                                            ::testing::Values("reference", "cpu")),
                         [](const auto& p) {
                           std::string n = std::get<0>(p.param) + "_" + std::get<1>(p.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

class EngineLimits : public ::testing::Test {
 protected:
  EngineLimits()
      : m_("tiny-llama"), be_(backend::Backend::open({"cpu", "", nlohmann::json::object()})) {}
  Tiny m_;
  std::unique_ptr<backend::Backend> be_;
};

TEST_F(EngineLimits, RequestsWaitForKvRoomAndOneThatNeverFitsFailsAtOnce) {
  model::ExecutorOptions o;
  o.max_tokens = 64;  // 4 blocks of 16: two requests of 32 slots at a time
  model::Executor ex(m_.arch, m_.ckpt, *be_, o);
  BatchEngine engine(ex, {});
  const Result too_big = drain(*engine.submit(request({1, 2, 3}, 62)));
  EXPECT_NE(too_big.error.find("--kv-tokens"), std::string::npos) << too_big.error;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 5; ++i) streams.push_back(engine.submit(request({1000, 7 + i, 8}, 29)));
  for (auto& s : streams) {
    const Result r = drain(*s);
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.tokens.size(), 29u);
  }
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.max_batch, 2);
  EXPECT_EQ(st.finished, 5);
  EXPECT_EQ(st.failed, 0);
  EXPECT_NE(drain(*engine.submit(request({5000}, 1))).error.find("outside the vocabulary"),
            std::string::npos);
}

TEST_F(EngineLimits, StopsAtEosUnlessIgnored) {
  const std::vector<int64_t> prompt = {1000, 17, 256, 3};
  std::vector<int64_t> greedy;
  {
    model::Executor ex(m_.arch, m_.ckpt, *be_, {});
    greedy = model::generate_greedy(ex, prompt, 4).ids;
  }
  model::Executor ex(m_.arch, m_.ckpt, *be_, {});
  EngineOptions o;
  o.eos_ids = {greedy[2]};
  BatchEngine engine(ex, o);
  GenerationRequest r = request(prompt, 4);
  r.sampling.ignore_eos = false;
  const Result stopped = drain(*engine.submit(r));
  EXPECT_EQ(stopped.finish_reason, "stop");
  EXPECT_EQ(stopped.ids(), std::vector<int64_t>(greedy.begin(), greedy.begin() + 3));
  r.sampling.ignore_eos = true;
  EXPECT_EQ(drain(*engine.submit(r)).ids(), greedy);
}

TEST_F(EngineLimits, CancelledRequestsFreeTheirRoom) {
  model::ExecutorOptions o;
  o.max_tokens = 512;
  model::Executor ex(m_.arch, m_.ckpt, *be_, o);
  BatchEngine engine(ex, {});
  auto long_one = engine.submit(request({1000, 1}, 500));
  EXPECT_EQ(long_one->next().kind, StreamEvent::Kind::kToken);
  long_one->cancel();
  // Needs the whole cache: admitted only once the cancelled request is gone.
  const Result next = drain(*engine.submit(request({1000, 2}, 500)));
  EXPECT_EQ(next.error, "");
  EXPECT_EQ(next.tokens.size(), 500u);
  EXPECT_EQ(engine.stats().cancelled, 1);
}

}  // namespace
}  // namespace h0::service
