// `harness run` of the model suites end to end, and first-divergence localization: the
// `faulty` plugin perturbs one call of one op, and the failing check must name the layer and
// sublayer where that call happens.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli_util.h"
#include "io/safetensors_reader.h"
#include "io/safetensors_writer.h"

namespace h0 {
namespace {

using test::run_harness;

nlohmann::json run_faulty(const std::string& suite, const std::string& filter,
                          const std::string& options) {
  test::TempDir dir;
  std::ofstream(dir.file("faulty.yaml")) << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
                                         << ", options: " << options << "}\n";
  const auto r = run_harness("run " + suite + " --no-db --filter '" + filter + "' --platform " +
                             dir.file("faulty.yaml") + " --json " + dir.file("out.json"));
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

void PrintTo(const Fault& f, std::ostream* os) { *os << f.filter << " " << f.options; }

// "tiny_llama_rope": the filter's model and the fault's op.
std::string fault_name(const ::testing::TestParamInfo<Fault>& info) {
  const std::string filter = info.param.filter, options = info.param.options;
  const size_t op = options.find("op: ") + 4;
  std::string n =
      filter.substr(0, filter.find('/')) + "_" + options.substr(op, options.find(',', op) - op);
  for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

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
              "{op: rmsnorm, fault: scale, magnitude: 0.01, call: 1}",
              "model.layers.0.post_attention_layernorm"},
        Fault{"suites/model.yaml", "tiny-llama/logits[prompt=p7,dtype=f32]",
              "{op: paged_attention, fault: scale, magnitude: 0.01, call: 1}",
              "model.layers.1.self_attn"},
        Fault{"suites/model.yaml", "tiny-qwen3-moe/logits[prompt=p13]",
              "{op: moe_gate, fault: scale, magnitude: 0.01, call: 1}", "model.layers.1.mlp"},
        Fault{"suites/model.yaml", "tiny-deepseek-v3/logits[prompt=p13,dtype=f32]",
              "{op: rope, fault: scale, magnitude: 0.05, call: 4}", "model.layers.2.self_attn"},
        Fault{"suites/image.yaml", "tiny-llava/image[dtype=f32]",
              "{op: mul, fault: scale, magnitude: 0.01, call: 0}", "pixel_values"},
        // A layer alone (dump_hf.py --layers: its golden made from that layer's tensors only,
        // its input the embedding output; the check loads that layer alone): fp8 routed experts
        // 1 % off, an indexer picking other keys, a delta rule decaying after its update, a
        // paged_attention that drops GPT-OSS's sinks.
        Fault{"suites/layers.yaml", "tiny-deepseek-v3-fp8/layer-alone",
              "{op: moe_experts, fault: scale, magnitude: 0.01}", "model.layers.2.mlp"},
        Fault{"suites/layers.yaml", "tiny-deepseek-v32/layer-alone",
              "{op: lightning_indexer, fault: score_jitter, magnitude: 0.5}",
              "model.layers.1.self_attn"},
        Fault{"suites/layers.yaml", "tiny-qwen3-next/layer-alone",
              "{op: gated_delta_rule, fault: decay_after}", "model.layers.2.linear_attn"},
        Fault{"suites/layers.yaml", "tiny-gpt-oss-mxfp4/layer-alone",
              "{op: paged_attention, fault: drop_inputs, keep: 4}", "model.layers.1.self_attn"}),
    fault_name);

TEST(CliModel, ModelLayerAndImageSuitesPassOnReference) {
  for (const char* suite : {"suites/model.yaml", "suites/layers.yaml", "suites/image.yaml"}) {
    const auto r = run_harness(std::string("run ") + suite +
                               " --no-db -q --platform configs/platforms/reference.yaml");
    EXPECT_EQ(r.code, 0) << suite << "\n" << r.out << r.err;
  }
}

TEST(CliModel, AFailingCheckReportsItsEvidence) {
  const nlohmann::json c =
      run_faulty("suites/model.yaml", "tiny-llama/logits[prompt=p13,dtype=f32]",
                 "{op: linear, fault: scale, magnitude: 0.02, call: 0}");
  EXPECT_NE(c["message"].get<std::string>().find("first divergence at model.layers.0.self_attn "
                                                 "(layer model.layers.0, sublayer self_attn)"),
            std::string::npos)
      << c["message"];
  EXPECT_EQ(c["details"]["probes"]["probes"][0]["name"], "model.embed_tokens");
  EXPECT_TRUE(c["details"]["probes"]["probes"][0]["ok"]);
  bool profiled = false;
  for (const auto& p : c["profile"])
    profiled = profiled || p["name"].get<std::string>().rfind("paged_attention[", 0) == 0;
  EXPECT_TRUE(profiled);
}

}  // namespace
}  // namespace h0

