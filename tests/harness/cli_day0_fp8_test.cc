// An FP8 block-quantized checkpoint end to end (configs/models/tiny-deepseek-v3-fp8: DeepSeek-V3's
// layout, 16 x 16 blocks): day0 passes every stage with the projections run quantized
// (scaled_linear); a kernel that applies the scale of the wrong block is caught at the op stage
// and localized at the layer stage; a checkpoint whose scales do not cover their weights is
// refused naming the tensor.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli_util.h"
#include "io/safetensors_writer.h"
#include "io/sharded_checkpoint.h"

namespace h0 {
namespace {

using test::run_harness;
using test::stages_of;

const char* kModel = "configs/models/tiny-deepseek-v3-fp8";

bool contains(const nlohmann::json& s, const std::string& text) {
  return s.get<std::string>().find(text) != std::string::npos;
}

TEST(Day0Fp8, EveryStagePassesWithTheProjectionsRunQuantized) {
  test::TempDir dir;
  const auto r = run_harness(std::string("day0 --json --no-db --model ") + kModel + " --out " +
                             dir.file("out"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto stages = test::expect_every_stage_passes(r.out);
  EXPECT_TRUE(
      contains(stages["memory_plan"]["summary"], "weights fp8 (quantization_config fp8 [16, 16])"))
      << stages["memory_plan"]["summary"];
  EXPECT_TRUE(contains(stages["load"]["summary"], "239 tensors")) << stages["load"]["summary"];
  // The op stage ran scaled_linear at the model's own projection shapes.
  const std::string record = test::read_file(dir.file("out/day0.json"));
  for (const char* kxn : {"64x32", "32x96", "64x40", "32x128", "64x64", "64x128", "128x64"}) {
    EXPECT_NE(
        record.find(std::string("op_accuracy/tiny-deepseek-v3-fp8/shapes/scaled_linear/") + kxn),
        std::string::npos)
        << kxn;
  }
}

// The faulty plugin's wrong_block: block row r of each weight scaled by w_scale's row r + 1.
TEST(Day0Fp8, AWrongBlockScaleIsCaughtAtTheOpStageAndLocalizedAtTheLayers) {
  test::TempDir dir;
  std::ofstream(dir.file("faulty.yaml")) << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
                                         << ", options: {op: scaled_linear, fault: wrong_block}}\n"
                                         << "device_memory: 8GiB\n";
  const std::string base = std::string("day0 --json --no-db --no-report --model ") + kModel +
                           " --platform " + dir.file("faulty.yaml");
  auto r = run_harness(base);
  EXPECT_EQ(r.code, 1) << r.err;
  auto stages = stages_of(r.out);
  EXPECT_EQ(stages["load"]["status"], "pass");
  EXPECT_EQ(stages["op_accuracy"]["status"], "fail");
  EXPECT_TRUE(contains(stages["op_accuracy"]["summary"], "scaled_linear"))
      << stages["op_accuracy"]["summary"];
  EXPECT_EQ(stages["layer_accuracy"]["status"], "blocked");

  r = run_harness(base + " --keep-going --long 0");
  EXPECT_EQ(r.code, 1) << r.err;
  stages = stages_of(r.out);
  EXPECT_EQ(stages["layer_accuracy"]["status"], "fail");
  // The first scaled_linear call of a layer is q_a_proj, inside self_attn.
  EXPECT_TRUE(
      contains(stages["layer_accuracy"]["summary"], "first divergence at model.layers.0.self_attn"))
      << stages["layer_accuracy"]["summary"];
  EXPECT_EQ(stages["model"]["status"], "fail");
}

// Only the shared experts' projections of layer 1 (the 6th to 8th scaled_linear calls of a
// layer check of layer 1) are faulty: the layer stage names that sublayer.
TEST(Day0Fp8, AWrongBlockInOneProjectionNamesItsSublayer) {
  test::TempDir dir;
  std::ofstream(dir.file("faulty.yaml"))
      << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
      << ", options: {op: scaled_linear, fault: wrong_block, call: 5}}\n";
  const auto r = run_harness(
      "run suites/layers.yaml --no-db --filter 'tiny-deepseek-v3-fp8/layer[layer=1]' --platform " +
      dir.file("faulty.yaml") + " --json " + dir.file("out.json"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto c = nlohmann::json::parse(test::read_file(dir.file("out.json")))["cases"].at(0);
  EXPECT_EQ(c["details"]["probes"]["first_divergence"].value("probe", "none"), "model.layers.1.mlp")
      << c.dump();
}

// A checkpoint whose weight_scale_inv does not cover its weight in blocks (one block column
// short: a K that is not block-aligned with no ragged last scale) is refused naming the tensor.
TEST(Day0Fp8, AScaleThatDoesNotCoverItsWeightIsRefusedNamingTheTensor) {
  test::TempDir dir;
  ASSERT_EQ(
      run_harness(std::string("model synth --model ") + kModel + " --out " + dir.file("ok")).code,
      0);
  const io::ShardedCheckpoint ok = io::ShardedCheckpoint::open(dir.file("ok"));
  const std::string victim =
      "model.layers.1.self_attn.kv_a_proj_with_mqa.weight_scale_inv";  // [3, 4]: 40 rows ragged
  std::vector<io::NamedTensor> tensors;
  for (const std::string& name : ok.names()) {
    tensor::Tensor t = ok.get(name);
    if (name == victim) t = t.slice(1, 0, t.dim(1) - 1).clone();
    tensors.push_back({name, std::move(t)});
  }
  std::filesystem::create_directories(dir.file("bad"));
  std::filesystem::copy_file(dir.file("ok/config.json"), dir.file("bad/config.json"));
  io::write_safetensors(dir.file("bad/model.safetensors"), std::move(tensors));
  const auto r = run_harness("load --model " + dir.file("bad"));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(victim + ": f32 3x3 (expected f32 3x4)"), std::string::npos) << r.err;
  // day0's load stage fails saying the same, on its one line; what needs the weights is blocked.
  const auto d = run_harness("day0 --json --no-db --no-report --model " + dir.file("bad"));
  EXPECT_EQ(d.code, 1) << d.err;
  auto stages = stages_of(d.out);
  EXPECT_EQ(stages["load"]["status"], "fail");
  EXPECT_TRUE(contains(stages["load"]["summary"],
                       "wrong shape or dtype (1): " + victim + ": f32 3x3 (expected f32 3x4)"))
      << stages["load"]["summary"];
  EXPECT_EQ(stages["model"]["status"], "blocked");
}

}  // namespace
}  // namespace h0
