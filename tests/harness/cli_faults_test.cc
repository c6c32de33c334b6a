// What tolerance checks miss, caught (issue 24): a platform whose kernels truncate bf16/f16
// outputs instead of rounding them to nearest even fails day0's op stage on every shipped tiny
// model, named as truncation; one NaN written once by one op is localized to the module that
// made it, golden-free.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "harness/cli_util.h"

namespace h0 {
namespace {

using test::run_harness;

// A platform file in `dir` for the faulty plugin with `options` (a flow mapping); its path.
std::string faulty_platform(const test::TempDir& dir, const std::string& name,
                            const std::string& options) {
  std::ofstream(dir.file(name + ".yaml"))
      << "platform: " << name << "\ndevice_memory: 24GiB\nbackend: {lib: " << H0_FAULTY_PLUGIN
      << ", options: " << options << "}\n";
  return dir.file(name + ".yaml");
}

constexpr const char* kTruncate = "{op: \"*\", fault: truncate}";
constexpr const char* kNanInLayer1Mlp = "{op: swiglu, fault: nan, call: 1, index: 5}";

class Truncation : public ::testing::TestWithParam<const char*> {};

TEST_P(Truncation, IsCaughtAtTheOpStageAndNamed) {
  test::TempDir dir;
  const std::string truncate = faulty_platform(dir, "truncate", kTruncate);
  const auto r =
      run_harness(std::string("day0 --json --no-db --no-report --model configs/models/") +
                  GetParam() + " --platform " + truncate);
  EXPECT_EQ(r.code, 1) << r.err;
  auto stages = test::stages_of(r.out);
  EXPECT_EQ(stages["load"]["status"], "pass") << stages["load"]["summary"];
  EXPECT_EQ(stages["op_accuracy"]["status"], "fail") << stages["op_accuracy"]["summary"];
  const std::string summary = stages["op_accuracy"]["summary"];
  EXPECT_NE(summary.find("truncation"), std::string::npos) << summary;
}

INSTANTIATE_TEST_SUITE_P(ShippedModels, Truncation,
                         ::testing::Values("tiny-llama", "tiny-llava", "tiny-qwen3-moe",
                                           "tiny-deepseek-v3", "tiny-deepseek-v3-fp8"),
                         [](const auto& p) {
                           std::string name = p.param;
                           for (char& c : name) c = std::isalnum(c) ? c : '_';
                           return name;
                         });

// The rounding probes name the rounding of each op and dtype: nearest even on every built-in
// backend, truncation on the truncating plugin.
TEST(RoundingProbes, NameTheRoundingOfEachPlatform) {
  test::TempDir dir;
  std::ofstream(dir.file("r.yaml")) << "suite: rounding\nchecks:\n  - id: rounding\n"
                                       "    kind: rounding\n"
                                       "    matrix: {op: [add, mul], dtype: [f32, bf16, f16]}\n";
  const std::string truncate = faulty_platform(dir, "truncate", kTruncate);
  for (const char* p : {"configs/platforms/cpu.yaml", "configs/platforms/reference.yaml"}) {
    const auto r = run_harness("run " + dir.file("r.yaml") + " --no-db --platform " + p);
    EXPECT_EQ(r.code, 0) << p << "\n" << r.out;
  }
  const auto r = run_harness("run " + dir.file("r.yaml") + " --no-db --json " + dir.file("t.json") +
                             " --platform " + truncate);
  EXPECT_EQ(r.code, 1) << r.out;
  std::ifstream in(dir.file("t.json"));
  const auto run = nlohmann::json::parse(in);
  for (const auto& c : run["cases"]) {
    const std::string id = c["id"];
    const bool narrow = id.find("f32") == std::string::npos;
    EXPECT_EQ(c["status"], narrow ? "fail" : "pass") << id << ": " << c["message"];
    EXPECT_EQ(c["details"]["rounding"], narrow ? "toward_zero" : "nearest_even") << id;
    if (narrow) {
      EXPECT_NE(c["message"].get<std::string>().find("rounds toward zero (truncation)"),
                std::string::npos)
          << c["message"];
    }
  }
}

// One NaN written once by layer 1's swiglu: the model check names layer 1's MLP as its origin,
// from the run's own probes (the first in execution order holding one).
TEST(NanOrigin, IsTheFirstModuleThatMadeOne) {
  test::TempDir dir;
  const std::string nan = faulty_platform(dir, "nan", kNanInLayer1Mlp);
  const auto r = run_harness("run suites/model.yaml --no-db --filter 'tiny-llama/*' --json " +
                             dir.file("run.json") + " --platform " + nan);
  EXPECT_EQ(r.code, 1) << r.out;
  std::ifstream in(dir.file("run.json"));
  const auto run = nlohmann::json::parse(in);
  const auto& first = run["cases"][0];  // the first case runs the faulted call
  EXPECT_EQ(first["status"], "fail");
  EXPECT_EQ(first["details"]["nan_origin"]["probe"], "model.layers.1.mlp") << first["details"];
  EXPECT_EQ(first["details"]["nan_origin"]["value"], "nan");
  const std::string message = first["message"];
  EXPECT_EQ(message.rfind("first NaN/Inf made by model.layers.1.mlp at [", 0), 0u) << message;
  for (size_t i = 1; i < run["cases"].size(); ++i)  // later cases: the call has passed
    EXPECT_FALSE(run["cases"][i]["details"].contains("nan_origin")) << run["cases"][i]["id"];
}

// golden: perturbation, the platform against itself: the cpu backend is stable under a one-ULP
// input change, raised precision and swapped operands; a kernel that amplifies small input
// changes (the faulty plugin's amplify fault on rmsnorm) is flagged, and only that op.
TEST(Perturbation, FlagsAnUnstableKernelAndPassesAStableOne) {
  test::TempDir dir;
  std::ofstream(dir.file("p.yaml"))
      << "suite: perturbation\ndefaults: {golden: perturbation, inputs: {seed: 3}}\nchecks:\n"
         "  - {id: rmsnorm, kind: op, op: rmsnorm, matrix: {dtype: [f32, bf16, f16]}, "
         "shape: [7, 256]}\n"
         "  - {id: mul, kind: op, op: mul, matrix: {dtype: [f32, bf16]}, shape: [7, 256]}\n"
         "  - {id: softmax, kind: op, op: softmax, dtype: bf16, shape: [7, 256]}\n";
  const std::string amp =
      faulty_platform(dir, "amp", "{op: rmsnorm, fault: amplify, magnitude: 0.01}");
  auto r = run_harness("run " + dir.file("p.yaml") + " --no-db --json " + dir.file("cpu.json"));
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream cpu_in(dir.file("cpu.json"));
  const auto cpu = nlohmann::json::parse(cpu_in);
  for (const auto& c : cpu["cases"]) {
    const auto& v = c["details"]["perturbation"];
    EXPECT_TRUE(v.contains("perturbed")) << c["id"];
    if (c["id"].get<std::string>().find("bf16") != std::string::npos) {
      EXPECT_TRUE(v.contains("raised")) << c["id"];
    }
  }
  r = run_harness("run " + dir.file("p.yaml") + " --no-db --json " + dir.file("amp.json") +
                  " --platform " + amp);
  EXPECT_EQ(r.code, 1) << r.out;
  std::ifstream amp_in(dir.file("amp.json"));
  const auto amplified = nlohmann::json::parse(amp_in);
  for (const auto& c : amplified["cases"]) {
    const std::string id = c["id"];
    const bool faulted = id.rfind("rmsnorm", 0) == 0;
    EXPECT_EQ(c["status"], faulted ? "fail" : "pass") << id << ": " << c["message"];
    if (faulted) {
      EXPECT_NE(c["message"].get<std::string>().find("unstable under a small input change"),
                std::string::npos)
          << c["message"];
    }
  }
}

// The dashboard's check page says what the tolerance checks alone would not: the rounding bias
// and the rounding the probes found, and the module that made the first NaN.
TEST(CheckPage, ShowsTheBiasTheRoundingAndTheNanOrigin) {
  test::TempDir dir;
  std::ofstream(dir.file("f.yaml"))
      << "suite: findings\nchecks:\n"
         "  - {id: rmsnorm-bf16, kind: op, op: rmsnorm, golden: reference, dtype: bf16, "
         "shape: [7, 256]}\n"
         "  - {id: rounding-add, kind: rounding, op: add, dtype: bf16}\n";
  const std::string truncate = faulty_platform(dir, "truncate", kTruncate);
  const std::string nan = faulty_platform(dir, "nan", kNanInLayer1Mlp);
  const std::string db = " --db " + dir.file("r.db");
  EXPECT_EQ(run_harness("run " + dir.file("f.yaml") + db + " --platform " + truncate).code, 1);
  EXPECT_EQ(
      run_harness("run suites/model.yaml --filter 'tiny-llama/*' " + db + " --platform " + nan)
          .code,
      1);
  ASSERT_EQ(run_harness("report" + db + " --out " + dir.file("site")).code, 0);
  std::map<std::string, std::string> pages;  // by case id prefix
  for (const auto& e : std::filesystem::directory_iterator(dir.file("site/checks"))) {
    std::ifstream in(e.path());
    pages[e.path().filename().string()] =
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto page = [&](const std::string& prefix) {
    for (const auto& [name, html] : pages)
      if (name.rfind(prefix, 0) == 0) return html;
    ADD_FAILURE() << "no page " << prefix;
    return std::string();
  };
  const std::string rms = page("rmsnorm-bf16");
  EXPECT_NE(rms.find("<h3>Rounding bias</h3>"), std::string::npos);
  EXPECT_NE(rms.find("toward zero"), std::string::npos);
  EXPECT_NE(page("rounding-add").find("Rounding found by the probes: <b>toward_zero</b>"),
            std::string::npos);
  EXPECT_NE(page("tiny-llama-logits-prompt-p7-dtype-f32")
                .find("First NaN/Inf made by <b>model.layers.1.mlp</b>"),
            std::string::npos);
}

}  // namespace
}  // namespace h0
