// An f32 run of a bf16 checkpoint keeps the projections, the LM head and the embedding table as
// stored (model_ops.h widened_weight_dtype) on a backend with linear_widen: the weights take
// about half the bytes of converting every one to f32, the norms are still f32, and the logits are
// the converted run's to f32 rounding (bf16 widens to f32 exactly; only the order of the sums
// differs). On a backend without linear_widen (the faulty plugin: a plugin written before it)
// every weight is converted on load, as before.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/executor.h"
#include "model/exec/model_ops.h"
#include "model/exec/model_weights.h"
#include "model/weights/inventory.h"
#include "test_util.h"

namespace h0::model {
namespace {

using tensor::DType;

constexpr const char* kModel = "tests/data/models/tiny-mistral";  // a bf16 checkpoint

TEST(KeptWeights, AnF32RunOfABf16CheckpointHoldsItsProjectionsInBf16) {
  const std::string dir = h0::test::source_path(kModel);
  const Architecture arch = load_architecture(dir);
  ASSERT_EQ(widened_weight_dtype(arch, DType::kF32), DType::kBF16);
  EXPECT_EQ(widened_weight_dtype(arch, DType::kBF16), std::nullopt);  // nothing to widen
  const auto ckpt = io::ShardedCheckpoint::open(dir);
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  const ModelWeights kept(arch, ckpt, *be, DType::kF32, nullptr, DType::kBF16);
  const ModelWeights converted(arch, ckpt, *be, DType::kF32);
  EXPECT_EQ(kept.get(0, TensorRole::kAttnQ).dtype(), DType::kBF16);
  EXPECT_EQ(kept.get(0, TensorRole::kFfnDown).dtype(), DType::kBF16);
  EXPECT_EQ(kept.get(-1, TensorRole::kEmbed).dtype(), DType::kBF16);
  EXPECT_EQ(kept.get(0, TensorRole::kAttnNorm).dtype(), DType::kF32);  // a norm: the run dtype
  EXPECT_EQ(converted.get(0, TensorRole::kAttnQ).dtype(), DType::kF32);
  // The norms are a few hundred bytes of a tiny model: kept is within 1 % of half the converted.
  EXPECT_NEAR(double(kept.bytes()) / double(converted.bytes()), 0.5, 0.01)
      << kept.bytes() << " vs " << converted.bytes();
}

// Logits of the prompt on cpu (weights kept, linear_widen) and on the faulty plugin with no fault
// (every op its host reference; no linear_widen, so the weights converted and `linear` run).
TEST(KeptWeights, RunAsTheConvertedWeightsDoAndOnlyWhereTheBackendHasLinearWiden) {
  const std::string dir = h0::test::source_path(kModel);
  const Architecture arch = load_architecture(dir);
  const auto ckpt = io::ShardedCheckpoint::open(dir);
  const std::vector<int64_t> prompt = {1000, 17, 256, 3, 999, 42, 511};
  auto cpu = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  Executor kept(arch, ckpt, *cpu, {});
  const tensor::Tensor a = kept.forward(kept.new_sequence(), prompt);
  EXPECT_EQ(kept.ops().routes().count("linear"), 0u);
  EXPECT_EQ(kept.ops().routes().at("linear_widen"), "native");

  auto plugin = backend::Backend::open({"", H0_FAULTY_PLUGIN, nlohmann::json::object()});
  ASSERT_FALSE(plugin->supports("linear_widen", DType::kF32));
  Executor converted(arch, ckpt, *plugin, {});
  const tensor::Tensor b = converted.forward(converted.new_sequence(), prompt);
  EXPECT_EQ(converted.ops().routes().count("linear_widen"), 0u);
  EXPECT_EQ(converted.ops().routes().at("linear"), "native");

  ASSERT_EQ(a.shape(), b.shape());
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    worst = std::max(worst, std::abs(a.at(i) - b.at(i)));
    scale = std::max(scale, std::abs(b.at(i)));
  }
  EXPECT_LT(worst, 1e-5 * std::max(scale, 1.0)) << "max |diff| " << worst;
}

// A config.json without torch_dtype (GPT-OSS-120B's as released) over a bf16 checkpoint: the
// checkpoint's own dtype decides, so the weights are kept as stored all the same (its bf16
// embedding and LM head would otherwise double in an f32 run).
TEST(KeptWeights, AConfigWithoutADtypeKeepsTheCheckpointsBf16) {
  const std::string from = h0::test::source_path(kModel);
  h0::test::TempDir dir;
  nlohmann::json config = nlohmann::json::parse(std::ifstream(from + "/config.json"));
  ASSERT_TRUE(config.erase("torch_dtype") + config.erase("dtype") > 0);
  std::ofstream(dir.file("config.json")) << config.dump();
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    if (e.path().extension() == ".safetensors")
      std::filesystem::copy_file(e.path(), dir.file(e.path().filename().string()));
  }
  const Architecture arch = load_architecture(dir.path());
  ASSERT_EQ(arch.text.dtype, std::nullopt);
  EXPECT_EQ(widened_weight_dtype(arch, DType::kF32), std::nullopt);
  EXPECT_EQ(widened_weight_dtype(arch, DType::kF32, DType::kBF16), DType::kBF16);
  const auto ckpt = io::ShardedCheckpoint::open(dir.path());
  auto cpu = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  Executor run(arch, ckpt, *cpu, {});
  run.forward(run.new_sequence(), {1000, 17, 256});
  EXPECT_EQ(run.ops().routes().count("linear"), 0u);
  EXPECT_EQ(run.ops().routes().at("linear_widen"), "native");
}

}  // namespace
}  // namespace h0::model
