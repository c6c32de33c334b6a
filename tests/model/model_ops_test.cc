// The ops a model "needs" (model::model_ops, what coverage and day0 list) are exactly the ops its
// run takes: each tiny model runs a prompt (LLaVA with an image), greedy and a sampled step, and
// the ops the executor actually ran equal ModelOps::names().
#include "model/exec/model_ops.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/sharded_checkpoint.h"
#include "model/config/tower.h"
#include "model/exec/executor.h"
#include "model/vision/image.h"
#include "model/weights/synth.h"
#include "test_util.h"

namespace h0::model {
namespace {

// The checkpoint of `model`: configs/models/ ones synthesized into `dir`; tests/data/models/
// ones (written by transformers) as they are.
std::string checkpoint_of(const std::string& model, const h0::test::TempDir& dir) {
  const std::string path = h0::test::source_path(model);
  if (model.rfind("configs/", 0) != 0) return path;
  synthesize_checkpoint(path, dir.path(), {0, 1});
  return dir.path();
}

class RanOps : public ::testing::TestWithParam<std::string> {};

TEST_P(RanOps, AreTheDerivedSet) {
  h0::test::TempDir dir;
  const std::string model = checkpoint_of(GetParam(), dir);
  const Architecture arch = load_architecture(model);
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(model);
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  Executor ex(arch, ckpt, *be, {});
  tensor::Tensor features;
  if (const Tower* tower = tower_of(arch)) {
    const std::unique_ptr<ImageProcessor> p = tower->processor(model);
    features = tower->features(
        ex, *p, p->pixels(decode_image(h0::test::golden_path("models/images/checker.png"))));
  }
  std::vector<int64_t> prompt = {1000, 17, 256, 3, 999, 42, 511};
  if (arch.vision)
    prompt.insert(prompt.begin() + 2, features.dim(0), arch.vision->image_token_index);
  const tensor::Tensor logits =
      ex.forward(ex.new_sequence(), prompt, nullptr, arch.vision ? &features : nullptr);
  ex.greedy(logits);
  ex.sample(logits, 0.8, 5, 0.9, 1, 0);

  std::set<std::string> ran;
  for (const auto& [op, route] : ex.ops().routes()) ran.insert(op);
  EXPECT_EQ(ran, model_ops(arch, tensor::DType::kF32).names());
}

INSTANTIATE_TEST_SUITE_P(
    Tiny, RanOps,
    ::testing::Values("configs/models/tiny-llama", "configs/models/tiny-qwen3-moe",
                      "configs/models/tiny-deepseek-v3", "configs/models/tiny-deepseek-v3-fp8",
                      "configs/models/tiny-llava", "tests/data/models/tiny-mistral",
                      "tests/data/models/tiny-qwen2-moe", "tests/data/models/tiny-glm4-moe",
                      "tests/data/models/tiny-gemma3", "tests/data/models/tiny-gpt-oss",
                      "tests/data/models/tiny-gpt-oss-mxfp4", "tests/data/models/tiny-qwen3-next",
                      "tests/data/models/tiny-qwen3-5", "tests/data/models/tiny-deepseek-v32",
                      "tests/data/models/tiny-glm4-moe-lite", "tests/data/models/tiny-minimax-m2"),
    [](const ::testing::TestParamInfo<std::string>& p) {
      std::string n = p.param.substr(p.param.rfind('/') + 1);
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

}  // namespace
}  // namespace h0::model

namespace h0::model {
namespace {

// The probe order the sharded checks rank divergences by is the order the executor records: on
// Llama's layers and on Gemma 3's (a norm after the attention and after the MLP too).
TEST(ProbePlace, FollowsTheExecutionOrder) {
  for (const char* model : {"configs/models/tiny-llama", "tests/data/models/tiny-gemma3",
                            "tests/data/models/tiny-qwen3-next"}) {
    SCOPED_TRACE(model);
    h0::test::TempDir dir;
    const std::string path = checkpoint_of(model, dir);
    const Architecture arch = load_architecture(path);
    const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(path);
    auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
    Executor ex(arch, ckpt, *be, {});
    ProbeRecorder probes;
    ex.forward(ex.new_sequence(), {1000, 17, 256}, &probes);
    ASSERT_GT(probes.probes().size(), 10u);
    std::vector<std::string> layer0;
    for (size_t i = 1; i < probes.probes().size(); ++i) {
      const std::string &a = probes.probes()[i - 1].first, &b = probes.probes()[i].first;
      EXPECT_TRUE(probe_place(a) < probe_place(b)) << a << " then " << b;
    }
    for (const auto& [name, t] : probes.probes()) {
      if (name.rfind("model.layers.0.", 0) == 0) layer0.push_back(name.substr(15));
    }
    const std::vector<std::string> llama = {"input_layernorm", "self_attn",
                                            "post_attention_layernorm", "mlp"};
    const std::vector<std::string> gemma = {
        "input_layernorm",           "self_attn", "post_attention_layernorm",
        "pre_feedforward_layernorm", "mlp",       "post_feedforward_layernorm"};
    const std::vector<std::string> hybrid = {"input_layernorm", "linear_attn",
                                             "post_attention_layernorm", "mlp"};
    EXPECT_EQ(layer0, arch.text.sandwich_norms           ? gemma
                      : arch.text.linear.num_v_heads > 0 ? hybrid
                                                         : llama);
  }
  // A layer's probes in order, each block in its slot: a linear-attention layer's linear_attn
  // sits where self_attn does (the mixer's), before the MLP's norm.
  const auto step = [](const char* sub) {
    return probe_place(std::string("model.layers.3.") + sub).step;
  };
  EXPECT_EQ(step("linear_attn"), step("self_attn"));
  const std::vector<int32_t> order = {
      step("input_layernorm"),           step("self_attn"), step("post_attention_layernorm"),
      step("pre_feedforward_layernorm"), step("mlp"),       step("post_feedforward_layernorm"),
      probe_place("model.layers.3").step};
  for (size_t i = 1; i < order.size(); ++i) EXPECT_LT(order[i - 1], order[i]) << i;
  EXPECT_EQ(probe_place("model.layers.3").step, kLayerOutputStep);
  EXPECT_EQ(probe_place("model.embed_tokens").layer, -1);
  EXPECT_EQ(probe_place("logits").layer, ProbePlace::kAfterLayers);
}

// MLA's latent norms (q_a_layernorm, kv_a_layernorm) run at transformers' DeepseekV3RMSNorm
// default eps, 1e-6, whatever rms_norm_eps says; the decoder's norms at rms_norm_eps
// (GLM-4.7-Flash's 1e-5).
TEST(ModelOps, MlaLatentNormsKeepTheirOwnEps) {
  const Architecture a =
      load_architecture(h0::test::source_path("tests/data/models/tiny-glm4-moe-lite"));
  const ModelOps ops = model_ops(a, tensor::DType::kF32);
  ASSERT_NE(ops.find("latent_norm"), nullptr);
  EXPECT_DOUBLE_EQ(ops.find("latent_norm")->attrs["eps"].get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(ops.rmsnorm.attrs["eps"].get<double>(), 1e-5);
}

}  // namespace
}  // namespace h0::model
