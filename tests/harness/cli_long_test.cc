// The long-context suite (suites/long.yaml: each tiny family at 2,040 tokens, one pass and a
// prefill in chunks of 512, against transformers' rows at sampled positions, and the service's
// greedy continuation of the same prompt): every family passes on the cpu, reference and
// opencl-pocl backends; each of the faulty plugin's long-context bugs
// fails it at the position and layer where it starts, while the short suite (suites/model.yaml,
// prompts of 7 and 13 tokens) passes the same faulty plugin: the long suite proves its worth.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "harness/cli_util.h"

namespace h0 {
namespace {

using test::run_harness;

// Case id -> its JSON result, for `suite` on `platform` (optionally filtered).
std::map<std::string, nlohmann::json> run_suite(const test::TempDir& dir, const std::string& suite,
                                                const std::string& platform,
                                                const std::string& filter, int* code) {
  const std::string out = dir.file("out.json");
  const auto r =
      run_harness("run " + suite + " --no-db -q --platform " + platform +
                  (filter.empty() ? "" : " --filter '" + filter + "'") + " --json " + out);
  *code = r.code;
  std::map<std::string, nlohmann::json> cases;
  const auto run = nlohmann::json::parse(test::read_file(out));
  for (const auto& c : run["cases"]) cases[c["id"].get<std::string>()] = c;
  return cases;
}

struct LongBackend {
  const char* platform;
  const char* filter;  // the suite's cases it runs ("" all)
  size_t cases;
};

void PrintTo(const LongBackend& b, std::ostream* os) { *os << b.platform; }

class LongOnBackend : public ::testing::TestWithParam<LongBackend> {};

TEST_P(LongOnBackend, EveryFamilyMatchesTransformersAtEverySampledPosition) {
  const LongBackend& b = GetParam();
  test::TempDir dir;
  int code = -1;
  const auto cases =
      run_suite(dir, "suites/long.yaml", std::string("configs/platforms/") + b.platform + ".yaml",
                b.filter, &code);
  EXPECT_EQ(code, 0);
  ASSERT_EQ(cases.size(), b.cases);
  for (const auto& [id, c] : cases) {
    EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
    if (id.find("/completion_long") != std::string::npos) {  // the service, 2,040 prompt tokens
      EXPECT_NE(c["message"].get<std::string>().find("exact match with the golden"),
                std::string::npos)
          << id << ": " << c["message"];
      continue;
    }
    if (id.find("/prompt_logprobs") != std::string::npos) {  // harness serve's echo logprobs
      EXPECT_GE(c["metrics"]["positions_compared"].get<double>(), 11) << id << c["message"];
      EXPECT_LE(c["metrics"]["max_abs_diff"].get<double>(), 0.05) << id;
      continue;
    }
    const nlohmann::json& d = c["details"];
    // What ran: the whole prompt, its sampled rows, the chunking.
    EXPECT_GE(d["prompt_tokens"].get<int64_t>(),
              id.rfind("tiny-deepseek-v3/", 0) == 0 ? 1016 : 2040)
        << id;
    EXPECT_GE(d["positions"].size(), 12u) << id;
    EXPECT_EQ(d.contains("prefill_chunk"), id.find("long_chunked") != std::string::npos) << id;
    EXPECT_GT(c["metrics"]["probes_compared"].get<double>(), 10) << id;
  }
}

// 12 families and tiny-mistral-w512: long, long_chunked, completion_long, prompt_logprobs on cpu.
// PoCL and the reference backend (the slowest in CI) run the one-pass prefill of each: their
// kernels at 2,040 tokens; the chunked and served cases run the same kernels in smaller pieces,
// checked on cpu.
INSTANTIATE_TEST_SUITE_P(Backends, LongOnBackend,
                         ::testing::Values(LongBackend{"cpu", "", 52},
                                           LongBackend{"reference", "*/long", 13},
                                           LongBackend{"opencl-pocl", "*/long", 13}),
                         [](const ::testing::TestParamInfo<LongBackend>& param_info) {
                           std::string name = param_info.param.platform;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

struct LongFault {
  const char* name;
  const char* options;            // the faulty plugin's
  const char* short_filter;       // the short suite's cases of the families it touches
  std::set<std::string> failing;  // long-suite cases
  const char* where;              // in the message: the first divergence, named
  const char* own_case = "";      // a case whose message must also say...
  const char* own_where = "";     // ...this (the fault's own fixture)
};

void PrintTo(const LongFault& f, std::ostream* os) { *os << f.name << " " << f.options; }

class LongFaults : public ::testing::TestWithParam<LongFault> {};

TEST_P(LongFaults, FailTheLongSuiteWhereTheyStartAndPassTheShortOne) {
  const LongFault& f = GetParam();
  test::TempDir dir;
  const std::string platform = dir.file("faulty.yaml");
  std::ofstream(platform) << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
                          << ", options: " << f.options << "}\ndevice_memory: 8GiB\n";
  int code = -1;
  const auto short_cases = run_suite(dir, "suites/model.yaml", platform, f.short_filter, &code);
  EXPECT_EQ(code, 0);
  ASSERT_FALSE(short_cases.empty());
  for (const auto& [id, c] : short_cases) EXPECT_EQ(c["status"], "pass") << id << c["message"];

  // The executor's cases (the faulty platform has no service).
  const auto long_cases = run_suite(dir, "suites/long.yaml", platform, "*/long*", &code);
  EXPECT_EQ(code, 1);
  ASSERT_EQ(long_cases.size(), 26u);
  for (const auto& [id, c] : long_cases) {
    if (!f.failing.count(id)) {
      EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
      continue;
    }
    EXPECT_EQ(c["status"], "fail") << id;
    const std::string message = c["message"];
    EXPECT_EQ(message.rfind("first divergence at model.", 0), 0u) << id << ": " << message;
    EXPECT_NE(message.find(f.where), std::string::npos) << id << ": " << message;
    if (id == f.own_case) {
      EXPECT_NE(message.find(f.own_where), std::string::npos) << id << ": " << message;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, LongFaults,
    ::testing::Values(
        // The unscaled table from position 256 on: the RoPE-scaled families, at layer 0's
        // attention, from the first position past the original length.
        LongFault{
            "scaling_lost_past",
            "{op: rope, fault: scaling_lost_past}",
            "tiny-llama/logits*f32*:tiny-deepseek-v3/logits*f32*:tiny-gpt-oss/logits*f32*",
            {"tiny-llama/long", "tiny-llama/long_chunked", "tiny-deepseek-v3/long",
             "tiny-deepseek-v3/long_chunked", "tiny-gpt-oss/long", "tiny-gpt-oss/long_chunked"},
            "model.layers.0.self_attn (layer model.layers.0, sublayer self_attn), first at "
            "position 256 of "},
        // The block table wraps after 64 entries (1,024 tokens of 16-token pages): every family
        // on paged attention with a context past it (tiny-deepseek-v3's MLA keeps 1,016 tokens,
        // tiny-glm4-moe-lite's 2,040), at the first full-attention layer (the hybrids' layer 1),
        // from position 1,024.
        LongFault{"block_wrap",
                  "{op: paged_attention, fault: block_wrap, blocks: 64}",
                  "tiny-llama/logits*f32*:tiny-mistral/logits*f32*:tiny-qwen3-next/logits*",
                  {"tiny-llama/long",         "tiny-llama/long_chunked",
                   "tiny-llava/long",         "tiny-llava/long_chunked",
                   "tiny-qwen3-moe/long",     "tiny-qwen3-moe/long_chunked",
                   "tiny-gemma3/long",        "tiny-gemma3/long_chunked",
                   "tiny-mistral/long",       "tiny-mistral/long_chunked",
                   "tiny-mistral-w512/long",  "tiny-mistral-w512/long_chunked",
                   "tiny-gpt-oss/long",       "tiny-gpt-oss/long_chunked",
                   "tiny-qwen2-moe/long",     "tiny-qwen2-moe/long_chunked",
                   "tiny-glm4-moe/long",      "tiny-glm4-moe/long_chunked",
                   "tiny-glm4-moe-lite/long", "tiny-glm4-moe-lite/long_chunked",
                   "tiny-qwen3-next/long",    "tiny-qwen3-next/long_chunked",
                   "tiny-qwen3-5/long",       "tiny-qwen3-5/long_chunked"},
                  "sublayer self_attn), first at position 1024 of 2040"},
        // Linear-attention state dropped at each prefill chunk: only the chunked runs of the
        // hybrid families, at layer 0's linear attention, from the second chunk (position 512).
        LongFault{"prefill_drops_state",
                  "{op: \"*\", fault: prefill_drops_state}",
                  "tiny-qwen3-next/logits*:tiny-qwen3-5/logits*f32*",
                  {"tiny-qwen3-next/long_chunked", "tiny-qwen3-5/long_chunked"},
                  "model.layers.0.linear_attn (layer model.layers.0, sublayer linear_attn), first "
                  "at position 512 of 2040"},
        // A window one token wider: the short suite runs tiny-mistral-w512 (window 512) at 13
        // tokens and passes; the long one names position 512, its window's edge. The families
        // with a window of 4 fail from position 4 (their short prompts would too).
        LongFault{"window_off_by_one",
                  "{op: paged_attention, fault: window_off_by_one}",
                  "tiny-mistral-w512/*",
                  {"tiny-mistral-w512/long", "tiny-mistral-w512/long_chunked", "tiny-mistral/long",
                   "tiny-mistral/long_chunked", "tiny-gemma3/long", "tiny-gemma3/long_chunked",
                   "tiny-gpt-oss/long", "tiny-gpt-oss/long_chunked"},
                  "(layer model.layers.0, sublayer self_attn), first at position ",
                  "tiny-mistral-w512/long",
                  "first at position 512 of 2040"}),
    [](const ::testing::TestParamInfo<LongFault>& param_info) {
      return std::string(param_info.param.name);
    });

// The service side: harness serve on the faulty plugin with RoPE scaling lost from position 256.
// The tiny model's 8 greedy tokens survive it; the prompt's own logprobs (echo) at the sampled
// positions do not, and the first one off is named with both values.
TEST(LongService, PromptLogprobsCatchALongFaultTheGreedyTokensMiss) {
  test::TempDir dir;
  const std::string platform = dir.file("faulty-served.yaml");
  std::ofstream(platform) << "platform: faulty-served\nbackend: {lib: " << H0_FAULTY_PLUGIN
                          << ", options: {op: rope, fault: scaling_lost_past}}\n"
                          << "device_memory: 8GiB\nservice:\n"
                          << "  start: \"{harness} serve --model {model} --platform {platform} "
                             "--port {port}\"\n"
                          << "  url: \"http://127.0.0.1:{port}\"\n  health: /health\n"
                          << "  startup_timeout: 120s\n";
  int code = -1;
  const auto cases = run_suite(dir, "suites/long.yaml", platform,
                               "tiny-llama/completion_long:tiny-llama/prompt_logprobs", &code);
  EXPECT_EQ(code, 1);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases.at("tiny-llama/completion_long")["status"], "pass");
  const nlohmann::json& p = cases.at("tiny-llama/prompt_logprobs");
  EXPECT_EQ(p["status"], "fail");
  EXPECT_NE(p["message"].get<std::string>().find(
                "prompt logprobs at 13 sampled positions of a 2,040-token prompt: first beyond "
                "0.05 at position 257: engine "),
            std::string::npos)
      << p["message"];
}

}  // namespace
}  // namespace h0
