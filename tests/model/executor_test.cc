// The executor on the tiny synthetic models: prefill equals token-by-token decode over the
// paged cache, probes are named as HF modules, and the profile covers every op.
#include "model/exec/executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "base/error.h"
#include "compare/metrics.h"
#include "io/safetensors_reader.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/generation.h"
#include "model/weights/synth.h"
#include "tensor/philox.h"
#include "test_util.h"
#include "tiny_checkpoint.h"

namespace h0::model {
namespace {

using tiny::checkpoint_of;

struct Tiny {
  h0::test::TempDir dir;
  std::string path;
  Architecture arch;
  io::ShardedCheckpoint ckpt;
  explicit Tiny(const std::string& name)
      : path(checkpoint_of(name, dir.path())),
        arch(load_architecture(path)),
        ckpt(io::ShardedCheckpoint::open(path)) {}
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
    // backend blocks its GEMMs by T: f32 rounding differences only (OpenBLAS's small-matrix
    // kernel, as in BatchedText below), which Gated DeltaNet's recurrence amplifies
    // (tiny-qwen3-5: 1.2e-4 on this Xeon's kernel, bit-identical with
    // OPENBLAS_CORETYPE=Sandybridge), so the bound is relative to the logits' peak. A hybrid's
    // recurrent state crosses calls as f32 (gated_delta_rule's state_out), where one prefill
    // keeps it in f64.
    const bool hybrid = m.arch.text.linear.num_v_heads > 0;
    double peak = 1;
    for (int64_t j = 0; j < row.numel(); ++j) peak = std::max(peak, std::abs(row.at(j)));
    const double tol = backend_name == "reference" && !hybrid ? 0.0 : 1e-4 * peak;
    EXPECT_LE(max_abs_diff(step, row), tol) << "position " << t << ", peak |logit| " << peak;
  }
  EXPECT_EQ(ex.sequence_length(b), int64_t(kPrompt.size()));
  const std::vector<int64_t> next = ex.greedy(prefill);
  EXPECT_EQ(next.size(), kPrompt.size());
}

INSTANTIATE_TEST_SUITE_P(Models, TinyText,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3-moe",
                                                              "tiny-deepseek-v3", "tiny-llava",
                                                              "tiny-qwen3-next", "tiny-qwen3-5",
                                                              "tiny-deepseek-v32"),
                                            ::testing::Values("reference", "cpu")),
                         [](const auto& p) {
                           std::string n = std::get<0>(p.param) + "_" + std::get<1>(p.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Continuous batching: one forward_batch over three sequences (a decode step, a fresh prefill
// and a 4-token chunk appended to a cached prefix) gives each the logits it gets alone.
class BatchedText : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(BatchedText, ForwardBatchEqualsEachSequenceAlone) {
  const auto& [name, backend_name] = GetParam();
  Tiny m(name);
  auto be = backend::Backend::open({backend_name, "", nlohmann::json::object()});
  Executor batched(m.arch, m.ckpt, *be, {}), alone(m.arch, m.ckpt, *be, {});
  const std::vector<int64_t> prefix_a = {5, 6, 7, 8, 9}, prefix_c = {300, 301, 302};
  const std::vector<BatchItem> step = {{0, {10}}, {1, kPrompt}, {2, {303, 304, 305, 306}}};
  for (Executor* ex : {&batched, &alone}) {
    for (int i = 0; i < 3; ++i) ASSERT_EQ(ex->new_sequence(), i);
    ex->forward(0, prefix_a);
    ex->forward(2, prefix_c);
  }
  // The cpu backend is not batch invariant: OpenBLAS (0.3.21) runs x·wᵀ with rows·cols <= 1200
  // on its small-matrix kernel on SkylakeX/Cooperlake/Zen/Haswell, which rounds differently from
  // the regular one, so a row's bits depend on how many rows share the GEMM (f32 rounding only:
  // with OPENBLAS_CORETYPE=Sandybridge every row is bit-identical). The layers amplify it, Gated
  // DeltaNet's recurrence most (tiny-qwen3-next: 2.4e-5 at a peak logit of 6 on Zen, against
  // <= 8e-6 for the others), so the bound is relative to the logits' peak.
  const auto tol = [&](const tensor::Tensor& want) {
    if (backend_name == "reference") return 0.0;
    double peak = 1;
    for (int64_t j = 0; j < want.numel(); ++j) peak = std::max(peak, std::abs(want.at(j)));
    return 2e-5 * peak;
  };
  const std::vector<tensor::Tensor> got = batched.forward_batch(step);
  ASSERT_EQ(got.size(), step.size());
  for (size_t i = 0; i < step.size(); ++i) {
    const tensor::Tensor want = alone.forward(step[i].seq, step[i].ids);
    ASSERT_EQ(got[i].shape(), want.shape()) << "item " << i;
    EXPECT_LE(max_abs_diff(got[i], want), tol(want)) << "item " << i;
    EXPECT_EQ(batched.sequence_length(step[i].seq), alone.sequence_length(step[i].seq));
  }
  // Then a decode step of all three (one token each) on the caches the batch wrote.
  const std::vector<BatchItem> decode = {{2, {7}}, {0, {11}}, {1, {12}}};
  const std::vector<tensor::Tensor> next = batched.forward_batch(decode);
  for (size_t i = 0; i < decode.size(); ++i) {
    const tensor::Tensor want = alone.forward(decode[i].seq, decode[i].ids);
    EXPECT_LE(max_abs_diff(next[i], want), tol(want)) << "decode item " << i;
  }
  EXPECT_THROW(batched.forward_batch({{0, {1}}, {1, {}}}), InputError);
}

INSTANTIATE_TEST_SUITE_P(Models, BatchedText,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3-moe",
                                                              "tiny-deepseek-v3", "tiny-qwen3-next",
                                                              "tiny-deepseek-v32"),
                                            ::testing::Values("reference", "cpu")),
                         [](const auto& p) {
                           std::string n = std::get<0>(p.param) + "_" + std::get<1>(p.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Qwen3-Next's Gated DeltaNet layers keep a conv and a recurrent state per sequence: a freed
// sequence's states go with it (the id handed out again starts from zeros), and two sequences
// never see each other's.
TEST(HybridExecutor, AFreedSequenceTakesItsLinearStatesWithIt) {
  Tiny m("tiny-qwen3-next");
  auto be = backend::Backend::open({"reference", "", nlohmann::json::object()});
  Executor ex(m.arch, m.ckpt, *be, {});
  const int a = ex.new_sequence();
  const tensor::Tensor first = ex.forward(a, kPrompt);
  const int b = ex.new_sequence();
  ex.forward(b, {7, 8, 9});
  ex.free_sequence(a);
  const int again = ex.new_sequence();
  EXPECT_EQ(max_abs_diff(ex.forward(again, kPrompt), first), 0.0);
  // Without the free, the same prompt on a carried state gives other logits.
  EXPECT_GT(max_abs_diff(ex.forward(again, kPrompt), first), 1e-3);
}

// LLaVA: an item's image features replace that item's image-token rows only.
TEST(BatchedImage, ImageFeaturesGoToTheirOwnSequence) {
  Tiny m("tiny-llava");
  auto be = backend::Backend::open({"reference", "", nlohmann::json::object()});
  Executor batched(m.arch, m.ckpt, *be, {}), alone(m.arch, m.ckpt, *be, {});
  const int64_t image = m.arch.vision->image_token_index, D = m.arch.text.hidden_size;
  tensor::Tensor features = tensor::Tensor::zeros(tensor::DType::kF32, {2, D});
  for (int64_t i = 0; i < features.numel(); ++i)
    features.mutable_data_as<float>()[i] = float(i % 7) * 0.25f - 0.5f;
  const std::vector<BatchItem> step = {{0, {3, 4, 5}}, {1, {1000, image, image, 17}, &features}};
  for (Executor* ex : {&batched, &alone}) {
    ex->new_sequence();
    ex->new_sequence();
  }
  const std::vector<tensor::Tensor> got = batched.forward_batch(step);
  for (size_t i = 0; i < step.size(); ++i) {
    EXPECT_EQ(max_abs_diff(
                  got[i], alone.forward(step[i].seq, step[i].ids, nullptr, step[i].image_features)),
              0.0);
  }
}

TEST(Executor, ProbesAreHfModuleNamesInExecutionOrder) {
  Tiny m("tiny-qwen3-moe");
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  Executor ex(m.arch, m.ckpt, *be, {});
  ProbeRecorder probes;
  ex.forward(ex.new_sequence(), kPrompt, &probes);
  std::vector<std::string> names;
  for (const auto& [n, t] : probes.probes()) names.push_back(n);
  const std::vector<std::string> want = {
      "model.embed_tokens",       "model.layers.0.input_layernorm",
      "model.layers.0.self_attn", "model.layers.0.post_attention_layernorm",
      "model.layers.0.mlp",       "model.layers.0"};
  ASSERT_GE(names.size(), want.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 6), want);
  EXPECT_EQ(names.back(), "logits");
  EXPECT_EQ(probes.find("model.layers.1.mlp")->shape(), (tensor::Shape{7, 64}));
  bool gate = false;
  for (const auto& s : ex.ops().profile()) gate = gate || (s.op == "moe_gate" && s.calls == 2);
  EXPECT_TRUE(gate);
}

// A layer check at a real model's width loads that layer alone: fewer bytes held, the layer's
// output (prefill and decode steps) bit for bit the whole model's, and no embedding to forward.
TEST(Executor, OneLayerLoadedAloneRunsAsInTheWholeModel) {
  for (const char* name : {"tiny-qwen3-moe", "tiny-qwen3-next"}) {
    SCOPED_TRACE(name);
    Tiny m(name);
    auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
    Executor whole(m.arch, m.ckpt, *be, {});
    ExecutorOptions o;
    o.only_layer = 1;
    Executor alone(m.arch, m.ckpt, *be, o);
    EXPECT_LT(alone.weights().bytes() * 2, whole.weights().bytes());
    const int64_t d = m.arch.text.hidden_size;
    std::vector<double> v(size_t(6 * d));
    tensor::Philox(3, 0).fill_normal(v.data(), v.size());
    tensor::Tensor hidden = tensor::Tensor::empty(tensor::DType::kF32, {6, d});
    for (size_t i = 0; i < v.size(); ++i) hidden.mutable_data_as<float>()[i] = float(v[i]);
    for (int64_t prefill : {6, 3}) {  // one prefill; a prefill of 3, then 3 decode steps
      const tensor::Tensor a = whole.run_layer(1, hidden, nullptr, prefill);
      const tensor::Tensor b = alone.run_layer(1, hidden, nullptr, prefill);
      ASSERT_EQ(a.nbytes(), b.nbytes());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0) << "prefill " << prefill;
    }
    EXPECT_THROW(alone.forward(alone.new_sequence(), kPrompt), InputError);
  }
}

TEST(Generation, TopKLogprobsIsTheSortedHeadOfTheLogSoftmax) {
  // Logits drawn from a few values, so ties are many: they go by id, lowest first.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t vocab = std::uniform_int_distribution<int64_t>(1, 300)(rng);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& x : logits) x = float(std::uniform_int_distribution<int>(-4, 4)(rng)) * 0.5f;
    double max = -INFINITY;
    for (float x : logits) max = std::max(max, double(x));
    double sum = 0;
    for (float x : logits) sum += std::exp(double(x) - max);
    const double lse = max + std::log(sum);
    EXPECT_EQ(log_sum_exp(logits.data(), vocab), lse);
    std::vector<int64_t> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
    for (int k : {1, 5, 20, int(vocab), int(vocab) + 3}) {
      const TopK top = top_k_logprobs(logits.data(), vocab, k);
      const size_t n = std::min<size_t>(size_t(k), size_t(vocab));
      ASSERT_EQ(top.ids.size(), n);
      ASSERT_EQ(top.logprobs.size(), n);
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(top.ids[i], order[i]) << "k " << k << " rank " << i;
        EXPECT_EQ(top.logprobs[i], double(logits[order[i]]) - lse);
      }
    }
  }
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
  const io::SafetensorsFile g = io::SafetensorsFile::open(
      h0::test::golden_path("models/" + name + "/" + prompt + ".safetensors"));
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
  for (int64_t i = 0; i < greedy_ids.numel(); ++i)
    EXPECT_EQ(gen.ids[size_t(i)], greedy_ids.data_as<int64_t>()[i]) << "step " << i;
}

INSTANTIATE_TEST_SUITE_P(Tiny, Golden,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3-moe",
                                                              "tiny-deepseek-v3"),
                                            ::testing::Values("p7", "p13")),
                         [](const auto& p) {
                           std::string n = std::get<0>(p.param) + "_" + std::get<1>(p.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace h0::model
