// Routed experts over the widened-experts budget stay in the checkpoint as stored (fp8 with block
// scales, MXFP4 blocks, bf16; per-expert tensors or GPT-OSS's fused ones) and are widened when a
// step routes tokens to them. One group holding every routed expert gives the logits of the
// experts widened on load bit for bit (the same moe_experts call on renumbered experts); groups of
// one expert sum the partial outputs in f64, within f32 rounding of them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "backend/backend.h"
#include "base/error.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/executor.h"
#include "model/exec/model_weights.h"
#include "model/weights/synth.h"
#include "test_util.h"
#include "tiny_checkpoint.h"

namespace h0::model {
namespace {

using tiny::checkpoint_of;

const std::vector<int64_t> kPrompt = {1000, 17, 256, 3, 999, 42, 511, 8, 77, 300};

// The MoE layers whose experts `ex` left as stored.
std::vector<int64_t> stored_layers(const Executor& ex, const Architecture& arch) {
  std::vector<int64_t> layers;
  for (int64_t l = 0; l < arch.text.num_layers; ++l)
    if (ex.weights().stored_experts(l) != nullptr) layers.push_back(l);
  return layers;
}

// The prompt's logits, then two greedy steps' logits, concatenated.
std::vector<float> run(Executor& ex) {
  const int seq = ex.new_sequence();
  std::vector<float> out;
  std::vector<int64_t> ids = kPrompt;
  for (int step = 0; step < 3; ++step) {
    const tensor::Tensor logits = ex.forward(seq, ids);
    const int64_t v = logits.dim(1), last = logits.dim(0) - 1;
    int64_t best = 0;
    for (int64_t i = 0; i < logits.numel(); ++i) out.push_back(float(logits.at(i)));
    for (int64_t j = 1; j < v; ++j)
      if (logits.at(last * v + j) > logits.at(last * v + best)) best = j;
    ids = {best};
  }
  return out;
}

class StoredExpertsOf : public ::testing::TestWithParam<const char*> {};

TEST_P(StoredExpertsOf, RunAsTheExpertsWidenedOnLoad) {
  h0::test::TempDir dir;
  const std::string path = checkpoint_of(GetParam(), dir.path());
  const Architecture arch = load_architecture(path);
  const auto ckpt = io::ShardedCheckpoint::open(path);
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});

  Executor widened(arch, ckpt, *be, {});
  ASSERT_TRUE(stored_layers(widened, arch).empty());  // a tiny model's experts fit the default
  const std::vector<float> want = run(widened);

  ExecutorOptions one_at_a_time;
  one_at_a_time.expert_bytes = 0;
  Executor each(arch, ckpt, *be, one_at_a_time);
  const std::vector<int64_t> layers = stored_layers(each, arch);
  ASSERT_GE(layers.size(), 2u);
  const StoredExperts& s = *each.weights().stored_experts(layers[0]);
  EXPECT_EQ(s.count(), arch.text.moe.num_experts);
  EXPECT_LT(each.weights().bytes(), widened.weights().bytes());  // the experts are not held
  const std::vector<float> near = run(each);

  // A budget of two layers' experts: every MoE layer still stored (two layers reach it), each
  // step's routed experts widened in one group (half the budget).
  ExecutorOptions one_group;
  one_group.expert_bytes = 2 * s.count() * s.widened_bytes();
  Executor grouped(arch, ckpt, *be, one_group);
  EXPECT_EQ(stored_layers(grouped, arch), layers);
  const std::vector<float> exact = run(grouped);

  ASSERT_EQ(exact.size(), want.size());
  ASSERT_EQ(near.size(), want.size());
  size_t unequal = 0;
  double worst = 0, scale = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    unequal += exact[i] != want[i];
    worst = std::max(worst, double(std::abs(near[i] - want[i])));
    scale = std::max(scale, double(std::abs(want[i])));
  }
  EXPECT_EQ(unequal, 0u) << "of " << want.size() << " logits";
  EXPECT_LT(worst, 1e-5 * scale) << "max |diff| " << worst;
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, StoredExpertsOf,
                         ::testing::Values("tiny-qwen3-moe",        // bf16 per-expert tensors
                                           "tiny-deepseek-v3-fp8",  // fp8 with block scales
                                           "tiny-gpt-oss",          // fused, bf16, biased
                                           "tiny-gpt-oss-mxfp4"),   // fused MXFP4 blocks
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST(StoredExperts, ABudgetInTheEnvironmentThatIsNotANumberIsRefusedNamingIt) {
  const std::string path = h0::test::source_path("tests/data/models/tiny-qwen2-moe");
  const Architecture arch = load_architecture(path);
  const auto ckpt = io::ShardedCheckpoint::open(path);
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  setenv("HARNESS_EXPERT_BYTES", "2GiB", 1);
  try {
    Executor ex(arch, ckpt, *be, {});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("HARNESS_EXPERT_BYTES"), std::string::npos) << e.what();
  }
  setenv("HARNESS_EXPERT_BYTES", "0", 1);
  Executor stored(arch, ckpt, *be, {});
  unsetenv("HARNESS_EXPERT_BYTES");
  EXPECT_FALSE(stored_layers(stored, arch).empty());
}

}  // namespace
}  // namespace h0::model
