// `harness plan` and `kind: plan` end to end: exit codes, the table, --json, and the errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/cli_util.h"

namespace h0 {
namespace {

using test::run_harness;

const std::string kLlama70 = "--model tests/data/configs/llama-3.1-70b.json";

TEST(CliPlan, FitsExitsZeroWithATableAndVerdict) {
  const auto r = run_harness("plan " + kLlama70 + " --tp 8 --device-memory 80GiB --concurrency 64");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kv cache 327,680 bytes per token (model), 40,960 per rank at most"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0-7 x8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fits: KV cache holds "), std::string::npos) << r.out;
}

TEST(CliPlan, DoesNotFitExitsOne) {
  const auto r = run_harness(
      "plan --model tests/data/configs/llama-3.1-405b.json --tp 8 --device-memory 80GB");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("does not fit: rank 0 (stage 0): weights 94.5 GiB"), std::string::npos)
      << r.out;
}

TEST(CliPlan, JsonHasThePlanAndTheNotes) {
  const auto r = run_harness(
      "plan --model tests/data/configs/deepseek-v3.json --tp 8 --pp 2 --ep 16 --weight-dtype fp8 "
      "--device-memory 141GiB --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plan"]["dp"], 2);
  EXPECT_EQ(j["plan"]["world"], 32);
  EXPECT_EQ(j["kv_bytes_per_token"], 70272);
  EXPECT_EQ(j["notes"][0], "dp=2 (from ep 16 over tp 8)");
  EXPECT_EQ(j["ranks"].size(), 32u);
  EXPECT_EQ(j["ranks"][31]["layers"], (std::vector<int64_t>{31, 61}));
  EXPECT_EQ(j["fits"], true);
}

// The vision tower's activations at --max-image-pixels (tests/plan/memory_plan_test.cc has the
// figure); the tiny model's directory gives its preprocessor_config.json max_pixels (50176).
TEST(CliPlan, VisionActivationsAtTheLargestImage) {
  auto r = run_harness(
      "plan --model tests/data/configs/qwen2.5-vl-7b-instruct.json --device-memory 80GiB "
      "--max-image-pixels 12845056 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ranks"][0]["vision_activations_bytes"], 2485780480);
  r = run_harness("plan --model tests/data/models/tiny-qwen2-5-vl --device-memory 8GiB --json");
  ASSERT_EQ(r.code, 0) << r.err;
  bool noted = false;
  const nlohmann::json tiny = nlohmann::json::parse(r.out);
  for (const auto& n : tiny["notes"])
    noted = noted ||
            n.get<std::string>().find("50176 pixels (256 patches, the processor's max_pixels)") !=
                std::string::npos;
  EXPECT_TRUE(noted) << r.out;
  EXPECT_EQ(run_harness(
                "plan --model tests/data/configs/qwen2.5-vl-7b-instruct.json --max-image-pixels 0")
                .code,
            2);
}

TEST(CliPlan, TpReplicatingKvHeadsSaysSo) {
  const auto r = run_harness("plan " + kLlama70 + " --tp 16 --device-memory 80GiB");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("note     kv heads replicated x2 (8 kv heads over tp 16)"),
            std::string::npos)
      << r.out;
}

TEST(CliPlan, DeviceMemoryDefaultsToThePlatforms) {
  const auto r =
      run_harness("plan --model tests/data/configs/llama-3.1-8b.json");  // cpu.yaml: 24GiB
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("usable 21.60 GiB per device"), std::string::npos) << r.out;
}

TEST(CliPlan, BadInputExitsTwo) {
  const auto heads = run_harness("plan " + kLlama70 + " --tp 3 --device-memory 80GiB");
  EXPECT_EQ(heads.code, 2);
  EXPECT_NE(heads.err.find("--tp 3: num_attention_heads 64 is not divisible by tp 3"),
            std::string::npos)
      << heads.err;
  const auto dtype = run_harness("plan " + kLlama70 + " --weight-dtype fp4 --device-memory 80GiB");
  EXPECT_EQ(dtype.code, 2);
  EXPECT_NE(dtype.err.find("--weight-dtype fp4: expected one of bf16, f16, f32, fp8, int8, int4"),
            std::string::npos)
      << dtype.err;
  const auto size = run_harness("plan " + kLlama70 + " --device-memory lots");
  EXPECT_EQ(size.code, 2);
  EXPECT_NE(size.err.find("--device-memory lots: bad size"), std::string::npos) << size.err;
  const auto ep = run_harness("plan " + kLlama70 + " --tp 8 --ep 2 --device-memory 80GiB");
  EXPECT_EQ(ep.code, 2);
  EXPECT_NE(ep.err.find("--ep 2: the model has no routed experts"), std::string::npos) << ep.err;
  const auto missing =
      run_harness("plan --model tests/data/configs/nope.json --device-memory 80GiB");
  EXPECT_EQ(missing.code, 2) << missing.err;
}

