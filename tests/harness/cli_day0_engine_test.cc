// `harness day0` for models of families the executor does not model (a tiny OLMo 2 checkpoint
// written by transformers' save_pretrained, tests/data/models/tiny-olmo2), served by a
// third-party engine: the fake server in strict mode (as `transformers serve`: extension fields
// refused with 422, text prompts only, no logprobs or token ids) replaying the goldens
// golden/tools/gen_e2e.py made with transformers. Every stage that needs no executor runs and
// passes; the executor stages say why not; a wrong token fails text end-to-end at its position.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli_util.h"

namespace h0 {
namespace {

using test::run_harness;
using test::stages_of;

// A platform whose service is the strict fake engine replaying `golden`.
std::string engine_platform(const test::TempDir& dir, const std::string& model,
                            const std::string& extra = "", const std::string& dialect = "") {
  const std::string file = dir.file("engine.yaml");
  std::ofstream(file) << "platform: strict-engine\nbackend: cpu\ndevice_memory: 8GiB\nservice:\n"
                      << "  start: \"" << H0_FAKE_SERVER << " --port {port} --strict --golden-dir "
                      << test::source_path("golden/e2e/" + model) << " --tokenizer "
                      << test::source_path("tests/data/models/" + model + "/tokenizer.json") << " "
                      << extra << "\"\n  health: /health\n  startup_timeout: 20s\n"
                      << (dialect.empty() ? "" : "  dialect: " + dialect + "\n");
  return file;
}

struct Family {
  const char* dir;
  const char* family;
  // Its tokenizer's encode adds a BOS (Llama-3's; Qwen's ChatML adds none), so a text-only
  // engine cannot be sent the golden's token-id prompt (ids without that BOS).
  bool adds_bos;
  int64_t hf_parameters;  // transformers' num_parameters() of the checkpoint (5.24)
};

void PrintTo(const Family& f, std::ostream* os) { *os << f.dir << " (" << f.family << ")"; }

class Day0Unmodelled : public ::testing::TestWithParam<Family> {};

TEST_P(Day0Unmodelled, EstablishedAtTheServiceLevel) {
  const Family f = GetParam();
  test::TempDir dir;
  const std::string model = test::source_path(std::string("tests/data/models/") + f.dir);
  const auto r = run_harness("day0 --json --no-db --no-report --model " + model + " --platform " +
                             engine_platform(dir, f.dir) + " --golden " +
                             test::source_path(std::string("golden/e2e/") + f.dir) + " --out " +
                             dir.file("out"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "service_level");
  EXPECT_EQ(j["ready"], false);
  auto stages = stages_of(r.out);
  EXPECT_NE(stages["config"]["summary"].get<std::string>().find(std::string(f.family) + " ("),
            std::string::npos)
      << stages["config"]["summary"];
  EXPECT_NE(stages["config"]["summary"].get<std::string>().find("not modelled"), std::string::npos);
  EXPECT_EQ(stages["config"]["details"]["parameters"].get<int64_t>(), f.hf_parameters);
  // The plan's weights are the checkpoint's bytes (at one device: all of them, exactly).
  const double stored = stages["config"]["details"]["checkpoint_bytes"].get<double>();
  const double planned = stages["memory_plan"]["details"]["total_weights"].get<double>();
  EXPECT_NEAR(planned, stored, 0.01 * stored);
  for (const char* id :
       {"config", "memory_plan", "load", "service", "e2e_text", "determinism", "performance"}) {
    EXPECT_EQ(stages[id]["status"], "pass") << id << ": " << stages[id]["summary"];
  }
  for (const char* id : {"coverage", "op_accuracy", "layer_accuracy", "model"}) {
    EXPECT_EQ(stages[id]["status"], "not_modelled") << id;
    EXPECT_NE(stages[id]["summary"].get<std::string>().find("is not modelled by the executor"),
              std::string::npos);
  }
  // The chats and the text completion compared; the token-id completion goes to the text-only
  // engine as its decoded text when that text tokenizes back to the ids, else it is skipped,
  // saying why (the ids lack the BOS the tokenizer adds).
  const std::string e2e = stages["e2e_text"]["summary"];
  if (f.adds_bos) {
    EXPECT_NE(e2e.find("4 text requests, 0 failed, 1 skipped"), std::string::npos) << e2e;
    EXPECT_NE(e2e.find("no text tokenizes to these prompt ids"), std::string::npos) << e2e;
  } else {
    EXPECT_EQ(e2e, "4 text requests, 0 failed");
  }
  EXPECT_NE(stages["performance"]["summary"].get<std::string>().find("served TTFT p50"),
            std::string::npos);
  const auto text = run_harness("day0 --no-db --no-report --model " + model + " --platform " +
                                engine_platform(dir, f.dir) + " --golden " +
                                test::source_path(std::string("golden/e2e/") + f.dir));
  EXPECT_EQ(text.code, 0);
  // Neither image stage nor the mesh applies to a text model on one rank, nor the conversation
  // layer to an engine that refuses guided decoding and tool calls for a model without rendering
  // goldens: counted apart, never passes.
  EXPECT_NE(text.out.find("Day-0 readiness established at the service level: 8 of 13 applicable "
                          "stages passed; 4 not applicable"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("the executor checks did not run (5 stages: family " +
                          std::string(f.family) + " is not modelled)"),
            std::string::npos)
      << text.out;
}

INSTANTIATE_TEST_SUITE_P(Families, Day0Unmodelled,
                         ::testing::Values(Family{"tiny-olmo2", "olmo2", true, 205312}),
                         [](const auto& param_info) {
                           std::string n = param_info.param.dir;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// A family the executor models (Qwen2-MoE, Mistral, Gemma 3: one file each) on the same third-party
// engine: every stage runs — the executor's against the shipped transformers goldens, the
// service's against the engine — and passes: readiness established, exit 0.
TEST(Day0Engine, AModelledFamilyOnAThirdPartyEnginePassesEveryStage) {
  for (const char* name : {"tiny-qwen2-moe", "tiny-mistral", "tiny-gemma3"}) {
    SCOPED_TRACE(name);
    test::TempDir dir;
    const auto r = run_harness("day0 --json --no-db --no-report --model " +
                               test::source_path(std::string("tests/data/models/") + name) +
                               " --platform " + engine_platform(dir, name) + " --golden " +
                               test::source_path(std::string("golden/e2e/") + name));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ready"], true);
    auto stages = test::expect_every_stage_passes(r.out);
    EXPECT_NE(stages["model"]["summary"].get<std::string>().find("0 failed"), std::string::npos);
  }
}

// The fixtures a real engine's CPU build can load (golden/tools/gen_tiny_hf_models.py
// --vllm-variants: head_dim 32; DeepSeek-V3's own MLA latent sizes, kv_lora_rank 512 + rope 64),
// which no shipped suite names: every stage passes against their transformers goldens given as
// --golden (dump_hf probes and served answers in one directory), as tests/peers/vllm_day0.sh
// runs them against vLLM. (tiny-qwen2-5-vl-hd32's image path is suites/image.yaml's; the fake
// engine replays no image chat.)
TEST(Day0Engine, TheFixturesVllmServesPassEveryStage) {
  for (const char* name : {"tiny-deepseek-v3-mla", "tiny-mistral-hd32", "tiny-qwen2-moe-hd32",
                           "tiny-qwen3-next-hd32", "tiny-qwen3-5-hd32"}) {
    SCOPED_TRACE(name);
    test::TempDir dir;
    std::filesystem::create_directories(dir.file("goldens"));
    for (const std::string from : {"golden/models/", "golden/e2e/"}) {
      for (const auto& e : std::filesystem::directory_iterator(test::source_path(from + name)))
        std::filesystem::copy_file(e.path(), dir.file("goldens/" + e.path().filename().string()));
    }
    const auto r =
        run_harness("day0 --json --no-db --no-report --model " +
                    test::source_path(std::string("tests/data/models/") + name) + " --platform " +
                    engine_platform(dir, name) + " --golden " + dir.file("goldens"));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    auto stages = test::expect_every_stage_passes(r.out);
    EXPECT_NE(stages["layer_accuracy"]["summary"].get<std::string>().find(" 0 failed"),
              std::string::npos)
        << stages["layer_accuracy"]["summary"];
    EXPECT_NE(stages["model"]["summary"].get<std::string>().find("2 model cases, 0 failed"),
              std::string::npos)
        << stages["model"]["summary"];
  }
}

// The dashboard of such a run says which readiness was established.
TEST(Day0Engine, TheDashboardShowsTheServiceLevelVerdict) {
  test::TempDir dir;
  const auto r = run_harness("day0 --model " + test::source_path("tests/data/models/tiny-olmo2") +
                             " --platform " + engine_platform(dir, "tiny-olmo2") + " --golden " +
                             test::source_path("golden/e2e/tiny-olmo2") + " --db " +
                             dir.file("r.db") + " --out " + dir.file("out"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string index = test::read_file(dir.file("out/site/index.html"));
  EXPECT_NE(index.find("verdict-service_level\">Day-0 readiness established at the service level"),
            std::string::npos);
  EXPECT_NE(index.find("st-not_modelled"), std::string::npos);
}

// An engine that answers one wrong token: text end-to-end fails at that position, not a ✓.
TEST(Day0Engine, AWrongTokenFailsTextEndToEndAtItsPosition) {
  test::TempDir dir;
  const std::string model = test::source_path("tests/data/models/tiny-olmo2");
  const auto r = run_harness("day0 --json --no-db --no-report --model " + model + " --platform " +
                             engine_platform(dir, "tiny-olmo2", "--corrupt-at 3") + " --golden " +
                             test::source_path("golden/e2e/tiny-olmo2"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto stages = stages_of(r.out);
  EXPECT_EQ(stages["e2e_text"]["status"], "fail");
  const std::string s = stages["e2e_text"]["summary"];
  EXPECT_NE(s.find("text differs from the golden at token 3"), std::string::npos) << s;
  EXPECT_EQ(nlohmann::json::parse(r.out)["verdict"], "not_established");
}

// Without e2e goldens the service still answers, but nothing was compared: not a ✓, exit 1.
TEST(Day0Engine, WithoutGoldensTheTextStageIsNotCompared) {
  test::TempDir dir;
  const std::string model = test::source_path("tests/data/models/tiny-olmo2");
  const auto r = run_harness("day0 --json --no-db --no-report --model " + model + " --platform " +
                             engine_platform(dir, "tiny-olmo2"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto stages = stages_of(r.out);
  EXPECT_EQ(stages["service"]["status"], "pass");
  EXPECT_EQ(stages["e2e_text"]["status"], "not_run");
  EXPECT_NE(stages["e2e_text"]["summary"].get<std::string>().find("not compared: no e2e goldens"),
            std::string::npos)
      << stages["e2e_text"]["summary"];
}

// The config alone: stage 1 names the family and says the counts need the checkpoint; the plan
// is not run (it reads the checkpoint's headers), never a guess.
TEST(Day0Engine, ConfigOnlyDryRunOfAnUnmodelledFamily) {
  test::TempDir dir;
  const auto r = run_harness(
      "day0 --json --no-db --no-report --dry-run --mesh tp=8 --model " +
      test::config_only_model(dir, "tests/data/configs/olmo-2-1124-13b.json", "olmo-2-1124-13b"));
  EXPECT_EQ(r.code, 1) << r.err;
  auto stages = stages_of(r.out);
  EXPECT_EQ(stages["config"]["status"], "pass");
  EXPECT_NE(stages["config"]["summary"].get<std::string>().find(
                "olmo2 (Olmo2ForCausalLM): not modelled by the executor"),
            std::string::npos);
  EXPECT_NE(stages["config"]["summary"].get<std::string>().find("need the checkpoint"),
            std::string::npos);
  EXPECT_EQ(stages["memory_plan"]["status"], "not_run");
  EXPECT_NE(stages["memory_plan"]["summary"].get<std::string>().find("needs the checkpoint"),
            std::string::npos);
  EXPECT_EQ(stages["coverage"]["status"], "not_modelled");
}

// LongCat-Flash as transformers 5.24 saves its default config (num_layers, no num_hidden_layers):
// stage 1 reads it as transformers does and says so; it was refused ("num_hidden_layers:
// missing"), and every later stage blocked (issue 50).
TEST(Day0Engine, ALayerCountTransformersDerivesIsReadAndSaid) {
  test::TempDir dir;
  const auto r = run_harness(
      "day0 --json --no-db --no-report --dry-run --model " +
      test::config_only_model(dir, "tests/data/configs/transformers5-fields/longcat_flash.json",
                              "longcat-flash"));
  EXPECT_EQ(r.code, 1) << r.err;  // a dry run establishes nothing
  auto stages = stages_of(r.out);
  EXPECT_EQ(stages["config"]["status"], "pass") << stages["config"]["summary"];
  EXPECT_NE(stages["config"]["summary"].get<std::string>().find(
                "num_hidden_layers 56 = 2 x num_layers (transformers 5.24's longcat_flash)"),
            std::string::npos)
      << stages["config"]["summary"];
  EXPECT_EQ(stages["config"]["details"]["layers"], 56);
}

// The platform names the dialect: no probe, and the same verdict.
TEST(Day0Engine, AStatedDialectIsUsedAsIs) {
  test::TempDir dir;
  const std::string model = test::source_path("tests/data/models/tiny-olmo2");
  const auto r = run_harness("day0 --json --no-db --no-report --model " + model + " --platform " +
                             engine_platform(dir, "tiny-olmo2", "", "openai") + " --golden " +
                             test::source_path("golden/e2e/tiny-olmo2"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  // A vLLM dialect stated for a strict engine: every request refused with 422, the stage fails.
  const auto bad = run_harness("day0 --json --no-db --no-report --model " + model + " --platform " +
                               engine_platform(dir, "tiny-olmo2", "", "vllm") + " --golden " +
                               test::source_path("golden/e2e/tiny-olmo2"));
  EXPECT_EQ(bad.code, 1);
  auto stages = stages_of(bad.out);
  EXPECT_EQ(stages["e2e_text"]["status"], "fail");
  EXPECT_NE(stages["e2e_text"]["summary"].get<std::string>().find("422"), std::string::npos)
      << stages["e2e_text"]["summary"];
}

// The shipped e2e suite against a strict engine serving tiny-llama: the requests the engine can
// take match the goldens; the two it cannot judge (a token-id prompt whose text does not
// tokenize back to it, and a logprobs comparison with no logprobs) are skips saying so.
TEST(E2eSuite, PassesAgainstAStrictEngine) {
  test::TempDir dir;
  const std::string file = dir.file("strict.yaml");
  std::ofstream(file) << "platform: strict-engine\nbackend: cpu\ndevice_memory: 8GiB\nservice:\n"
                      << "  start: \"" << H0_FAKE_SERVER << " --port {port} --strict --golden-dir "
                      << test::source_path("golden/e2e/tiny-llama") << " --tokenizer "
                      << test::source_path("configs/models/tiny-llama/tokenizer.json")
                      << "\"\n  health: /health\n";
  const auto r = run_harness("run suites/e2e.yaml --no-db --filter 'tiny-llama/*' --platform " +
                             file + " --json " + dir.file("out.json"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("8 cases: 6 pass, 2 skip"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(test::read_file(dir.file("out.json")));
  for (const auto& c : j["cases"]) {
    if (c["id"] == "tiny-llama/chat_hello") {
      EXPECT_EQ(c["details"]["compared"], "text") << c.dump();
      EXPECT_EQ(c["details"]["dialect"]["name"], "openai");
      EXPECT_NE(c["message"].get<std::string>().find(
                    "the service returned no token ids: compared the text"),
                std::string::npos)
          << c["message"];
    }
  }
}

// A token-id prompt to a text-only engine: sent as its decoded text, which tokenizes back to the
// same ids (Qwen's tokenizer adds no BOS), and judged against the golden; the result says so.
TEST(E2eSuite, ATokenIdPromptGoesToATextOnlyEngineAsText) {
  test::TempDir dir;
  const std::string model = test::source_path("tests/data/models/tiny-qwen2-moe");
  std::ofstream(dir.file("s.yaml"))
      << "suite: s\nchecks:\n  - id: ids\n    kind: e2e_text\n    model: " << model
      << "\n    golden: " << test::source_path("golden/e2e/tiny-qwen2-moe/completion_ids.json")
      << "\n";
  const auto r =
      run_harness("run " + dir.file("s.yaml") + " --no-db --platform " +
                  engine_platform(dir, "tiny-qwen2-moe") + " --json " + dir.file("out.json"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(test::read_file(dir.file("out.json")));
  ASSERT_EQ(j["cases"].size(), 1u);
  const std::string message = j["cases"][0]["message"];
  EXPECT_NE(message.find("the token-id prompt was sent as its decoded text"), std::string::npos)
      << message;
  EXPECT_NE(message.find("the stream ended without data: [DONE]"), std::string::npos) << message;
}

}  // namespace
}  // namespace h0