namespace h0 {
namespace {

// `model run --image` runs the image through the model's own tower: Qwen2.5-VL's (it took only
// LLaVA's CLIP before); a prompt without the image's tokens is an input error naming the counts.
TEST(CliModelRun, AnImageRunsThroughTheModelsOwnTower) {
  test::TempDir dir;
  const std::string run =
      "model run --model tests/data/models/tiny-qwen2-5-vl --image "
      "golden/models/images/checker.png --greedy 2 --prompt-ids ";
  const auto ok = run_harness(run + "5,7,1026,1026,1026,1026,1026,1026,9 --dump " + dir.path());
  ASSERT_EQ(ok.code, 0) << ok.err;
  const io::SafetensorsFile dump = io::SafetensorsFile::open(dir.file("prompt.safetensors"));
  ASSERT_NE(dump.find("model.visual"), nullptr);
  EXPECT_EQ(dump.get("model.visual").dim(0), 6);  // the image's 6 merged tokens
  const auto short_prompt = run_harness(run + "5,7,1026,9");
  EXPECT_EQ(short_prompt.code, 2);
  EXPECT_NE(short_prompt.err.find("image 1 (grid 1x6x4) needs 6 image tokens, position 2 holds 1"),
            std::string::npos)
      << short_prompt.err;
}

// A dump from the platform vs the golden dump: identical on a faithful backend, the first
// divergence named on a faulty one, and names reconciled by a map.
TEST(CliCompareDumps, MatchDivergeAndMap) {
  test::TempDir dir;
  const std::string golden = dir.file("golden"), ours = dir.file("ours"), bad = dir.file("bad"),
                    renamed = dir.file("renamed");
  std::filesystem::create_directories(golden);
  std::filesystem::copy_file(test::source_path("golden/models/tiny-llama/p7.safetensors"),
                             golden + "/prompt.safetensors");
  const std::string run =
      "model run --model configs/models/tiny-llama --prompt-ids 1000,17,263,951,4,588,120 --greedy "
      "8 ";
  ASSERT_EQ(run_harness(run + "--platform configs/platforms/reference.yaml --dump " + ours).code,
            0);
  const auto same = run_harness("compare-dumps " + golden + " " + ours + " --json");
  EXPECT_EQ(same.code, 0) << same.out;
  EXPECT_EQ(nlohmann::json::parse(same.out)["files"][0]["probes"].size(), 13u);
  EXPECT_EQ(nlohmann::json::parse(same.out)["files"][0]["inputs"], "the same 7 input ids");

  // A dump of another prompt diverges at the embedding: the inputs are named, not the embedding.
  const std::string other = dir.file("other");
  ASSERT_EQ(run_harness("model run --model configs/models/tiny-llama --prompt-ids "
                        "1000,17,263,951,4,589,120 --dump " +
                        other)
                .code,
            0);
  const auto inputs = run_harness("compare-dumps " + golden + " " + other);
  EXPECT_EQ(inputs.code, 2) << inputs.out;
  EXPECT_NE(inputs.err.find("the dumps saw different inputs"), std::string::npos) << inputs.err;
  EXPECT_NE(inputs.err.find("first differ at position 5"), std::string::npos) << inputs.err;
  EXPECT_EQ(inputs.err.find("embed_tokens"), std::string::npos) << inputs.err;

  std::ofstream(dir.file("faulty.yaml"))
      << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
      << ", options: {op: swiglu, fault: scale, magnitude: 0.02, call: 1}}\n";
  ASSERT_EQ(run_harness(run + "--platform " + dir.file("faulty.yaml") + " --dump " + bad).code, 0);
  const auto differ = run_harness("compare-dumps " + golden + " " + bad + " --json");
  EXPECT_EQ(differ.code, 1);
  EXPECT_EQ(nlohmann::json::parse(differ.out)["files"][0]["first_divergence"]["probe"],
            "model.layers.1.mlp");

  // The platform's engine names its modules differently: "transformer.h.N..." for
  // "model.layers.N...".
  std::filesystem::create_directories(renamed);
  const io::SafetensorsFile src = io::SafetensorsFile::open(ours + "/prompt.safetensors");
  std::vector<io::NamedTensor> tensors;
  for (const auto& e : src.entries()) {
    std::string name = e.name;
    if (name.rfind("model.layers.", 0) == 0) name = "transformer.h." + name.substr(13);
    tensors.push_back({name, src.get(e.name)});
  }
  io::write_safetensors(renamed + "/prompt.safetensors", tensors);
  const auto unmapped = run_harness("compare-dumps " + golden + " " + renamed + " --json");
  EXPECT_EQ(unmapped.code, 1) << "unmatched probes must not pass";
  EXPECT_EQ(nlohmann::json::parse(unmapped.out)["files"][0]["unmatched"].size(), 10u);
  std::ofstream(dir.file("map.yaml")) << "prefixes: {model.layers.: transformer.h.}\n";
  EXPECT_EQ(
      run_harness("compare-dumps " + golden + " " + renamed + " --map " + dir.file("map.yaml"))
          .code,
      0);

  std::ofstream(dir.file("dump.yaml"))
      << "suite: d\nchecks:\n  - {id: d, kind: dump, golden: " << golden << ", actual: " << bad
      << "}\n";
  const auto suite = run_harness("run " + dir.file("dump.yaml") + " --no-db");
  EXPECT_EQ(suite.code, 1);
  EXPECT_NE(suite.out.find("first divergence at model.layers.1.mlp"), std::string::npos)
      << suite.out;
}

// An engine's msprobe dump (mindstudio-probe on a transformers model, tests/data/msprobe) against
// dump_hf.py's golden: no map; exit 0 when it matches, 1 naming the first divergent module, 2 for
// a malformed dump naming the file.
TEST(CliModel, CompareDumpsReadsMsprobeDumps) {
  const std::string golden = "tests/data/msprobe/tiny-llama-hf";
  const auto same =
      run_harness("compare-dumps " + golden + " tests/data/msprobe/tiny-llama-L0-tensor");
  EXPECT_EQ(same.code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("logits"), std::string::npos);
  EXPECT_NE(same.out.find("(not in the msprobe dump's scope)"), std::string::npos) << same.out;
  const auto stats = run_harness("compare-dumps " + golden +
                                 " tests/data/msprobe/tiny-llama-L0-statistics --json");
  EXPECT_EQ(stats.code, 0) << stats.out;
  EXPECT_NE(stats.out.find("\"compared\": \"statistics\""), std::string::npos);
  const auto differ =
      run_harness("compare-dumps " + golden + " tests/data/msprobe/tiny-llama-L0-tensor-perturbed");
  EXPECT_EQ(differ.code, 1);
  EXPECT_NE(
      differ.out.find("first divergence: model.layers.1.mlp (layer model.layers.1, sublayer mlp)"),
      std::string::npos)
      << differ.out;
  test::TempDir dir;
  std::filesystem::create_directories(dir.file("step0/rank0"));
  std::ofstream(dir.file("step0/rank0/dump.json")) << "{\"data\": [";
  const auto bad = run_harness("compare-dumps " + golden + " " + dir.path());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find(dir.file("step0/rank0/dump.json") + ": not JSON"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace h0

namespace h0 {
namespace {

// `model info --tensors` on Kimi K2 (139,583 tensors): a GLOB selects; the user's terminal (a pty
// here, through script(1)) gets the first 40 rows and how to see the rest; a pipe gets them all.
TEST(CliModel, ModelInfoTensorsSelectsAndKeepsATerminalReadable) {
  const std::string info = "model info --model tests/data/configs/kimi-k2-instruct.json --tensors";
  const auto some = test::run_harness(info + " 'model.layers.3.mlp.experts.1*.gate_proj.weight'");
  ASSERT_EQ(some.code, 0) << some.err;
  size_t rows = 0;
  for (size_t at = some.out.find("\n  model."); at != std::string::npos;
       at = some.out.find("\n  model.", at + 1))
    ++rows;
  EXPECT_EQ(rows, 111u) << some.out;  // experts 1, 10-19, 100-199
  const auto piped = test::run_shell(std::string(H0_HARNESS_BIN) + " " + info + " | wc -l");
  ASSERT_EQ(piped.code, 0);
  EXPECT_EQ(std::stol(piped.out), 4 + 139583L) << piped.out;  // the header lines, every tensor
  const auto tty =
      test::run_shell("script -qec \"" + std::string(H0_HARNESS_BIN) + " " + info + "\" /dev/null");
  ASSERT_EQ(tty.code, 0) << tty.out;
  EXPECT_NE(tty.out.find("... 139543 more of the 139583: --tensors 'GLOB' selects"),
            std::string::npos)
      << tty.out.substr(0, 2000);
  EXPECT_LT(tty.out.size(), 10000u);
  const auto none = test::run_harness(info + " 'no.such.*'");
  EXPECT_NE(none.out.find("no tensor matches 'no.such.*'"), std::string::npos) << none.out;
}

}  // namespace
}  // namespace h0