TEST(CliPlan, SuiteCasesPassAndFailOnTheirExpectations) {
  test::TempDir dir;
  std::ofstream(dir.file("plan.yaml"))
      << "suite: t\nchecks:\n"
         "  - id: ok\n    kind: plan\n    model: "
      << test::source_path("tests/data/configs/llama-3.1-70b.json")
      << "\n    plan: {tp: 8}\n    device_memory: 80GiB\n"
         "    expect: {kv_bytes_per_token: 327680, kv_tokens_min: 1000000}\n"
         "  - id: wrong\n    kind: plan\n    model: "
      << test::source_path("tests/data/configs/llama-3.1-70b.json")
      << "\n    plan: {tp: 8}\n    device_memory: 80GiB\n    expect: {fits: false}\n";
  const auto r =
      run_harness("run " + dir.file("plan.yaml") + " --no-db --json " + dir.file("out.json"));
  EXPECT_EQ(r.code, 1) << r.err;
  std::ifstream in(dir.file("out.json"));
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["counts"]["pass"], 1) << j.dump(1);
  EXPECT_EQ(j["counts"]["fail"], 1) << j.dump(1);

  std::ofstream(dir.file("bad.yaml"))
      << "suite: t\nchecks:\n  - id: bad\n    kind: plan\n    model: "
      << test::source_path("tests/data/configs/llama-3.1-70b.json")
      << "\n    plan: {tp: 3}\n    device_memory: 80GiB\n";
  const auto bad = run_harness("run " + dir.file("bad.yaml") + " --no-db");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("bad.yaml:6:16: num_attention_heads 64 is not divisible by tp 3"),
            std::string::npos)
      << bad.err;
}

// A family the executor does not model (OLMo 2, written by transformers) is planned from its
// checkpoint's headers: every stored byte at tp 1; its config alone is refused, saying why.
TEST(CliPlan, AnUnmodelledFamilyIsPlannedFromItsCheckpoint) {
  const auto r = run_harness(
      "plan --model tests/data/models/tiny-olmo2 --device-memory 1GiB --reserve 0 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["weight_format_source"], "as stored in the checkpoint; olmo2 is not modelled");
  std::ifstream in(test::source_path("tests/data/models/tiny-olmo2/model.safetensors"),
                   std::ios::binary | std::ios::ate);
  uint64_t header = 0;
  in.seekg(0);
  in.read(reinterpret_cast<char*>(&header), 8);
  in.seekg(0, std::ios::end);
  const int64_t data_bytes = int64_t(in.tellg()) - 8 - int64_t(header);
  EXPECT_EQ(j["weights_bytes_total"].get<int64_t>(), data_bytes);  // 410,624: 205,312 bf16 elements
  const auto config_only = run_harness(
      "plan --model tests/data/configs/olmo-2-1124-13b.json --tp 8 --device-memory 80GiB");
  EXPECT_EQ(config_only.code, 2);
  EXPECT_NE(config_only.err.find("family olmo2 is not modelled by the executor"), std::string::npos)
      << config_only.err;
}

TEST(CliPlan, ModelInfoOfAnUnmodelledFamily) {
  const auto r = run_harness("model info --json --model tests/data/models/tiny-olmo2");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["modelled"], false);
  EXPECT_EQ(j["family"], "olmo2");
  EXPECT_EQ(j["parameters"]["total"],
            205312);  // the checkpoint's elements (transformers' num_parameters: 205,312)
  const auto config_only =
      run_harness("model info --model tests/data/configs/olmo-2-1124-13b.json");
  EXPECT_EQ(config_only.code, 0);
  EXPECT_NE(config_only.out.find("the parameter counts need the checkpoint"), std::string::npos)
      << config_only.out;
}

// The families added as one file each count from the config alone, exactly as transformers'
// num_parameters() of the checkpoints transformers wrote (golden/models/<name>.json).
TEST(CliPlan, ModelInfoOfTheNewFamiliesEqualsTransformersCount) {
  for (const char* name : {"tiny-mistral", "tiny-qwen2-moe", "tiny-glm4-moe", "tiny-gemma3",
                           "tiny-glm4-moe-lite", "tiny-minimax-m2"}) {
    SCOPED_TRACE(name);
    const auto r = run_harness(std::string("model info --json --model tests/data/models/") + name);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const auto golden = nlohmann::json::parse(
        test::read_file(test::source_path(std::string("golden/models/") + name + ".json")));
    EXPECT_NE(j["modelled"], false);
    EXPECT_EQ(j["parameters"]["total"], golden["num_parameters"]);
  }
}

}  // namespace
}  // namespace h0
