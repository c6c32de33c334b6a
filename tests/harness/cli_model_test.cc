// `harness run` of the model suites end to end, and first-divergence localization: the
// `faulty` plugin perturbs one call of one op, and the failing check must name the layer and
// sublayer where that call happens.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/cli_util.h"

namespace h0 {
namespace {

using test::run_harness;

nlohmann::json run_faulty(const std::string& suite, const std::string& filter, const std::string& options) {
  test::TempDir dir;
  std::ofstream(dir.file("faulty.yaml")) << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
                                         << ", options: " << options << "}\n";
  const auto r = run_harness("run " + suite + " --no-db --filter '" + filter + "' --platform " + dir.file("faulty.yaml") +
                             " --json " + dir.file("out.json"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  std::ifstream in(dir.file("out.json"));
  return nlohmann::json::parse(in)["cases"].at(0);
}

std::string first_divergence(const nlohmann::json& c) {
  EXPECT_EQ(c["status"], "fail") << c.dump();
  return c["details"]["probes"]["first_divergence"].value("probe", "none");
}

struct Fault {
  const char* suite;
  const char* filter;
  const char* options;
  const char* divergence;
};

class FirstDivergence : public ::testing::TestWithParam<Fault> {};

TEST_P(FirstDivergence, NamesTheLayerAndSublayerOfTheFaultyCall) {
  const Fault& f = GetParam();
  EXPECT_EQ(first_divergence(run_faulty(f.suite, f.filter, f.options)), f.divergence);
}

// tiny-llama per layer: rmsnorm ×2, rope ×2 (q, k), paged_attention ×1; calls counted from 0.
INSTANTIATE_TEST_SUITE_P(
    Faults, FirstDivergence,
    ::testing::Values(
        Fault{"suites/model.yaml", "tiny-llama/logits[prompt=p7,dtype=f32]",
              "{op: rope, fault: scale, magnitude: 0.05, call: 2}", "model.layers.1.self_attn"},
        Fault{"suites/model.yaml", "tiny-llama/logits[prompt=p7,dtype=f32]",
              "{op: rmsnorm, fault: scale, magnitude: 0.01, call: 1}", "model.layers.0.post_attention_layernorm"},
        Fault{"suites/model.yaml", "tiny-llama/logits[prompt=p7,dtype=f32]",
              "{op: paged_attention, fault: scale, magnitude: 0.01, call: 1}", "model.layers.1.self_attn"},
        Fault{"suites/model.yaml", "tiny-qwen3-moe/logits[prompt=p13]",
              "{op: moe_gate, fault: scale, magnitude: 0.01, call: 1}", "model.layers.1.mlp"},
        Fault{"suites/model.yaml", "tiny-deepseek-v3/logits[prompt=p13,dtype=f32]",
              "{op: rope, fault: scale, magnitude: 0.05, call: 4}", "model.layers.2.self_attn"},
        Fault{"suites/image.yaml", "tiny-llava/image[dtype=f32]",
              "{op: mul, fault: scale, magnitude: 0.01, call: 0}", "pixel_values"}),
    [](const ::testing::TestParamInfo<Fault>& p) { return std::to_string(p.index); });

TEST(CliModel, ModelLayerAndImageSuitesPassOnReference) {
  for (const char* suite : {"suites/model.yaml", "suites/layers.yaml", "suites/image.yaml"}) {
    const auto r = run_harness(std::string("run ") + suite + " --no-db -q --platform configs/platforms/reference.yaml");
    EXPECT_EQ(r.code, 0) << suite << "\n" << r.out << r.err;
  }
}

TEST(CliModel, AFailingCheckReportsItsEvidence) {
  const nlohmann::json c = run_faulty("suites/model.yaml", "tiny-llama/logits[prompt=p13,dtype=f32]",
                                      "{op: linear, fault: scale, magnitude: 0.02, call: 0}");
  EXPECT_NE(c["message"].get<std::string>().find("first divergence at model.layers.0.self_attn (layer model.layers.0, sublayer self_attn)"),
            std::string::npos) << c["message"];
  EXPECT_EQ(c["details"]["probes"]["probes"][0]["name"], "model.embed_tokens");
  EXPECT_TRUE(c["details"]["probes"]["probes"][0]["ok"]);
  bool profiled = false;
  for (const auto& p : c["profile"]) profiled = profiled || p["name"].get<std::string>().rfind("paged_attention[", 0) == 0;
  EXPECT_TRUE(profiled);
}

}  // namespace
}  // namespace h0
