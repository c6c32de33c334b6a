// The executor on the tiny synthetic models: prefill equals token-by-token decode over the
// paged cache, probes are named as HF modules, and the profile covers every op.
#include <cmath>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "compare/metrics.h"
#include "io/sharded_checkpoint.h"
#include "io/safetensors_reader.h"
#include "model/executor.h"
#include "model/generation.h"
#include "model/synth.h"
#include "test_util.h"

namespace h0::model {
namespace {

struct Tiny {
  h0::test::TempDir dir;
  Architecture arch;
  io::ShardedCheckpoint ckpt;
  explicit Tiny(const std::string& name)
      : arch((synthesize_checkpoint(h0::test::source_path("configs/models/" + name), dir.path(), {0, 1}),
              load_architecture(dir.path()))),
        ckpt(io::ShardedCheckpoint::open(dir.path())) {}
};

const std::vector<int64_t> kPrompt = {1000, 17, 256, 3, 999, 42, 511};

double max_abs_diff(const tensor::Tensor& a, const tensor::Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.at(i) - b.at(i)));
  return m;
}

class TinyText : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(TinyText, PrefillEqualsTokenByTokenDecode) {
  const auto& [name, backend_name] = GetParam();
  Tiny m(name);
  auto be = backend::Backend::open({backend_name, "", nlohmann::json::object()});
  Executor ex(m.arch, m.ckpt, *be, {});
  const int a = ex.new_sequence();
  const tensor::Tensor prefill = ex.forward(a, kPrompt);
  ASSERT_EQ(prefill.shape(), (tensor::Shape{int64_t(kPrompt.size()), m.arch.text.vocab_size}));
  const int b = ex.new_sequence();
  for (size_t t = 0; t < kPrompt.size(); ++t) {
    const tensor::Tensor step = ex.forward(b, {kPrompt[t]});
    const int64_t V = m.arch.text.vocab_size;
    const tensor::Tensor row = prefill.slice_rows(int64_t(t), int64_t(t) + 1).reshape({1, V});
    // The reference computes each row alone in f64 and rounds once: bit-identical. The cpu
    // backend blocks its GEMMs by T: f32 rounding differences only.
    const double tol = backend_name == "reference" ? 0.0 : 1e-4;
    EXPECT_LE(max_abs_diff(step, row), tol) << "position " << t;
  }
  EXPECT_EQ(ex.sequence_length(b), int64_t(kPrompt.size()));
  const std::vector<int64_t> next = ex.greedy(prefill);
  EXPECT_EQ(next.size(), kPrompt.size());
}

INSTANTIATE_TEST_SUITE_P(Models, TinyText,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3-moe", "tiny-deepseek-v3", "tiny-llava"),
                                            ::testing::Values("reference", "cpu")),
                         [](const auto& p) {
                           std::string n = std::get<0>(p.param) + "_" + std::get<1>(p.param);
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

TEST(Executor, ProbesAreHfModuleNamesInExecutionOrder) {
  Tiny m("tiny-qwen3-moe");
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  Executor ex(m.arch, m.ckpt, *be, {});
  ProbeRecorder probes;
  ex.forward(ex.new_sequence(), kPrompt, &probes);
  std::vector<std::string> names;
  for (const auto& [n, t] : probes.probes()) names.push_back(n);
  const std::vector<std::string> want = {
      "model.embed_tokens", "model.layers.0.input_layernorm", "model.layers.0.self_attn",
      "model.layers.0.post_attention_layernorm", "model.layers.0.mlp", "model.layers.0"};
  ASSERT_GE(names.size(), want.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 6), want);
  EXPECT_EQ(names.back(), "logits");
  EXPECT_EQ(probes.find("model.layers.1.mlp")->shape(), (tensor::Shape{7, 64}));
  bool gate = false;
  for (const auto& s : ex.ops().profile()) gate = gate || (s.op == "moe_gate" && s.calls == 2);
  EXPECT_TRUE(gate);
}

}  // namespace
}  // namespace h0::model

namespace h0::model {
namespace {

// The library's cosine (compare/metrics.h, checked against numpy), accumulated in f64.
double cosine(const tensor::Tensor& a, const tensor::Tensor& b) {
  return compare::compute_metrics(a, b, {0, 0, false}).cosine;
}

class Golden : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(Golden, LogitsProbesAndGreedyMatchTransformers) {
  const auto& [name, prompt] = GetParam();
  const io::SafetensorsFile g = io::SafetensorsFile::open(h0::test::golden_path("models/" + name + "/" + prompt + ".safetensors"));
  Tiny m(name);
  auto be = backend::Backend::open({"reference", "", nlohmann::json::object()});
  Executor ex(m.arch, m.ckpt, *be, {});
  const tensor::Tensor ids_t = g.get("input_ids");
  std::vector<int64_t> ids(ids_t.data_as<int64_t>(), ids_t.data_as<int64_t>() + ids_t.numel());
  ProbeRecorder probes;
  const tensor::Tensor greedy_ids = g.get("greedy_ids");
  const Generation gen = generate_greedy(ex, ids, int(greedy_ids.numel()), &probes);
  EXPECT_GE(cosine(gen.prompt_logits, g.get("logits")), 0.99999);
  for (const auto& [probe, value] : probes.probes()) {
    if (g.find(probe) == nullptr) continue;
    EXPECT_GE(cosine(value, g.get(probe)), 0.99999) << probe;
  }
  for (int64_t i = 0; i < greedy_ids.numel(); ++i) EXPECT_EQ(gen.ids[size_t(i)], greedy_ids.data_as<int64_t>()[i]) << "step " << i;
}

INSTANTIATE_TEST_SUITE_P(Tiny, Golden,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3-moe", "tiny-deepseek-v3"),
                                            ::testing::Values("p7", "p13")),
                         [](const auto& p) {
                           std::string n = std::get<0>(p.param) + "_" + std::get<1>(p.param);
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace h0::model
